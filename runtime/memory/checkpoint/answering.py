"""A PostgreSQL server that accepted the connection and then answers nothing (a stopped or hung server, a
dead proxy) holds a statement no longer than the store's `answer_timeout`.

Nothing else bounds that wait: a stopped server's kernel still acknowledges what is sent (so TCP
keepalives and `tcp_user_timeout` see a live peer), and `statement_timeout` is the server's own. psycopg
waits for every answer in its connection's `wait`, which takes a timeout its statements never pass: the
connections here pass the store's. At the deadline the connection is closed (its statement's fate is
unknown: it may still commit), and `NoAnswer` says so; the store connects again on its next use.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import psycopg
from psycopg import errors

RV = TypeVar("RV")

_WAIT_INTERVAL = 0.1  # psycopg's own: its wait wakes this often, so a signal's handler runs meanwhile
_TABLE = re.compile(r"\b(?:FROM|INTO|UPDATE)\s+(\w+)")
_WRITES = re.compile(r"\b(?:BEGIN|INSERT|UPDATE|DELETE|COMMIT|CREATE|ALTER|DROP)\b")  # (a transaction writes)


class NoAnswer(psycopg.OperationalError):
    """The server did not answer a statement in time; its connection is closed."""


def doing(sql: str) -> str:
    """What a statement does, as a message says it: `reading checkpoints`, `writing writers`."""
    table = _TABLE.search(sql)
    return f"{'writing' if _WRITES.search(sql) else 'reading'} {table[1] if table else 'the store'}"


def _no_answer(conn: psycopg.BaseConnection[Any], timeout: float) -> NoAnswer:
    conn.pgconn.finish()  # mid-statement: unusable, and `broken` now (the store replaces it)
    return NoAnswer(f"the PostgreSQL server did not answer within {timeout:g} s")


class BoundedConnection(psycopg.Connection):
    """A synchronous connection whose waits for the server end after `answer_timeout` seconds (None: never)."""

    answer_timeout: float | None = None

    def wait(self, gen: Any, interval: float = _WAIT_INTERVAL, timeout: float | None = None) -> Any:
        if timeout is not None or self.answer_timeout is None:  # a caller's own bound (`notifies`) is its to handle
            return super().wait(gen, interval, timeout)
        try:
            return super().wait(gen, interval, self.answer_timeout)
        except errors._WaitTimeout:  # (psycopg's way of saying its wait's timeout expired)
            raise _no_answer(self, self.answer_timeout) from None

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> psycopg.Cursor:
        try:
            return super().execute(query, params, **kwargs)
        except NoAnswer as exc:
            raise NoAnswer(f"{exc} ({doing(str(query))})") from None


class AsyncBoundedConnection(psycopg.AsyncConnection):
    """`BoundedConnection` for the event loop's connections."""

    answer_timeout: float | None = None

    async def wait(self, gen: Any, interval: float = _WAIT_INTERVAL, timeout: float | None = None) -> Any:
        if timeout is not None or self.answer_timeout is None:
            return await super().wait(gen, interval, timeout)
        try:
            return await super().wait(gen, interval, self.answer_timeout)
        except errors._WaitTimeout:
            raise _no_answer(self, self.answer_timeout) from None

    async def execute(self, query: Any, params: Any = None, **kwargs: Any) -> psycopg.AsyncCursor:
        try:
            return await super().execute(query, params, **kwargs)
        except NoAnswer as exc:
            raise NoAnswer(f"{exc} ({doing(str(query))})") from None


__all__ = ["AsyncBoundedConnection", "BoundedConnection", "NoAnswer", "doing"]
