"""What-ifs as the studio shows them: the recorded call a view names, and a tool call read from its
events and recorded I/O (the marks a what-if leaves on the timeline: `runtime.debug.whatif.marked`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runtime.debug.whatif import branch_record
from runtime.engine.events import EventType
from runtime.memory.checkpoint import CheckpointStore
from runtime.memory.checkpoint.whatif_marks import CallRef

from .model_calls import ModelCall

TOOL_EVENTS = frozenset({EventType.TOOL_CALL_STARTED, EventType.TOOL_CALL_COMPLETED, EventType.TOOL_CALL_FAILED})


def model_call_ref(call: ModelCall) -> CallRef | None:
    """The recorded call a model-call view shows (None: it names no recorded call: no round, or events
    that carry no branch)."""
    if call.run_id is None or call.round is None or call.branch is None:
        return None
    return CallRef(call.run_id, call.branch, "model", call.node, call.round, 1 if call.empty_retry else 0)


@dataclass(frozen=True)
class ToolCall:
    """One recorded tool call: what was asked and what the tool returned (or its error)."""

    ref: CallRef
    tick: int
    name: str
    arguments: Any
    result: str | None
    error: str | None

    @property
    def title(self) -> str:
        return f"{self.name} ({self.ref.node.rpartition('/')[2]} round {self.ref.round}, tick {self.tick})"


def call_branches(lineage: Any, branch: str | None) -> list[str]:
    """Where a call seen on `branch` of a frame's `lineage` (`studio.timeline.Lineage`) may be recorded: its
    branch, then the branches it forked from (a fork served a recorded answer from there without
    recording it again)."""
    limits = list(lineage.limits)
    return limits[limits.index(branch):] if branch in limits else limits


def tool_call_ref(events: Sequence[Any], chosen: Any) -> tuple[CallRef, int] | None:
    """The recorded tool call a `tool.call.*` event of `events` (stamped with their branch) belongs to,
    and the tick it was made at; None when it is not a tool call's event or names no round."""
    if chosen.type not in TOOL_EVENTS or chosen.event.run_id is None:
        return None
    call_id = chosen.event.payload.get("call_id")
    started = chosen if chosen.type == EventType.TOOL_CALL_STARTED else next(
        (e for e in reversed(events) if e.type == EventType.TOOL_CALL_STARTED and e.node == chosen.node
         and e.branch == chosen.branch and e.event.payload.get("call_id") == call_id and e.event.seq < chosen.event.seq),
        None)
    if started is None or started.event.payload.get("round") is None:
        return None
    payload = started.event.payload
    return (CallRef(chosen.event.run_id, started.branch, "tool", started.node, int(payload["round"]),
                    int(payload.get("index") or 0)), started.event.tick)


def recorded_tool_call(ref: CallRef, tick: int, request: dict[str, Any], response: Any,
                       error: dict[str, Any] | None) -> ToolCall:
    """A tool call as its record holds it (a store's `IORecord`, or the fields a debug server sent of one)."""
    message = error.get("message") if error is not None else None
    return ToolCall(ref, tick, str(request.get("name")), request.get("arguments"),
                    response if message is None else None, message)


def tool_call(events: Sequence[Any], chosen: Any, store: CheckpointStore, branches: Sequence[str]) -> ToolCall | None:
    """The tool call a `tool.call.*` event of `events` belongs to (`tool_call_ref`), with its recorded
    I/O: the record of the first of `branches` (the event's lineage, its own branch first) that holds it.
    None when it is not a tool call's event or the run recorded no such call."""
    found = tool_call_ref(events, chosen)
    if found is None:
        return None
    ref, tick = found
    record = branch_record(store, ref.run_id, "tool", ref.node, ref.round, ref.index, branches)
    return None if record is None else recorded_tool_call(ref, tick, record.request, record.response, record.error)


__all__ = ["TOOL_EVENTS", "ToolCall", "call_branches", "model_call_ref", "recorded_tool_call", "tool_call", "tool_call_ref"]
