"""What if the model (or a tool) had answered otherwise: a fork from just before a recorded call,
with its answer edited.

The checkpoint just before a call is the last one saved before its answer landed: each recorded
call keeps the tick it landed after (`LANDED`; for a run recorded before calls kept it, the tick
whose events started the call). There the calling node is still RUNNING, its work in flight; a
fork from it starts that work again, so the call is made again, and the fork's replayer answers
it with the edited answer (recorded on the fork, as that call's answer there). Every other call
is served from the recording where its request still matches and made live where it does not:
offline as far as the recording covers the fork, live after that.

The fork is a branch of its own (`whatif-1`, ...), and the edit is kept as a what-if mark of the
run (`whatif_marks`), which the timeline and a run file show.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..engine.events import EventType
from ..memory.checkpoint import CheckpointError, CheckpointInfo, CheckpointStore, IORecord, IOReplayer
from ..memory.checkpoint.io import LANDED
from ..memory.checkpoint.lineage import lineage
from ..memory.checkpoint.model import jsonable
from ..memory.checkpoint.whatif_marks import FORK, CallRef, Mark, add_mark
from ..messages import Message, ai
from ..model import ModelResponse
from ..tools import Tool

if TYPE_CHECKING:
    from ..engine.runner import ReactiveRunner
    from ..memory.checkpoint.runner_checkpoints import RunnerCheckpoints
    from ..model import ModelConfig

PREFIX = "whatif"  # a what-if fork's branches: whatif-1, whatif-2, ...


def recorded_call(store: CheckpointStore, call: CallRef) -> IORecord:
    """The record of `call` (its own branch's, else that of the branch it forked from); `CheckpointError`
    naming the call when the run holds none."""
    record = store.get_io(call.run_id, call.kind, call.node, call.round, call.index, call.branch)
    if record is None:
        raise CheckpointError(f"run {call.run_id} holds no recorded {call} (branch {call.branch})")
    return record


def branch_record(store: CheckpointStore, run_id: str, kind: str, node: str, round: int, index: int,
                  branches: Sequence[str]) -> IORecord | None:
    """The record of a call as a view on a branch sees it: that of the first of `branches` (the view's
    lineage, the call's own branch first) recorded on that very branch; None when none holds it."""
    for branch in branches:
        record = store.get_io(run_id, kind, node, round, index, branch)
        if record is not None and record.branch == branch:
            return record
    return None


def recorded_answer(record: IORecord) -> Any:
    """What a recorded call answered, as JSON: a model response, a tool's result text, or {"error": ...}."""
    return record.response if record.error is None else {"error": record.error.get("message")}


def landed_tick(store: CheckpointStore, call: CallRef, record: IORecord,
                path: list[CheckpointInfo] | None = None) -> int:
    """The tick after which the call's answer landed; for a run recorded before calls kept it, the
    tick whose events started the call (its answer landed no earlier). `path`: the lineage of the
    call's branch, when known."""
    landed = record.request.get(LANDED)
    if landed is not None:
        return int(landed)
    path = path if path is not None else lineage(store, call.run_id, call.branch)
    branch_at = {info.tick: info.branch for info in path}
    for branch, event in store.events(call.run_id):
        if event.node != call.node or branch_at.get(event.tick) != branch:
            continue
        payload = event.payload
        if call.kind == "model" and event.type == EventType.REPLY_STARTED and payload.get("round") == call.round:
            return event.tick
        if (call.kind == "tool" and event.type == EventType.TOOL_CALL_STARTED and payload.get("index") == call.index
                and payload.get("round", call.round) == call.round and payload.get("tool") == record.request.get("name")
                and jsonable(payload.get("arguments")) == record.request.get("arguments")):
            return event.tick
    raise CheckpointError(f"run {call.run_id}: no event tells when its {call} was made")


def edited_model_answer(answer: Any, record: IORecord) -> ModelResponse:
    """`answer` (a `ModelResponse`, a `Message`, a text, or either as JSON) as the model's response;
    `ValueError` in one line when it is none of them."""
    if isinstance(answer, ModelResponse):
        return answer
    model = (record.response or {}).get("model") if isinstance(record.response, dict) else None
    try:
        if isinstance(answer, dict) and "message" in answer:
            return ModelResponse.model_validate({"model": model or "edited", **answer})
        message = answer if isinstance(answer, Message) else ai(answer) if isinstance(answer, str) else \
            Message.model_validate(answer)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "it"
        raise ValueError(f"the edited answer is not a model answer: {where}: {error['msg']}") from None
    return ModelResponse(message=message, model=model or "edited",
                         finish_reason="tool_calls" if message.tool_calls else "stop")


class EditedAnswer(IOReplayer):
    """The recorded I/O of the branch forked from, with one call's answer replaced.

    The first time the edited call is made, its edited answer is served and recorded on the fork
    (a model keeping a position of its own is put where the recorded call left it); every other
    call is served from the recording while its request matches, and made live (and recorded)
    once it does not."""

    def __init__(self, store: CheckpointStore, call: CallRef, record: IORecord, answer: Any):
        super().__init__(store, call.run_id, strict=False, source_branch=call.branch)
        self.call, self.record = call, record
        self.answer = edited_model_answer(answer, record) if call.kind == "model" else Tool.format_result(answer)
        self.served = False  # the edited answer was given

    def _edited(self, kind: str, node: str, round: int, index: int) -> bool:
        call = self.call
        if self.served or (kind, node, round, index) != (call.kind, call.node, call.round, call.index):
            return False
        self.served = True
        return True

    async def model_call(self, node: str, round: int, attempt: int, messages: list[Message], config: ModelConfig,
                         call: Callable[[], Awaitable[ModelResponse]]) -> ModelResponse:
        if not self._edited("model", node, round, attempt):
            return await super().model_call(node, round, attempt, messages, config, call)

        async def edited() -> ModelResponse:
            self.position_after(self.record, node)
            return self.answer

        return await self.live.model_call(node, round, attempt, messages, config, edited)

    async def tool_call(self, node: str, round: int, index: int, name: str, arguments: dict,
                        call: Callable[[], Awaitable[str]]) -> str:
        if not self._edited("tool", node, round, index):
            return await super().tool_call(node, round, index, name, arguments, call)

        async def edited() -> str:
            return self.answer

        return await self.live.tool_call(node, round, index, name, arguments, edited)


class WhatIf:
    """A fork from just before a recorded call, with its answer edited, checked before anything changes:
    the call is recorded, the checkpoint before it found, the edited answer valid."""

    def __init__(self, store: CheckpointStore, call: CallRef, answer: Any):
        self.store, self.call = store, call
        self.record = recorded_call(store, call)
        path = lineage(store, call.run_id, call.branch)
        landed = landed_tick(store, call, self.record, path)
        self.before = [info for info in path if info.tick <= landed][-1]
        self.replayer = EditedAnswer(store, call, self.record, answer)

    def fork(self, checkpoints: RunnerCheckpoints) -> str:
        """Fork `checkpoints`' runner from the checkpoint before the call and mark the fork; returns its
        branch. The caller installs `replayer` as the runner's recorder (`fork_with_answer` does)."""
        branch = checkpoints.fork(self.before.id, prefix=PREFIX)
        answer = self.replayer.answer
        add_mark(self.store, Mark(FORK, self.call, self.before.tick, recorded_answer(self.record),
                                  answer.model_dump(mode="json") if isinstance(answer, ModelResponse) else answer,
                                  branch=branch))
        return branch


def fork_with_answer(runner: ReactiveRunner, call: CallRef, answer: Any) -> str:
    """Fork `runner` (recording into the store that holds `call`) from just before the recorded call,
    serving `answer` in place of the recorded one; returns the fork's branch. Run it on as any
    restored runner (`runner.run()`, `step()`)."""
    checkpoints = runner.checkpoints
    if checkpoints is None:
        raise CheckpointError("this runner has no checkpointer: pass ReactiveRunner(..., checkpointer=store)")
    what_if = WhatIf(checkpoints.store, call, answer)
    branch = what_if.fork(checkpoints)
    what_if.replayer.attach(checkpoints)
    runner.context.io_recorder = what_if.replayer
    return branch


__all__ = ["PREFIX", "EditedAnswer", "WhatIf", "branch_record", "edited_model_answer", "fork_with_answer", "landed_tick",
           "recorded_answer", "recorded_call"]
