"""Row ids reserved ahead from a PostgreSQL table's sequence, a block at a time (issue #34).

A tick's save names its rows itself (the checkpoint's id is in its events' batch, a new stream's
id is its first row's) instead of asking the server for them with `INSERT ... RETURNING`: the whole
save is then one statement, one round trip. The sequence hands each id out once, across writers,
processes and restarts (an id reserved and never used is a gap, nothing else). Each block is twice
the last, up to `MOST`: a writer of one short run leaves a small gap, one writing fifty runs at once
asks a few times (50 ReAct runs: ~15 asks, where blocks of 64 took ~100; several of its saves may ask at
once when a block runs out). The blocks are held apart, each handed out from its least id on: those
saves' ~45,000 ids sorted again as one at each answer took 25-40 ms of CPU in the runs' first second.
"""

from __future__ import annotations

import heapq

from .sql_plan import ONE, Plan, Query

BLOCK = 64  # ids fetched in the first round trip: a tick takes two (its checkpoint and its events row) ...
MOST = 1024  # ... and in one at most (one array: 4,096 ids as rows held the loop 2 ms, as an array 0.6)


class ReservedIds:
    """The ids of one table reserved by this writer, handed out in increasing order: a run's rows
    keep the order they were written in, which followers reading `id > last seen` and `latest`
    (the greatest id) rely on. `renew()` lets the ones left go: the next come from a block fetched
    after it, greater than any id another writer took before (a run this writer takes over)."""

    def __init__(self, table: str):
        self._reserve = f"SELECT array_agg(nextval(pg_get_serial_sequence('{table}', 'id'))) FROM generate_series(1, ?)"
        self._block = BLOCK  # ids the next ask reserves
        self._blocks: list[tuple[int, list[int]]] = []  # reserved, not handed out: (least id, ids the greatest first), a heap
        self._last = 0  # the last handed out
        self._generation = 0  # renewals: a block asked for before the last one is not used

    def take(self) -> Plan[int]:
        blocks = self._blocks
        while not blocks:
            asked, block = self._generation, self._block
            self._block = min(block * 2, MOST)
            (reserved,) = yield Query(self._reserve, (block,), ONE, alone=True)
            if asked == self._generation:  # (the asyncio store's saves may have asked at once: both blocks kept)
                ids = sorted((i for i in reserved if i > self._last), reverse=True)
                if ids:
                    heapq.heappush(blocks, (ids[-1], ids))
        ids = blocks[0][1]
        self._last = ids.pop()  # the least held (blocks asked at once may interleave)
        if ids:
            heapq.heapreplace(blocks, (ids[-1], ids))
        else:
            heapq.heappop(blocks)
        return self._last

    def renew(self) -> None:
        self._blocks.clear()
        self._generation += 1


__all__ = ["BLOCK", "ReservedIds"]
