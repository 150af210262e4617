"""A tick's telemetry as the debug server sends it: the few numbers, not the events, in columns.

Every tick publishes `tick.started`, a `node.status` per changed node, a `node.returned` per return
its end does not show and `tick.completed`. Built as objects, handed to the server and encoded one
by one, they cost an attached run more than its own tick; so does a record made and encoded per
tick. So the server has the runner number them only (`ReactiveRunner.number_telemetry`), keeps of
each tick the few values its events need (`TickBacklog`: a row of numbers a tick, the rows end to end
in one list, and the few ticks that changed a status or returned one their end does not show listed
apart), which an update takes as columns (`TickBacklog.take`). The client rebuilds the very events
(`tick_events`), numbered and timed as the runner numbered them (docs/protocol.md, "A tick's
telemetry").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import repeat
from operator import mul
from typing import Any

from ..engine.events import EventBatch, EventType, RuntimeEvent, tick_completed_payload
from ..engine.record import TickReport
from .protocol import each_run, runs_json

_COLUMNS = ("runs", "tick", "status", "started", "started_at", "completed", "completed_at", "duration_ms",
            "ticked", "wrote", "events")
_WIDTH = len(_COLUMNS)
_EVENTS = _COLUMNS.index("events")
_WROTE = _COLUMNS.index("wrote")
_US = repeat(1000.0)  # a duration in ms times this: in microseconds (`map` reads it without end)


class TickBacklog:
    """The ticks' telemetry kept between two updates, the newest `limit` events' worth (a tick at least);
    the older ticks' events are counted in `dropped`, as the server counts the events it lets go. Kept
    in columns laid end to end in one list, a tick adding a row of numbers and names (`_COLUMNS`) in one
    `extend` (not its report: that holds every return of a large tree's tick and the old state values it
    overwrote; nor a tuple a tick: objects kept for an update's 20 ms are what has the garbage collector
    walk the whole heap; nor an append a column: a dozen calls a tick, a fifth of what watching a small
    tree's tick costs). A tick let go is only passed over (`_first`) until half the rows are such ticks."""

    def __init__(self, limit: int, wake: Callable[[], Any] = lambda: None, beside: EventBatch | None = None):
        """`wake()`: the first tick since the last `take` (or `clear`) ended; `beside`: the run's other events,
        which the bus appends without a check, trimmed to `limit` as each tick ends."""
        self.limit = limit
        self.dropped = 0
        self.wake, self.beside = wake, beside
        self.clear()

    def __bool__(self) -> bool:
        return self._first < len(self._rows) // _WIDTH

    def add(self, run_id: str | None, report: TickReport) -> None:
        """Keep a completed tick's telemetry (one numbered by the runner: else it has nothing to send) and
        its report (`last`): the runner's sink (`number_telemetry`), called as each tick ends, so no
        other call a tick (a small tree's tick is ~30 us; each Python call ~0.1 us)."""
        if self.last is None:
            self.wake()
        self.last = report
        beside = self.beside
        if beside is not None and len(beside.events) > self.limit:
            beside.trim()
        telemetry = report.telemetry
        if telemetry is None:  # numbered only from the next tick (attached in the middle of this one)
            return
        events = 2
        if telemetry.returned is not None:
            ticked, values = report.ticked, report.returned
            self._returned.append([len(self._rows) // _WIDTH, *telemetry.returned,
                                   [[ticked[place], values[place]._value_, end._value_] for place, end in report.unseen]])
            events += len(report.unseen)
        if telemetry.statuses is not None:
            self._changed.append([len(self._rows) // _WIDTH, *telemetry.statuses,
                                  [[path, old._value_, new._value_] for path, (old, new) in report.changed.items()]])
            events += len(report.changed)
        keys, started, completed = report.state_changes, telemetry.started, telemetry.completed
        self._rows += (run_id, report.tick, report.status._value_, started[0], started[1], completed[0], completed[1],
                       report.duration_ms, len(report.ticked), len(keys), events)
        self._state_keys += keys
        self._count += events
        if self._count > self.limit:
            self._trim()

    def _trim(self) -> None:
        """Pass over the oldest ticks until the rest hold `limit` events (a tick at least)."""
        first, rows, last = self._first, self._rows, len(self._rows) // _WIDTH - 1
        while self._count > self.limit and first < last:
            events = rows[first * _WIDTH + _EVENTS]
            self._count -= events
            self.dropped += events
            self._keys_first += rows[first * _WIDTH + _WROTE]
            first += 1
        self._first = first
        if first > last // 2:  # the ticks passed over are half the rows: let them go
            del rows[:first * _WIDTH]
            del self._state_keys[:self._keys_first]
            self._returned = [[i - first, *rest] for i, *rest in self._returned if i >= first]
            self._changed = [[i - first, *rest] for i, *rest in self._changed if i >= first]
            self._first = self._keys_first = 0

    def take_last(self) -> TickReport | None:
        """The last tick's report, once (only the last before an update is turned into JSON, not every
        tick's: a run at full speed makes hundreds between two updates); the next tick wakes the reader."""
        last, self.last = self.last, None
        return last

    def take(self) -> dict[str, Any]:
        """The ticks kept, oldest first, as an update's `ticks` carries them (the columns, the `returned`
        and `changed` blocks by their tick's place among them); the backlog is then empty."""
        first, rows = self._first, self._rows
        kept = {name: rows[first * _WIDTH + place::_WIDTH] for place, name in enumerate(_COLUMNS)}
        out = {"runs": runs_json(kept["runs"]), "tick": kept["tick"], "status": runs_json(kept["status"]),
               "started": kept["started"], "started_at": kept["started_at"], "completed": kept["completed"],
               "completed_at": kept["completed_at"], "duration_us": list(map(round, map(mul, kept["duration_ms"], _US))),
               "ticked": kept["ticked"], "wrote": kept["wrote"], "state_keys": self._state_keys[self._keys_first:],
               "returned": [[i - first, *rest] for i, *rest in self._returned if i >= first],
               "changed": [[i - first, *rest] for i, *rest in self._changed if i >= first]}
        self.clear()
        return out

    def clear(self) -> None:
        self.last: TickReport | None = None  # the last tick's report, until taken (`take_last`)
        self._rows: list[Any] = []  # a tick's row: its `_COLUMNS`, in order
        self._state_keys: list[str] = []
        self._returned: list[list[Any]] = []  # [place of its tick, first number, time, rows]
        self._changed: list[list[Any]] = []
        self._first = self._keys_first = 0  # the ticks (and their state keys) let go, not deleted yet
        self._count = 0  # the events of the ticks kept


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
    for i, (run_id, tick, status, started, started_at, completed, completed_at, duration_us, ticked,
            wrote) in enumerate(zip(each_run(ticks["runs"]), ticks["tick"], each_run(ticks["status"]), ticks["started"],
                                    ticks["started_at"], ticks["completed"], ticks["completed_at"], ticks["duration_us"],
                                    ticks["ticked"], ticks["wrote"], strict=True)):
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
