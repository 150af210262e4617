"""A tick's telemetry as the debug server sends it: the few numbers, not the events.

Every tick publishes `tick.started`, a `node.status` per changed node, a `node.returned` per return
its end does not show and `tick.completed`. Built as objects, handed to the server and encoded one
by one, they cost an attached run more than its own tick. So the server has the runner number them
only (`ReactiveRunner.number_telemetry`), keeps each tick's `telemetry_record` (what a checkpoint
stores of them), sends those in an update's `ticks`, and the client rebuilds the very events
(`tick_events`), numbered and timed as the runner numbered them (docs/protocol.md, "A tick's
telemetry").
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from ..engine.events import RuntimeEvent
from ..engine.record import TickReport, telemetry_events, telemetry_record


def events_in(record: dict[str, Any]) -> int:
    """How many events a tick's telemetry record stands for."""
    return 2 + (len(record["r"][2]) if "r" in record else 0) + (record["n"][2] if "n" in record else 0)


class TickBacklog:
    """The ticks' telemetry kept between two updates, the newest `limit` events' worth (a tick at
    least); the older ticks' events are counted in `dropped`, as the server counts the events it lets go."""

    def __init__(self, limit: int):
        self.limit = limit
        self.dropped = 0
        self._ticks: deque[tuple[list[Any], int]] = deque()  # ([run_id, tick, status, record], its events)
        self._events = 0

    def __bool__(self) -> bool:
        return bool(self._ticks)

    def add(self, run_id: str | None, report: TickReport) -> None:
        record = telemetry_record(report)
        if record is None:  # numbered only from the next tick (attached in the middle of this one)
            return
        count = events_in(record)
        self._ticks.append(([run_id, report.tick, report.status._value_, record], count))
        self._events += count
        while self._events > self.limit and len(self._ticks) > 1:
            _, gone = self._ticks.popleft()
            self._events -= gone
            self.dropped += gone

    def take(self) -> list[list[Any]]:
        """The ticks kept, oldest first, as an update's `ticks` carries them; the backlog is then empty."""
        ticks = [tick for tick, _ in self._ticks]
        self.clear()
        return ticks

    def clear(self) -> None:
        self._ticks.clear()
        self._events = 0


def tick_events(ticks: Iterable[Any]) -> list[RuntimeEvent]:
    """The events of an update's `ticks`, oldest first (a value of the wrong shape: KeyError, TypeError or ValueError)."""
    return [event for run_id, tick, status, record in ticks
            for event in telemetry_events(run_id, int(tick), str(status), record)]


__all__ = ["TickBacklog", "events_in", "tick_events"]
