"""A tick's telemetry as the debug server sends it: the few numbers, not the events, in columns.

Every tick publishes `tick.started`, a `node.status` per changed node, a `node.returned` per return
its end does not show and `tick.completed`. Built as objects, handed to the server and encoded one
by one, they cost an attached run more than its own tick; so does a record made and encoded per
tick. So the server has the runner number them only (`ReactiveRunner.number_telemetry`), keeps
each tick's report as it is (one append a tick), and when it sends an update turns the ticks kept
into columns (`TickBacklog.take`): a list a field, one entry a tick, and the few ticks that changed
a status or returned one their end does not show listed apart. The client rebuilds the very events
(`tick_events`), numbered and timed as the runner numbered them (docs/protocol.md, "A tick's
telemetry").
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from operator import attrgetter
from typing import Any

from ..engine.events import EventType, RuntimeEvent, tick_completed_payload
from ..engine.record import TickReport
from .protocol import each_run, runs_json

_TICK, _DURATION, _TICKED, _STATE, _TELEMETRY = (attrgetter("tick"), attrgetter("duration_ms"), attrgetter("ticked"),
                                                 attrgetter("state_changes"), attrgetter("telemetry"))


def _events(report: TickReport) -> int:
    return 2 + len(report.unseen) + len(report.changed)


class TickBacklog:
    """The ticks' reports kept between two updates, the newest `limit` events' worth (a tick at least);
    the older ticks' events are counted in `dropped`, as the server counts the events it lets go."""

    def __init__(self, limit: int):
        self.limit = limit
        self.dropped = 0
        self._reports: deque[TickReport] = deque(maxlen=max(limit // 2, 1))  # a tick is two events at least
        self._runs: deque[str | None] = deque(maxlen=self._reports.maxlen)  # the run each tick is of

    def __bool__(self) -> bool:
        return bool(self._reports)

    def add(self, run_id: str | None, report: TickReport) -> None:
        """Keep a completed tick's report (one numbered by the runner: else it has nothing to send)."""
        if report.telemetry is None:  # numbered only from the next tick (attached in the middle of this one)
            return
        reports = self._reports
        if len(reports) == reports.maxlen:
            self.dropped += _events(reports[0])
        reports.append(report)
        self._runs.append(run_id)

    def take(self) -> dict[str, Any]:
        """The ticks kept, oldest first, as an update's `ticks` carries them; the backlog is then empty."""
        reports, runs = list(self._reports), list(self._runs)
        self.clear()
        counts = list(map(_events, reports))
        total, first = sum(counts), 0
        while total > self.limit and first < len(reports) - 1:
            total -= counts[first]
            self.dropped += counts[first]
            first += 1
        if first:
            reports, runs = reports[first:], runs[first:]
        telemetry, writes = list(map(_TELEMETRY, reports)), list(map(_STATE, reports))
        return {"runs": runs_json(runs),
                "tick": list(map(_TICK, reports)),
                "status": [report.status._value_ for report in reports],
                "started": [t.started for t in telemetry],
                "completed": [t.completed for t in telemetry],
                "duration_us": [round(ms * 1000) for ms in map(_DURATION, reports)],
                "ticked": list(map(len, map(_TICKED, reports))),
                "wrote": list(map(len, writes)),
                "state_keys": [key for written in writes for key in written],
                "returned": [[i, *t.returned, [[report.ticked[place], report.returned[place]._value_, end._value_]
                                                for place, end in report.unseen]]
                             for i, (report, t) in enumerate(zip(reports, telemetry, strict=True))
                             if t.returned is not None],
                "changed": [[i, *t.statuses, [[path, old._value_, new._value_] for path, (old, new)
                                               in report.changed.items()]]
                            for i, (report, t) in enumerate(zip(reports, telemetry, strict=True))
                            if t.statuses is not None]}

    def clear(self) -> None:
        self._reports.clear()
        self._runs.clear()


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
