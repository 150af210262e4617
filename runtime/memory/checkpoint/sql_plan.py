"""Writes as plans: the shared SQL code yields the statements it wants run, an executor runs them.

A write of the SQL stores (`sql_store.py`) is a generator of `Query`s: it yields a statement
and is sent back what it asked for (a row, the rows, the count of rows changed, or nothing);
a statement that fails is thrown into it (so it rolls back). The synchronous stores drive it
over their DB-API connection (`run`); the asyncio PostgreSQL store drives the same plan over
psycopg's async connections (`postgres_async.py`). So the statements and the rows they write
are built in one place, and each executor is a few lines.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

NOTHING, ONE, ALL, COUNT = "", "one", "all", "count"


@dataclass(frozen=True, slots=True)
class Query:
    """A statement (`?` placeholders) and what its plan wants back: NOTHING, ONE row (or None),
    ALL rows, or the COUNT of rows it changed. `alone`: it may run on its own before its transaction
    begins (ahead of the transaction's writes not sent yet: it reads none of them), its effect kept
    even if the transaction fails (items stored by content, ids reserved). `parts`: the statements a
    statement was fused from (`statement_fusion`), to fuse again with another write's."""

    sql: str
    params: Sequence[Any] = ()
    want: str = NOTHING
    alone: bool = False
    parts: tuple[Query, ...] = ()


Plan = Generator[Query, Any, T]


def answer(cursor: Any, want: str) -> Any:
    """What `want` asks of a DB-API cursor that has run its statement."""
    if want == ONE:
        return cursor.fetchone()
    if want == ALL:
        return cursor.fetchall()
    return cursor.rowcount if want == COUNT else None


class Stepping:
    """A plan being driven: `query()` is the next statement (None once the plan returned its
    `result`); `answered` sends it what its statement gave, `failed` throws the statement's error
    in (the plan rolls back, and raises it again out of the next `query()`)."""

    def __init__(self, plan: Plan[Any]):
        self._plan = plan
        self._next: Callable[[Any], Query] = plan.send
        self._value: Any = None
        self.result: Any = None

    def query(self) -> Query | None:
        try:
            return self._next(self._value)
        except StopIteration as stop:
            self.result = stop.value
            return None

    def answered(self, value: Any) -> None:
        self._next, self._value = self._plan.send, value

    def failed(self, exc: BaseException) -> None:
        self._next, self._value = self._plan.throw, exc


def run(plan: Plan[T], execute: Callable[[str, Sequence[Any]], Any]) -> T:
    """Drive `plan` with a synchronous `execute(sql, params)` (a DB-API connection's)."""
    stepping = Stepping(plan)
    while (query := stepping.query()) is not None:
        try:
            stepping.answered(answer(execute(query.sql, query.params), query.want))
        except BaseException as exc:
            stepping.failed(exc)
    return stepping.result


__all__ = ["ALL", "COUNT", "NOTHING", "ONE", "Plan", "Query", "Stepping", "answer", "run"]
