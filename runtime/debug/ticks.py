"""A tick's telemetry as the debug server sends it: the few numbers, not the events, in columns.

Every tick publishes `tick.started`, a `node.status` per changed node, a `node.returned` per return
its end does not show and `tick.completed`. Built as objects, handed to the server and encoded one
by one, they cost an attached run more than its own tick; so does a record made and encoded per
tick. So the server has the runner number them only (`ReactiveRunner.number_telemetry`), keeps of
each tick the few values its events need (one tuple a tick), and when it sends an update turns the
ticks kept into columns (`TickBacklog.take`): a list a field, one entry a tick, and the few ticks
that changed a status or returned one their end does not show listed apart. The client rebuilds the very events
(`tick_events`), numbered and timed as the runner numbered them (docs/protocol.md, "A tick's
telemetry").
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from ..engine.events import EventType, RuntimeEvent, tick_completed_payload
from ..engine.record import TickReport
from .protocol import each_run, runs_json


class TickBacklog:
    """The ticks' telemetry kept between two updates, the newest `limit` events' worth (a tick at least);
    the older ticks' events are counted in `dropped`, as the server counts the events it lets go. A
    tick is kept as one tuple of what its events need (not its report: that holds every return of
    a large tree's tick and the old state values it overwrote)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.dropped = 0
        self._ticks: deque[tuple] = deque()
        self._events = 0

    def __bool__(self) -> bool:
        return bool(self._ticks)

    def add(self, run_id: str | None, report: TickReport) -> None:
        """Keep a completed tick's telemetry (one numbered by the runner: else it has nothing to send)."""
        telemetry = report.telemetry
        if telemetry is None:  # numbered only from the next tick (attached in the middle of this one)
            return
        returned, changed, events = None, None, 2
        if telemetry.returned is not None:
            ticked, values = report.ticked, report.returned
            returned = [*telemetry.returned, [[ticked[place], values[place]._value_, end._value_]
                                              for place, end in report.unseen]]
            events += len(report.unseen)
        if telemetry.statuses is not None:
            changed = [*telemetry.statuses, report.changed]
            events += len(report.changed)
        self._ticks.append((run_id, report.tick, report.status._value_, telemetry.started, telemetry.completed,
                            report.duration_ms, len(report.ticked), [*report.state_changes], returned, changed, events))
        self._events += events
        if self._events > self.limit and len(self._ticks) > 1:
            self._trim()

    def _trim(self) -> None:
        ticks = self._ticks
        while self._events > self.limit and len(ticks) > 1:
            gone = ticks.popleft()[-1]
            self._events -= gone
            self.dropped += gone

    def take(self) -> dict[str, Any]:
        """The ticks kept, oldest first, as an update's `ticks` carries them (columns: one transposition
        of the tuples kept); the backlog is then empty."""
        runs, tick, status, started, completed, duration, ticked, keys, returned, changed, _ = zip(*self._ticks, strict=True)
        self.clear()
        return {"runs": runs_json(list(runs)), "tick": tick, "status": status, "started": started,
                "completed": completed, "duration_us": [round(ms * 1000) for ms in duration], "ticked": ticked,
                "wrote": list(map(len, keys)), "state_keys": [key for written in keys for key in written],
                "returned": [[i, *block] for i, block in enumerate(returned) if block is not None],
                "changed": [[i, block[0], block[1], [[path, old._value_, new._value_]
                                                     for path, (old, new) in block[2].items()]]
                            for i, block in enumerate(changed) if block is not None]}

    def clear(self) -> None:
        self._ticks.clear()
        self._events = 0


def events_in(ticks: Mapping[str, Any]) -> int:
    """How many events an update's `ticks` stands for."""
    return (2 * len(ticks["tick"]) + sum(len(block[3]) for block in ticks["returned"])
            + sum(len(block[3]) for block in ticks["changed"]))


def tick_events(ticks: Mapping[str, Any] | None) -> list[RuntimeEvent]:
    """The events of an update's `ticks`, oldest first (a value of the wrong shape: KeyError, TypeError or
    ValueError)."""
    if not ticks:
        return []
    returned, changed = _by_tick(ticks["returned"]), _by_tick(ticks["changed"])
    started_type, completed_type = EventType.TICK_STARTED.value, EventType.TICK_COMPLETED.value
    returned_type, status_type = EventType.NODE_RETURNED.value, EventType.NODE_STATUS.value
    events: list[RuntimeEvent] = []
    add, keys, written = events.append, ticks["state_keys"], 0
    for i, (run_id, tick, status, (started, started_at), (completed, completed_at), duration_us, ticked,
            wrote) in enumerate(zip(each_run(ticks["runs"]), ticks["tick"], ticks["status"], ticks["started"],
                                    ticks["completed"], ticks["duration_us"], ticks["ticked"], ticks["wrote"],
                                    strict=True)):
        tick, state_keys, written = int(tick), keys[written:written + wrote], written + wrote
        add(RuntimeEvent(started, started_type, started_at, tick, None, run_id, {}))
        if i in returned:
            first, at, unseen = returned[i]
            events += [RuntimeEvent(seq, returned_type, at, tick, path, run_id, {"status": value, "end": end})
                       for seq, (path, value, end) in enumerate(unseen, first)]
        changes: dict[str, list[str]] = {}
        if i in changed:
            first, at, rows = changed[i]
            events += [RuntimeEvent(seq, status_type, at, tick, path, run_id, {"old": old, "new": new})
                       for seq, (path, old, new) in enumerate(rows, first)]
            changes = {path: [old, new] for path, old, new in rows}
        add(RuntimeEvent(completed, completed_type, completed_at, tick, None, run_id,
                         tick_completed_payload(str(status), duration_us / 1000, changes, state_keys, ticked)))
    return events


def _by_tick(blocks: list[list[Any]]) -> dict[int, tuple[int, float, list[list[str]]]]:
    """`returned` or `changed` by the place of its tick: (first number, time, rows)."""
    return {int(i): (first, at, rows) for i, first, at, rows in blocks}


__all__ = ["TickBacklog", "events_in", "tick_events"]
