"""The model answers and tool results a check serves: all from the recording, none live.

`ServedIO` is a strict `IOReplayer` that says what differed in a check's terms (a
`Difference`: tick, node, the item's excerpt) and compares the whole model request: the
messages, and also the config (the tools offered, the model, its parameters), so a changed
tool list is found at the call that offered it. A request the recording does not hold is a
divergence: strict replay raises before any live call could be made.

With `tools_live` the tools run for real (the call, its name and arguments are still checked
against the recording) and only the model is served: for a user who changed a tool and wants
to see whether the recorded answers still hold.

A served answer is handed over when the recorded one arrived, not at once: each recorded call
keeps the tick it landed in (`LANDED`), and the answer is held until the check has run and
compared that tick (`release`). Two calls made in parallel whose answers landed in separate
ticks land in those ticks again. (A recording made before calls kept it: served at once.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..memory.checkpoint.io import LANDED, IOReplayer, tool_request
from ..memory.checkpoint.model import jsonable
from ..memory.checkpoint.store import CheckpointStore, IORecord
from .compare import Difference, Sides, config_difference, excerpt, first_split, message_lines

if TYPE_CHECKING:
    from ..messages import Message
    from ..model import ModelConfig


class ServedIO(IOReplayer):
    def __init__(self, store: CheckpointStore, run_id: str, branch: str, *, tools_live: bool = False):
        super().__init__(store, run_id, strict=True, source_branch=branch)
        self.tools_live = tools_live
        self.tools_run = 0  # tool calls run for real (`tools_live`)
        self.first: Difference | None = None  # the first divergence met (a retried call may meet more)
        self.sides = Sides()
        self._asked: dict[str, tuple[str, list]] = {}  # node -> (recorded list, its messages known equal to it)
        self.released = -1  # answers that landed in this tick or before are handed over
        self._held: list[tuple[int, asyncio.Future]] = []  # (tick landed, its waiter): answers held

    async def landing(self, record: IORecord) -> None:
        """Hold the served answer until its tick is released."""
        landed = record.request.get(LANDED)
        if landed is None or landed <= self.released:
            return
        due = asyncio.get_running_loop().create_future()
        self._held.append((landed, due))
        await due

    def release(self, tick: int) -> int:
        """Hand over the answers that landed by the end of `tick` (the check ran and compared it); returns
        how many were waiting."""
        self.released = max(self.released, tick)
        due = [waiter for landed, waiter in self._held if landed <= tick]
        self._held = [(landed, waiter) for landed, waiter in self._held if landed > tick]
        for waiter in due:
            if not waiter.done():
                waiter.set_result(None)
        return len(due)

    @property
    def tick(self) -> int:
        """The tick the runner is in (or has just finished): the one the call's events carry."""
        return self._checkpoints.runner.tick_count if self._checkpoints is not None else 0

    def _diverge(self, problem: Any) -> None:
        if self.first is None:
            self.first = problem
        super()._diverge(problem)

    def model_problem(self, record: IORecord | None, node: str, round: int, attempt: int,
                      messages: list[Message], config: ModelConfig) -> Difference | None:
        call = f"round {round}" + (f" attempt {attempt}" if attempt else "")
        if record is None:
            return Difference(self.tick, node, "model request", f"{call} is not in the recording (the run asks "
                              "for a model call the recorded run never made)",
                              tuple(message_lines([jsonable(m) for m in messages])))
        found = config_difference(record.request.get("config") or {}, config.model_dump(mode="json"), self.sides)
        if found is not None:  # first: the tools offered are also described in the prompt
            summary, detail = found
            return Difference(self.tick, node, "model request", f"{call}, {summary}", detail)
        ref = record.request["messages"]
        done = self._matched(node, ref[1], ref[2], messages)
        if self.store.read_list(ref[1], ref[2], done) != [jsonable(m) for m in messages[done:]]:
            recorded, actual = self.store.read_list(ref[1], ref[2]), [jsonable(m) for m in messages]
            path = first_split(recorded, actual)[0]
            return Difference(self.tick, node, "model request", f"{call}, messages{path}",
                              excerpt(recorded, actual, self.sides, prefix="messages"))
        self._asked[node] = (ref[1], list(messages))
        return None

    def _matched(self, node: str, list_id: str, length: int, messages: list[Message]) -> int:
        """How many of `messages` are known equal to the recorded list already: the node's last request
        matched it, and this one begins with the same messages (a history only grows between rounds)."""
        known_id, known = self._asked.get(node, (None, []))
        if known_id != list_id or len(known) > min(length, len(messages)):
            return 0
        return len(known) if all(a is b or a == b for a, b in zip(known, messages, strict=False)) else 0

    def tool_problem(self, record: IORecord | None, node: str, round: int, index: int, name: str,
                     arguments: dict) -> Difference | None:
        actual = {"name": name, "arguments": jsonable(arguments)}
        call = f"round {round} call {index}"
        if record is None:
            return Difference(self.tick, node, "tool call", f"{call} {name} is not in the recording (the run calls "
                              "a tool the recorded run never called here)", (f"+ now {name}({actual['arguments']})",))
        recorded = tool_request(record)
        if recorded != actual:
            return Difference(self.tick, node, "tool call", f"{call}, recorded {recorded['name']}, now {name}"
                              if recorded["name"] != name else f"{call} {name}, its arguments",
                              excerpt(recorded, actual, self.sides))
        return None

    async def tool_call(self, node: str, round: int, index: int, name: str, arguments: dict,
                        call: Callable[[], Awaitable[str]]) -> str:
        if not self.tools_live:
            return await super().tool_call(node, round, index, name, arguments, call)
        record = await self._lookup("tool", node, round, index)
        problem = self.tool_problem(record, node, round, index, name, arguments)
        if problem is not None:
            self._diverge(problem)  # strict: raises
        self.tools_run += 1
        result = await call()
        await self.landing(record)
        return result


class AgentIO:
    """A swarm agent's calls, served from the host's recording under `@agent/path` (what the host's
    views call the agent's nodes); a call the recording does not hold is a divergence."""

    def __init__(self, served: ServedIO, agent_id: str):
        self.served = served
        self.prefix = f"@{agent_id}/"

    async def model_call(self, node: str, *args: Any) -> Any:
        return await self.served.model_call(self.prefix + node, *args)

    async def tool_call(self, node: str, *args: Any) -> Any:
        return await self.served.tool_call(self.prefix + node, *args)


__all__ = ["AgentIO", "ServedIO"]
