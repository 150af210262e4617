"""`ApprovalManager`: tool calls waiting for a human yes or no.

A guard that answers PENDING suspends the call; the manager holds the request until
someone approves or denies it, then tells its listeners (that is how the runner is woken)
and any task awaiting `wait()`. Requests are plain data so checkpoints can carry them: the
node that asked keeps the requests it waits for as its resume data (`dump`), and a run
restored anywhere (another worker, a web handler hours later) puts them back (`adopt`) under
the same ids, so a decision given there reaches the call that asked, which runs exactly once.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from runtime.engine.events import EventType, RuntimeEventBus

log = logging.getLogger(__name__)


class ApprovalStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"


class ApprovalRequest(BaseModel):
    """One call awaiting a decision. `reason` says why it was asked, `decision_reason` why it was answered."""

    model_config = ConfigDict(frozen=True)

    id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    call_id: str | None = None
    node: str | None = None
    reason: str | None = None
    status: ApprovalStatus = ApprovalStatus.PENDING
    decision_reason: str | None = None

    @property
    def resolved(self) -> bool:
        return self.status is not ApprovalStatus.PENDING


class ApprovalError(Exception):
    """An approval could not be found or resolved."""


class UnknownApprovalError(ApprovalError, KeyError):
    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


ApprovalListener = Callable[[ApprovalRequest], Any]


class ApprovalManager:
    """The table of approval requests; resolutions notify listeners, waiters and the event bus."""

    def __init__(self, event_bus: RuntimeEventBus | None = None):
        self._bus = event_bus
        self._requests: dict[str, ApprovalRequest] = {}
        self._resolved_events: dict[str, asyncio.Event] = {}
        self._listeners: list[ApprovalListener] = []

    def request(self, tool: str, arguments: dict[str, Any] | None = None, *, call_id: str | None = None,
                node: str | None = None, reason: str | None = None) -> ApprovalRequest:
        approval_id = secrets.token_hex(4)
        while approval_id in self._requests:
            approval_id = secrets.token_hex(4)
        item = ApprovalRequest(id=approval_id, tool=tool, arguments=dict(arguments or {}),
                               call_id=call_id, node=node, reason=reason)
        self._requests[approval_id] = item
        self._announce(EventType.APPROVAL_REQUESTED, item, item.reason)
        return item

    def approve(self, approval_id: str, reason: str | None = None, *,
                arguments: dict[str, Any] | None = None) -> ApprovalRequest:
        """Approve; with `arguments`, the call runs with these instead (a human corrected them)."""
        return self._resolve(approval_id, ApprovalStatus.APPROVED, reason, arguments)

    def deny(self, approval_id: str, reason: str | None = None) -> ApprovalRequest:
        return self._resolve(approval_id, ApprovalStatus.DENIED, reason)

    def get(self, approval_id: str) -> ApprovalRequest:
        try:
            return self._requests[approval_id]
        except KeyError:
            raise UnknownApprovalError(f"unknown approval '{approval_id}'") from None

    def pending(self) -> list[ApprovalRequest]:
        return [item for item in self._requests.values() if not item.resolved]

    async def wait(self, approval_id: str) -> ApprovalRequest:
        """Return the request once it is approved or denied."""
        if not self.get(approval_id).resolved:
            await self._resolved_events.setdefault(approval_id, asyncio.Event()).wait()
        return self.get(approval_id)

    def on_change(self, callback: ApprovalListener) -> Callable[[], None]:
        """Call `callback(request)` on every new request and every resolution; returns an unsubscribe."""
        self._listeners.append(callback)

        def unsubscribe() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)
        return unsubscribe

    def dump(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        """The requests `ids` names (those known here), as JSON data a checkpoint keeps (see `adopt`)."""
        return [self._requests[approval_id].model_dump(mode="json") for approval_id in ids
                if approval_id in self._requests]

    def adopt(self, dumped: Iterable[Mapping[str, Any]]) -> list[str]:
        """Take back requests a checkpoint carried (`dump`), with their ids and decisions; returns
        their ids. Nothing is announced on the bus (nothing new happened); listeners are told, so
        a view lists them and a decision reaches the run they suspend."""
        items = [ApprovalRequest.model_validate(data) for data in dumped]
        for item in items:
            self._requests[item.id] = item
            if item.resolved:
                self._wake(item.id)
            self._tell(item)
        return [item.id for item in items]

    def snapshot(self) -> dict[str, Any]:
        return {"requests": self.dump(self._requests)}

    def restore(self, data: dict[str, Any]) -> None:
        """Replace every request with those of a `snapshot()`."""
        self._requests = {}
        self.adopt(data.get("requests", ()))

    def _resolve(self, approval_id: str, status: ApprovalStatus, reason: str | None,
                 arguments: dict[str, Any] | None = None) -> ApprovalRequest:
        item = self.get(approval_id)
        if item.resolved:
            raise ApprovalError(f"approval '{approval_id}' for tool '{item.tool}' is already {item.status}")
        update: dict[str, Any] = {"status": status, "decision_reason": reason}
        if arguments is not None:
            update["arguments"] = dict(arguments)
        item = item.model_copy(update=update)
        self._requests[approval_id] = item
        self._wake(approval_id)
        self._announce(EventType.APPROVAL_RESOLVED, item, reason)
        return item

    def _wake(self, approval_id: str) -> None:
        event = self._resolved_events.pop(approval_id, None)
        if event is not None:
            event.set()

    def _announce(self, event_type: EventType, item: ApprovalRequest, reason: str | None) -> None:
        if self._bus is not None:
            self._bus.publish(event_type, {"id": item.id, "tool": item.tool, "arguments": item.arguments,
                                           "decision": str(item.status), "reason": reason}, node=item.node)
        self._tell(item)

    def _tell(self, item: ApprovalRequest) -> None:
        for listener in tuple(self._listeners):
            try:
                listener(item)
            except Exception:  # a broken listener must not lose the decision
                log.exception("approval listener %r failed", listener)


__all__ = ["ApprovalError", "ApprovalListener", "ApprovalManager", "ApprovalRequest", "ApprovalStatus",
           "UnknownApprovalError"]
