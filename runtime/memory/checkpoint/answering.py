"""A PostgreSQL server that accepted the connection and then answers nothing (a stopped or hung server, a
dead proxy) holds a statement no longer than the store's `answer_timeout`.

Nothing else bounds that wait: a stopped server's kernel still acknowledges what is sent (so TCP
keepalives and `tcp_user_timeout` see a live peer), and `statement_timeout` is the server's own. psycopg
waits for every answer in its connection's `wait`, which takes a timeout its statements never pass: the
connections here wait with the store's (psycopg's own wait functions). At the deadline the connection is
closed (its statement's fate is unknown: it may still commit), and `NoAnswer` says so; the store connects
again on its next use.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
from psycopg import errors, waiting

_WAIT_INTERVAL = 0.1  # psycopg's own: its wait wakes this often, so a signal's handler runs meanwhile
_TABLE = re.compile(r"\b(?:FROM|INTO|UPDATE)\s+(\w+)")
_WRITES = re.compile(r"\b(?:BEGIN|INSERT|UPDATE|DELETE|COMMIT|CREATE|ALTER|DROP)\b")  # (a transaction writes)


class NoAnswer(psycopg.OperationalError):
    """The server did not answer a statement in time; its connection is closed."""


def _doing(sql: str) -> str:
    """What a statement does, as a message says it: `reading checkpoints`, `writing writers`."""
    table = _TABLE.search(sql)
    return f"{'writing' if _WRITES.search(sql) else 'reading'} {table[1] if table else 'the store'}"


def _ended(conn: psycopg.BaseConnection[Any], exc: BaseException, timeout: float | None) -> BaseException:
    """What a wait that did not complete raises: `NoAnswer` at the store's deadline (a caller's own timeout,
    `notifies`', is the caller's to handle). A wait interrupted (a signal, a cancellation) leaves the
    connection closed, as the deadline does, not kept while psycopg asks the server to cancel the statement:
    a server that does not answer holds that request too, up to ten seconds more, and the command that was
    stopped would wait them out."""
    if isinstance(exc, errors._WaitTimeout) and timeout is None and conn.answer_timeout is not None:
        conn.pgconn.finish()  # mid-statement: unusable, and `broken` now (the store replaces it)
        return NoAnswer(f"the PostgreSQL server did not answer within {conn.answer_timeout:g} s")
    if not isinstance(exc, Exception):
        conn.pgconn.finish()
    return exc


class BoundedConnection(psycopg.Connection):
    """A synchronous connection whose waits for the server end after `answer_timeout` seconds (None: never)."""

    answer_timeout: float | None = None

    def wait(self, gen: Any, interval: float = _WAIT_INTERVAL, timeout: float | None = None) -> Any:
        try:
            return waiting.wait(gen, self.pgconn.socket, interval=interval,
                                timeout=self.answer_timeout if timeout is None else timeout)
        except BaseException as exc:
            raise _ended(self, exc, timeout) from None

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> psycopg.Cursor:
        try:
            return super().execute(query, params, **kwargs)
        except NoAnswer as exc:
            raise NoAnswer(f"{exc} ({_doing(str(query))})") from None


class AsyncBoundedConnection(psycopg.AsyncConnection):
    """`BoundedConnection` for the event loop's connections."""

    answer_timeout: float | None = None

    async def wait(self, gen: Any, interval: float = _WAIT_INTERVAL, timeout: float | None = None) -> Any:
        try:
            return await waiting.wait_async(gen, self.pgconn.socket, interval=interval,
                                            timeout=self.answer_timeout if timeout is None else timeout)
        except BaseException as exc:
            raise _ended(self, exc, timeout) from None

    async def execute(self, query: Any, params: Any = None, **kwargs: Any) -> psycopg.AsyncCursor:
        try:
            return await super().execute(query, params, **kwargs)
        except NoAnswer as exc:
            raise NoAnswer(f"{exc} ({_doing(str(query))})") from None


__all__ = ["AsyncBoundedConnection", "BoundedConnection", "NoAnswer"]
