"""The events pane's rows: events, and ticks' telemetry each kept whole as one entry (`TickEvents`).

A step at 100,000 nodes brings ~10,000 `node.status` events; a row object each (and the pane's
trimming of them) cost the step what its tick costs. Here a tick's block is one entry that
counts as its events: a row is found by bisection over the entries' ends, and an event of a
block is built when its row is drawn or read (kept by the block: never). The oldest rows drop off
past `limit`, a block's first rows too (its entry stays until all of it is gone).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator

from ..event_log import Entry, StampedEvent, TickEvents


class EventRows:
    """Rows in order, indexed from the oldest kept; `limit` rows at most."""

    def __init__(self, limit: int):
        self.limit = limit
        self._entries: list[Entry] = []
        self._ends: list[int] = []  # each entry's end, counted in rows since the log began
        self._first = 0  # the first entry kept (those before it dropped off, compacted now and then)
        self._base = 0  # rows dropped off: the absolute number of row 0

    def __len__(self) -> int:
        return (self._ends[-1] - self._base) if len(self._ends) > self._first else 0

    def __getitem__(self, index: int) -> StampedEvent:
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        row = index + self._base
        at = bisect_right(self._ends, row, self._first)
        entry = self._entries[at]
        return entry if type(entry) is StampedEvent else entry[row - (self._ends[at] - len(entry))]

    def __iter__(self) -> Iterator[StampedEvent]:
        for row in range(len(self)):
            yield self[row]

    @property
    def base(self) -> int:
        """The number of row 0 counted since the rows began: a row keeps its number while rows drop off."""
        return self._base

    def __bool__(self) -> bool:
        return len(self) > 0

    @property
    def last(self) -> StampedEvent:
        """The newest row (`IndexError`: none)."""
        return self[-1]

    def extend(self, entries: Iterable[Entry]) -> int:
        """Rows for `entries` (events, or ticks' blocks whole); returns how many came. The oldest past
        `limit` drop off."""
        ends, end, came = self._ends, self._ends[-1] if self._ends else 0, 0
        for entry in entries:
            size = len(entry) if type(entry) is TickEvents else 1
            self._entries.append(entry)
            end += size
            came += size
            ends.append(end)
        self._trim()
        return came

    def _trim(self) -> None:
        over = len(self) - self.limit
        if over <= 0:
            return
        self._base += over
        entries, ends = self._entries, self._ends
        while self._first < len(entries) and ends[self._first] <= self._base:  # wholly gone
            self._first += 1
        if self._first > 1024 and self._first * 2 > len(entries):  # compact now and then, not each time
            del entries[:self._first], ends[:self._first]
            self._first = 0

    def clear(self) -> None:
        self._entries, self._ends, self._first, self._base = [], [], 0, 0


__all__ = ["EventRows"]
