"""`diff_runs`: two recorded runs (or two branches of one) compared tick by tick.

Each side is a branch's lineage (its checkpoints, into the branch it forked from). At every
tick either side reached, the pictures at the tick's end are compared as `check` compares
them (statuses, then state keys, ids aside), and so is the I/O made at that tick (what the
events stamped with it name): each model call's request and answer (read from the recorded
I/O), each tool call's name, arguments and result. Times and ids never count. The first
difference is the first divergence; the rest is listed tick by tick.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..engine.events import EventType
from ..memory.checkpoint import Checkpoint, CheckpointStore
from ..memory.checkpoint.io import recorded_messages
from .compare import Difference, Pictures, Sides, config_difference, excerpt, first_split
from .rerun import lineage


@dataclass
class Side:
    """One run (or branch) to compare: where it is and what to call it."""

    store: CheckpointStore
    run_id: str
    branch: str = "main"
    label: str = "A"


@dataclass
class DiffReport:
    a: Side
    b: Side
    ticks: dict[int, list[Difference]] = field(default_factory=dict)  # tick -> what differed then

    @property
    def same(self) -> bool:
        return not self.ticks

    @property
    def first(self) -> Difference | None:
        return self.ticks[min(self.ticks)][0] if self.ticks else None


@dataclass(frozen=True)
class _Call:
    """A model or tool call made at a tick, as far as the recording tells."""

    kind: str  # "model" | "tool"
    node: str
    key: Any  # round (model) or call index (tool)
    request: Any  # a model call's messages and config; a tool call's name, arguments and result
    answer: Any  # a model call's answer (its message, or its error)


class _Run:
    """A side's pictures and calls by tick."""

    def __init__(self, side: Side):
        self.side = side
        store = side.store
        path = lineage(store, side.run_id, side.branch)
        self.last: dict[int, Any] = {}
        for info in path:  # the picture at a tick's end: its last checkpoint on the lineage
            self.last[info.tick] = info
        self.branch_at = {tick: info.branch for tick, info in self.last.items()}
        self.calls: dict[int, list[_Call]] = {}
        tools: dict[tuple[str, Any], dict[str, Any]] = {}
        for branch, event in store.events(side.run_id):
            if self.branch_at.get(event.tick) != branch:
                continue
            payload = event.payload
            if event.type == EventType.REPLY_STARTED:
                self.calls.setdefault(event.tick, []).append(self._model(event.node, payload.get("round")))
            elif event.type == EventType.TOOL_CALL_STARTED:
                call = {"name": payload.get("tool"), "arguments": payload.get("arguments")}
                tools[(event.node, payload.get("call_id"))] = call
                self.calls.setdefault(event.tick, []).append(_Call("tool", event.node, payload.get("index"), call, None))
            elif event.type in (EventType.TOOL_CALL_COMPLETED, EventType.TOOL_CALL_FAILED):
                call = tools.get((event.node, payload.get("call_id")))
                if call is not None:  # the answer lands in the call listed at its start
                    call["result"] = payload.get("observation", payload.get("error"))

    def _model(self, node: str, round: Any) -> _Call:
        store, run_id, branch = self.side.store, self.side.run_id, self.side.branch
        attempts = []
        while (record := store.get_io(run_id, "model", node, round, len(attempts), branch)) is not None:
            attempts.append(record)
        if not attempts:
            return _Call("model", node, round, None, None)
        messages = recorded_messages(store, attempts[0])
        last = attempts[-1]
        answer = last.response.get("message") if isinstance(last.response, dict) else None
        return _Call("model", node, round, {"messages": messages, "config": attempts[0].request.get("config")},
                     answer if last.error is None else {"error": last.error.get("message")})

    def picture(self, tick: int) -> Checkpoint | None:
        info = self.last.get(tick)
        return None if info is None else self.side.store.get(info.id, read_lists=False)


def diff_runs(a: Side, b: Side) -> DiffReport:
    """What differs, tick by tick: a status or state key that differs is listed at the tick where it
    starts to (or changes again), not again at every tick it goes on differing."""
    report = DiffReport(a, b)
    runs = _Run(a), _Run(b)
    sides = Sides(a.label, b.label)
    pictures = Pictures(sides, a.store.read_list, b.store.read_list)
    for tick in sorted({*runs[0].last, *runs[1].last}):
        if tick not in runs[0].last or tick not in runs[1].last:
            ended, going = (0, 1) if tick not in runs[0].last else (1, 0)
            last = max(runs[ended].last)
            report.ticks[tick] = [Difference(tick, None, "length", f"{[a.label, b.label][ended]} ended at tick {last} "
                                             f"({runs[ended].last[last].status}), {[a.label, b.label][going]} goes on")]
            break
        found = [*_calls(tick, runs[0].calls.get(tick, []), runs[1].calls.get(tick, []), sides),
                 *pictures.differences(tick, runs[0].picture(tick), runs[1].picture(tick))]
        if found:
            report.ticks[tick] = found
    return report


def _calls(tick: int, old: list[_Call], new: list[_Call], sides: Sides) -> Iterator[Difference]:
    for i in range(max(len(old), len(new))):
        a = old[i] if i < len(old) else None
        b = new[i] if i < len(new) else None
        if a is None or b is None or (a.kind, a.node, a.key) != (b.kind, b.node, b.key):
            one = a or b
            what = "model call" if one.kind == "model" else "tool call"
            made = [sides.old] if b is None else [sides.new] if a is None else []
            summary = (f"only {made[0]} makes {_named(one)}" if made else
                       f"{sides.old} makes {_named(a)}, {sides.new} {_named(b)}")
            yield Difference(tick, one.node, what, summary)
            return  # the calls after a missing one pair up no more
        if a.kind == "model":
            yield from _model_differences(tick, a, b, sides)
        else:
            request_a, request_b = sides.normal(0, a.request), sides.normal(1, b.request)
            if request_a != request_b:
                yield Difference(tick, a.node, "tool call", f"call {a.key}, at {first_split(request_a, request_b)[0]}",
                                 excerpt(request_a, request_b, sides))


def _named(call: _Call) -> str:
    return f"a model call (round {call.key})" if call.kind == "model" else f"{call.request.get('name')} (call {call.key})"


def _model_differences(tick: int, a: _Call, b: _Call, sides: Sides) -> Iterator[Difference]:
    old, new = sides.normal(0, a.request or {}), sides.normal(1, b.request or {})
    messages_a, messages_b = old.get("messages"), new.get("messages")
    if (found := config_difference(old.get("config") or {}, new.get("config") or {}, sides)) is not None:
        yield Difference(tick, a.node, "model request", f"round {a.key}, {found[0]}", found[1])
    elif messages_a != messages_b:
        yield Difference(tick, a.node, "model request", f"round {a.key}, messages{first_split(messages_a, messages_b)[0]}",
                         excerpt(messages_a, messages_b, sides, prefix="messages"))
    answer_a, answer_b = sides.normal(0, a.answer), sides.normal(1, b.answer)
    if answer_a != answer_b:
        yield Difference(tick, a.node, "model answer", f"round {a.key}, at {first_split(answer_a, answer_b)[0] or 'it'}",
                         excerpt(answer_a, answer_b, sides))


__all__ = ["DiffReport", "Side", "diff_runs"]
