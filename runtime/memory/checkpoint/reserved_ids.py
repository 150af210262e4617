"""Row ids reserved ahead from a PostgreSQL table's sequence, a block at a time (issue #34).

A tick's save names its rows itself (the checkpoint's id is in its events' batch, a new stream's
id is its first row's) instead of asking the server for them with `INSERT ... RETURNING`: the whole
save is then one statement, one round trip. The sequence hands each id out once, across writers,
processes and restarts (an id reserved and never used is a gap, nothing else).
"""

from __future__ import annotations

from .sql_plan import ALL, Plan, Query

BLOCK = 64  # ids fetched in one round trip: a tick takes two (its checkpoint and its events row)


class ReservedIds:
    """The ids of one table reserved by this writer, handed out in increasing order: a run's rows
    keep the order they were written in, which followers reading `id > last seen` and `latest`
    (the greatest id) rely on. `renew()` lets the ones left go: the next come from a block fetched
    after it, greater than any id another writer took before (a run this writer takes over)."""

    def __init__(self, table: str):
        self._reserve = Query(f"SELECT nextval(pg_get_serial_sequence('{table}', 'id')) "
                              "FROM generate_series(1, ?)", (BLOCK,), ALL, alone=True)
        self._ids: list[int] = []  # reserved, not handed out: the greatest first
        self._last = 0  # the last handed out
        self._generation = 0  # renewals: a block asked for before the last one is not used

    def take(self) -> Plan[int]:
        while not self._ids:
            asked = self._generation
            rows = yield self._reserve
            if asked == self._generation:  # (the asyncio store's saves may have asked at once: both blocks kept)
                self._ids = sorted({*self._ids, *(row[0] for row in rows if row[0] > self._last)}, reverse=True)
        self._last = self._ids.pop()
        return self._last

    def renew(self) -> None:
        self._ids.clear()
        self._generation += 1


__all__ = ["BLOCK", "ReservedIds"]
