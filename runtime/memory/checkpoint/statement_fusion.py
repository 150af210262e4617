"""PostgreSQL statements whose results nobody reads, sent as one (issue #34).

A tick's save on PostgreSQL is its checkpoint's INSERT, its events' INSERT and a NOTIFY; sent one
by one inside BEGIN ... COMMIT that is five round trips. As one statement, the writes as
data-modifying `WITH` queries and the NOTIFY its `SELECT`, it is one, and atomic alone (the
connections are in autocommit). The parts of one statement all see the database as it was before
it, so a write that must see another's (an UPDATE of a row another part writes) starts the next
statement instead; a NOTIFY already in the statement is not sent twice.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .sql_plan import Query

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
    return Query(f"{head}SELECT {', '.join(selects) or '1'}", (*part_params, *select_params))


def fused(queries: Sequence[Query]) -> list[Query]:
    """`queries`, in order, as few statements as do the same."""
    groups: list[list[Query]] = [[]]
    written: set[str] = set()
    updated: set[str] = set()
    for query in queries:
        if query.sql == NOTIFY and query in groups[-1]:
            continue
        found = _TARGET.match(query.sql)
        table = found[1] if found else None
        updates = table is not None and (query.sql.startswith("UPDATE") or "DO UPDATE" in query.sql)
        if table is not None and (table in updated or updates and table in written):
            groups.append([])
            written, updated = set(), set()
        groups[-1].append(query)
        if table is not None:
            written.add(table)
            if updates:
                updated.add(table)
    return [_statement(group) for group in groups if group]


__all__ = ["NOTIFY", "fused"]
