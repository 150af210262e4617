"""Writes of different runs that come due together share one round trip to the PostgreSQL server (issue #34).

Fifty runs recording into one asyncio store each send a statement a tick (a save fused into one:
`statement_fusion`), and each statement's round trip costs this process more CPU in psycopg's async
machinery (its wait on the socket, its result) than building the statement did. A write whose
statement is its own transaction (`joinable`) is queued instead; the statements queued by the time a
connection is free go as one (`together`), each write whole within it, so each is as atomic as it was
alone, and a write is acknowledged only once the statement carrying it has committed.

A statement that fails wrote nothing of anyone's: its writes then go again one by one on the same
connection, so only the one at fault fails, with its own error. A lost connection (or no answer in
time) fails every write it carried: whether the statement committed is unknown, as it is for a write
sent alone.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence

import psycopg

from .sql_plan import Query
from .statement_fusion import together

_MOST = 8  # writes in one statement at most: its answer resumes each in one loop iteration (64: stalls of 18-35 ms of CPU, 8: 16-18)


class SharedTrips:
    """One event loop's queue of joinable statements, sent over `connection()` (an async context
    manager giving one of the store's connections, its errors the store's `StoreError`); `dialect`
    makes a statement's text psycopg's."""

    def __init__(self, connection: Callable[[], contextlib.AbstractAsyncContextManager[psycopg.AsyncConnection]],
                 dialect: Callable[[str], str]):
        self._connection = connection
        self._dialect = dialect
        self._queue: list[tuple[Query, asyncio.Future[None]]] = []
        self._waiting = False  # a sender waits for a connection: it takes the queue as it is then
        self._senders: set[asyncio.Task[None]] = set()

    def send(self, statement: Query) -> asyncio.Future[None]:
        """What is done once `statement` has committed (or raises why it did not)."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        self._queue.append((statement, done))
        if not self._waiting:
            self._start(loop)
        return done

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._waiting = True
        task = loop.create_task(self._sender())
        self._senders.add(task)
        task.add_done_callback(self._senders.discard)

    async def _sender(self) -> None:
        taken: list[tuple[Query, asyncio.Future[None]]] | None = None
        try:
            async with self._connection() as conn:
                self._waiting = False
                queue = [item for item in self._queue if not item[1].done()]  # (a cancelled write's not sent)
                taken, self._queue = queue[:_MOST], queue[_MOST:]
                if self._queue:
                    self._start(asyncio.get_running_loop())
                await self._send(conn, taken)
        except BaseException as exc:  # no connection, or lost: every write it was to carry fails with it
            if taken is None:
                self._waiting, taken, self._queue = False, self._queue, []
            for _, done in taken:
                if not done.done():
                    done.set_exception(exc)
            if not isinstance(exc, Exception):
                raise

    async def _send(self, conn: psycopg.AsyncConnection, writes: Sequence[tuple[Query, asyncio.Future[None]]]) -> None:
        start = 0
        for statement, count in together([query for query, _ in writes]):
            carried, start = writes[start:start + count], start + count
            if count == 1:
                await self._alone(conn, *carried[0])
                continue
            try:
                await conn.execute(self._dialect(statement.sql), statement.params)
            except Exception:
                if conn.broken or conn.closed:
                    raise
                for query, done in carried:  # (none of it written: each again alone)
                    await self._alone(conn, query, done)
            else:
                for _, done in carried:
                    if not done.done():
                        done.set_result(None)

    async def _alone(self, conn: psycopg.AsyncConnection, query: Query, done: asyncio.Future[None]) -> None:
        """`query` sent by itself: its failure is its write's alone (a lost connection's, every write's)."""
        try:
            await conn.execute(self._dialect(query.sql), query.params)
        except Exception as exc:
            if conn.broken or conn.closed:
                raise
            if not done.done():
                done.set_exception(exc)
        else:
            if not done.done():
                done.set_result(None)


__all__ = ["SharedTrips"]
