"""A local session's timeline rows, built when read from the run's checkpoint headers.

A `TimelineRow` and its summary string a checkpoint, in a list rebuilt at each step, were ~3 objects
a checkpoint kept for the run's length (the timeline pane kept them too). The headers are already
columns of numbers (`studio.timeline.Headers`) and each row's summary is noted there as numbers
when its checkpoint is new (its parent still remembered: nothing decoded), so a row is made only
where one is read: the lines on screen, a command, a test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from runtime.memory.checkpoint import CheckpointInfo

from .api import TimelineRow


class CheckpointRows(Sequence[TimelineRow]):
    """The first `count` rows of one run's headers, oldest first (a count fixed when made: what was listed
    then, as a list would hold it), each row's summary written by `summary` at each read."""

    __slots__ = ("_count", "_headers", "_summary")

    def __init__(self, headers: Sequence[CheckpointInfo], summary: Callable[[CheckpointInfo], str], count: int):
        self._headers, self._summary, self._count = headers, summary, count

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError(index)
        info = self._headers[index]
        return TimelineRow(info.id, info.tick, info.status, info.branch, info.parent_id, self._summary(info))

    def __iter__(self) -> Iterator[TimelineRow]:
        return map(self.__getitem__, range(self._count))


__all__ = ["CheckpointRows"]
