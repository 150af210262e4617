"""PostgreSQL statements whose results nobody reads, sent as one (issue #34).

A tick's save on PostgreSQL is its checkpoint's INSERT, its events' INSERT and a NOTIFY; sent one
by one inside BEGIN ... COMMIT that is five round trips. As one statement, the writes as
data-modifying `WITH` queries and the NOTIFY its `SELECT`, it is one, and atomic alone (the
connections are in autocommit). The parts of one statement all see the database as it was before
it, so a write that must see another's (an UPDATE of a row another part writes) starts the next
statement instead; a NOTIFY already in the statement is not sent twice.

Writes of different runs whose statements come due together go as one the same way (`together`):
each write's statement whole within one, so each is as atomic as it was alone.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from .sql_plan import NOTHING, Query

NOTIFY = "SELECT pg_notify(?, ?)"
_TARGET = re.compile(r"(?:INSERT INTO|UPDATE|DELETE FROM) (\w+)")


def _statement(group: Sequence[Query]) -> Query:
    """One statement doing what `group` does: its writes as `WITH` parts, its selects in its list."""
    if len(group) == 1:
        return group[0]
    parts, part_params, selects, select_params = [], [], [], []
    for n, query in enumerate(group):
        if not query.sql.startswith("SELECT "):
            parts.append(f"w{n} AS ({query.sql})")
            part_params += query.params
        else:
            bare = " FROM " not in query.sql  # (a select of a table runs as a scalar subquery)
            selects.append(query.sql[len("SELECT "):] if bare else f"(SELECT count(*) FROM ({query.sql}) s{n})")
            select_params += query.params
    head = f"WITH {', '.join(parts)} " if parts else ""
    return Query(f"{head}SELECT {', '.join(selects) or '1'}", (*part_params, *select_params), parts=tuple(group))


def _target(query: Query) -> tuple[str | None, bool]:
    """The table `query` writes (None: it writes none), and whether it may update a row there."""
    return _target_of(query.sql)


@functools.lru_cache(maxsize=1024)
def _target_of(sql: str) -> tuple[str | None, bool]:
    """`_target` of a statement's text, kept: a store sends a few texts over and over, and each grouping
    asks of every query (a regex a query was ~3% of a 50-run loop's CPU under a profiler)."""
    found = _TARGET.match(sql)
    if found is None:
        return None, False
    return found[1], sql.startswith("UPDATE") or "DO UPDATE" in sql


class _Grouping:
    """Statements grouped in order, a group ended before a write that must see an earlier one's."""

    def __init__(self) -> None:
        self.groups: list[list[Query]] = [[]]
        self._written: set[str] = set()
        self._updated: set[str] = set()

    def must_follow(self, queries: Sequence[Query]) -> bool:
        """Whether one of `queries` must see what the last group writes."""
        for query in queries:
            table, updates = _target(query)
            if table is not None and (table in self._updated or updates and table in self._written):
                return True
        return False

    def add(self, queries: Sequence[Query]) -> None:
        """`queries` into the last group, or a new one when they must follow it."""
        if self.must_follow(queries):
            self.groups.append([])
            self._written, self._updated = set(), set()
        group = self.groups[-1]
        for query in queries:
            if query.sql == NOTIFY and query in group:
                continue
            group.append(query)
            table, updates = _target(query)
            if table is not None:
                self._written.add(table)
                if updates:
                    self._updated.add(table)


def fused(queries: Sequence[Query]) -> list[Query]:
    """`queries`, in order, as few statements as do the same."""
    grouping = _Grouping()
    for query in queries:
        grouping.add((query,))
    return [_statement(group) for group in grouping.groups if group]


def joinable(query: Query) -> bool:
    """Whether `query`, a statement that is its own transaction, may go within another statement: it
    writes (or notifies), and nobody reads its result."""
    return query.want == NOTHING and (bool(query.parts) or query.sql == NOTIFY or _TARGET.match(query.sql) is not None)


def together(statements: Sequence[Query]) -> list[tuple[Query, int]]:
    """`statements` (`joinable`, of different writes) as few statements as do the same, each of them
    whole within one: (a statement, how many of `statements` it does, the next ones in order)."""
    grouping, counts = _Grouping(), [0]
    for statement in statements:
        parts = statement.parts or (statement,)
        if grouping.must_follow(parts):
            counts.append(0)
        grouping.add(parts)
        counts[-1] += 1
    return [(_statement(group), count) for group, count in zip(grouping.groups, counts, strict=True)]


__all__ = ["NOTIFY", "fused", "joinable", "together"]
