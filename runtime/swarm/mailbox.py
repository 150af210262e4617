"""Messages between a swarm's agents, and the mailbox each agent receives them in."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class SwarmMessage:
    """One delivered copy of a message; copies of one send share `id`."""

    id: int
    sender: str
    recipient: str
    content: Any
    group: str | None = None
    topic: str | None = None

    @property
    def channel(self) -> dict[str, str]:
        """How it was addressed: {"group": g}, {"topic": t} or {} (directly)."""
        if self.group is not None:
            return {"group": self.group}
        return {"topic": self.topic} if self.topic is not None else {}


class Mailbox:
    """Messages waiting for one agent, in arrival order; `take()` selects by sender.

    A message handed to a waiting `take()` is in transit until that `take()` returns (its task
    runs again only once the loop gets to it): `messages()` counts it as still waiting, so a
    checkpoint taken meanwhile loses no message.
    """

    def __init__(self, messages: list[SwarmMessage] = ()) -> None:
        self._messages: deque[SwarmMessage] = deque(messages)
        self._waiters: list[tuple[str | None, asyncio.Future[SwarmMessage]]] = []
        self._handed: list[SwarmMessage] = []  # in transit to a take() that has not returned yet

    @property
    def size(self) -> int:
        return len(self._messages)

    def holds_from(self, sender: str) -> bool:
        return any(message.sender == sender for message in self._messages)

    def messages(self) -> list[SwarmMessage]:
        """Every message not yet received: those in transit to a `take()` first, then the queue."""
        return [*self._handed, *self._messages]

    def put(self, message: SwarmMessage, front: bool = False) -> None:
        """Hand the message to the first waiter that wants it, else queue it."""
        for i, (sender, future) in enumerate(self._waiters):
            if not future.done() and sender in (None, message.sender):
                del self._waiters[i]
                future.set_result(message)
                self._handed.append(message)
                return
        if front:
            self._messages.appendleft(message)
        else:
            self._messages.append(message)

    def pop(self, sender: str | None) -> SwarmMessage | None:
        for i, message in enumerate(self._messages):
            if sender in (None, message.sender):
                del self._messages[i]
                return message
        return None

    async def take(self, sender: str | None, timeout: float | None) -> SwarmMessage:
        """The first message from `sender` (any sender if None); raises TimeoutError."""
        message = self.pop(sender)
        if message is not None:
            return message
        waiter = (sender, asyncio.get_running_loop().create_future())
        self._waiters.append(waiter)
        future = waiter[1]
        try:
            async with asyncio.timeout(timeout):
                await future
        except BaseException:
            given = self._received(future)
            if given is not None:
                self.put(given, front=True)  # delivered just as we gave up: not lost
            raise
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
        return self._received(future)

    def _received(self, future: asyncio.Future[SwarmMessage]) -> SwarmMessage | None:
        """The message handed to `future`, no longer in transit (None: none was handed)."""
        if not future.done() or future.cancelled() or future.exception() is not None:
            return None
        message = future.result()
        self._handed = [m for m in self._handed if m is not message]
        return message

    def sender_gone(self, sender: str, error: Exception) -> None:
        """Fail the waits for a sender that will never write again."""
        for waiter in [w for w in self._waiters if w[0] == sender]:
            self._waiters.remove(waiter)
            if not waiter[1].done():
                waiter[1].set_exception(error)


def dump_messages(messages: list[SwarmMessage]) -> list[dict[str, Any]]:
    """Messages as a checkpoint keeps them (their content as it was sent)."""
    return [asdict(message) for message in messages]


def load_messages(saved: list[dict[str, Any]]) -> list[SwarmMessage]:
    return [SwarmMessage(**message) for message in saved]


__all__ = ["Mailbox", "SwarmMessage", "dump_messages", "load_messages"]
