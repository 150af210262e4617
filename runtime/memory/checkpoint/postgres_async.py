"""`AsyncPostgresCheckpointStore`: the PostgreSQL store whose writes a runner awaits.

What a run writes while it runs (each tick's checkpoint and events, the model and tool calls it
records, the events that end it) goes over psycopg's async connections: while a save is on the
wire the event loop runs the other runs' ticks. The statements and rows are the synchronous
store's own plans (`sql_plan.py`), driven here by `_run_async`; so is opening it (`open`: the
connect and the schema's check) and closing it (`aclose`). Reads, and what a studio or a script
writes, go over the synchronous connection this store inherits, opened on first use, so it is a
whole `CheckpointStore` for them as well.

The saves of different runs go over up to `connections` connections at once, opened on first use
in the running event loop; the saves of one run come one after another (its runner awaits each).
Those of different runs that come due together share a statement (`shared_trips.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import selectors
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import psycopg
from psycopg.types.numeric import Int8Dumper

from ...engine.loop_share import take_turn
from .answering import AsyncBoundedConnection
from .awaited_writes import AwaitedWrites
from .liveness import heartbeats
from .postgres_store import PostgresCheckpointStore, _dialect
from .shared_trips import SharedTrips
from .sql_plan import ALL, COUNT, ONE, Plan, Query, Stepping
from .statement_fusion import joinable
from .store import IORecord, StoreError

T = TypeVar("T")


async def _answer(stepping: Stepping, query: Query, conn: psycopg.AsyncConnection) -> None:
    """`query`, a plan's statement, run over `conn`, its answer (or error) given to the plan. (Not in
    pipeline mode: psycopg's async pipeline waits for results by polling a socket that is always
    writable, which here cost more CPU than the round trips it saved.)"""
    try:
        cursor = await conn.execute(_dialect(query.sql), query.params)
        stepping.answered(await cursor.fetchone() if query.want == ONE else await cursor.fetchall()
                          if query.want == ALL else cursor.rowcount if query.want == COUNT else None)
    except BaseException as exc:
        stepping.failed(exc)


async def _driven(stepping: Stepping, query: Query | None, conn: psycopg.AsyncConnection) -> Any:
    """The rest of a plan being driven, from its statement `query`, over `conn`: the event loop runs other
    work while each statement is on the wire."""
    while query is not None:
        await _answer(stepping, query, conn)
        query = stepping.query()
    return stepping.result


class AsyncPostgresCheckpointStore(AwaitedWrites, PostgresCheckpointStore):
    """`PostgresCheckpointStore` with `save_async`, `add_events_async` and `put_io_async`, which a
    runner recording into it awaits (`RunnerCheckpoints`) instead of blocking its event loop, and
    `get_io_async`, which a runner replaying a recorded run awaits (`IOReplayer`).

    `await AsyncPostgresCheckpointStore.open(url)` opens it from an event loop without ever holding
    the loop: the connect and the schema's check (or creation) go over an async connection, so a
    server that accepts the connection and never answers costs the connect's timeout at most, and a
    cancellation (a signal, a timeout around it) ends the wait at once. Its synchronous connection,
    for reads and for what a studio or a script writes, is then opened on first use.
    `AsyncPostgresCheckpointStore(url)` opens it synchronously, for a script without a loop yet."""

    def __init__(self, url: str, *, create: bool = True, connections: int = 8):
        self._size = connections
        super().__init__(url, create=create)

    @classmethod
    async def open(cls, url: str, *, create: bool = True, connections: int = 8) -> AsyncPostgresCheckpointStore:
        """The store at `url`, opened over an async connection (`StoreError` in one line when it cannot be)."""
        store = cls.__new__(cls)
        store._size = connections
        store._configure(url)
        try:
            await store._run_async(store._opening(create))
        except BaseException:
            store._drop_connections()
            raise
        return store

    def _configure(self, url: str) -> None:
        super()._configure(url)
        self._idle: list[psycopg.AsyncConnection] = []
        self._opened: set[psycopg.AsyncConnection] = set()
        self._slots = asyncio.Semaphore(self._size)
        self._connecting = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._trips = SharedTrips(self._connection, _dialect)

    def _lost(self, raw: psycopg.Connection) -> bool:
        """The synchronous connection is not this store's writer: it may sit idle for a whole run while the
        async ones write. One the server dropped meanwhile (a terminated backend, a restart) is found
        before use, its socket ready though nothing was asked (an idle connection that listens to nothing
        hears nothing else, but a rare notice: then it is replaced for nothing), and replaced: what it is
        used for (a read, how a stopped run ended) does not fail on a loss it never met."""
        if raw.broken or raw.closed:
            return True
        try:  # (a selector, not select.select: that refuses a descriptor past 1024, as a busy process has)
            with selectors.DefaultSelector() as selector:
                selector.register(raw.fileno(), selectors.EVENT_READ)
                return bool(selector.select(0))
        except (OSError, ValueError, psycopg.OperationalError):
            return True

    async def get_io_async(self, run_id: str, kind: str, node: str, round: int, index: int,
                           branch: str | None = None) -> IORecord | None:
        """`get_io` over the async connections: what a replaying runner reads before each recorded call."""
        return await self._run_async(self.getting_io(run_id, kind, node, round, index, branch))

    async def _run_async(self, plan: Plan[T]) -> T:
        """Run `plan` over this event loop's connections. Writes come due together: what each builds
        and sends takes its turn in the loop's share before its first statement, and again after each
        statement that may go `alone` (items stored, ids reserved, a run's facts read: never inside a
        transaction), each over whichever connection is free, since the answers of many come in one
        loop iteration; then a statement that is its write's whole transaction goes with those of other
        writes queued meanwhile (`SharedTrips`), the rest of a plan over a connection of its own."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # (another event loop: the last one's connections cannot serve it)
            self._drop_connections()
            self._loop, self._slots, self._connecting = loop, asyncio.Semaphore(self._size), asyncio.Lock()
            self._trips = SharedTrips(self._connection, _dialect)
        stepping = Stepping(plan)
        if (turn := take_turn()) is not None:
            await turn
        query = stepping.query()
        while query is not None and query.alone:
            async with self._connection() as conn:
                await _answer(stepping, query, conn)
            if (turn := take_turn()) is not None:
                await turn
            try:
                query = stepping.query()
            except psycopg.Error as exc:
                raise StoreError(self._explain(exc, conn)) from None
        if query is not None and joinable(query):
            try:
                await self._trips.send(query)
                stepping.answered(None)
            except psycopg.Error as exc:  # (the statement's own failure: its connection went on)
                stepping.failed(exc)
            try:
                query = stepping.query()
            except psycopg.Error as exc:
                raise StoreError(f"{self.location}: {self._first_line(exc)}") from None
        if query is None:
            return stepping.result
        async with self._connection() as conn:
            return await _driven(stepping, query, conn)

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[psycopg.AsyncConnection]:
        """One of this event loop's connections: an idle one, else a new one while fewer than
        `connections` are open, else the first given back; its failures in one line (`StoreError`)."""
        async with self._slots:
            conn = self._idle.pop() if self._idle else await self._new_connection()
            try:
                yield conn
            except psycopg.Error as exc:
                raise StoreError(self._explain(exc, conn)) from None
            except BaseException as exc:
                if not isinstance(exc, Exception):  # cancelled: the connection may be mid-statement
                    conn.pgconn.finish()
                raise
            finally:
                if conn.broken or conn.closed:  # lost: the next write connects again
                    self._opened.discard(conn)
                    conn.pgconn.finish()
                elif conn in self._opened:
                    self._idle.append(conn)

    async def _new_connection(self) -> psycopg.AsyncConnection:
        """A connection opened after those being opened (or one of them given back meanwhile): the
        authentication's answers of connections opened at once come in one loop iteration, and each
        costs this process ~4 ms of CPU (SCRAM's 4,096 rounds of hashing): 8 of them held the loop ~30 ms
        at the runs' start. What the connection then carries takes a turn."""
        async with self._connecting:
            if self._idle:
                return self._idle.pop()
            conn = await self._connect_async()
        if (turn := take_turn()) is not None:
            await turn
        return conn

    async def _connect_async(self) -> psycopg.AsyncConnection:
        try:
            conn = await AsyncBoundedConnection.connect(self._url, autocommit=True, options=self._options,
                                                         **self._timeout)
        except psycopg.Error as exc:
            raise self._unconnected(exc) from None
        conn.answer_timeout = self._answer_timeout
        conn.adapters.register_dumper(int, Int8Dumper)  # as the synchronous connection's
        self._opened.add(conn)
        return conn

    def _drop_connections(self) -> None:
        """Close the async connections at once (no event loop needed: libpq closes them)."""
        for conn in self._opened:
            with contextlib.suppress(Exception):
                conn.pgconn.finish()
        self._opened.clear()
        self._idle.clear()

    async def aclose(self) -> None:
        """`close()` from the event loop: this writer's row marked closed over an async connection (the
        synchronous one may never have been opened), then every connection closed."""
        heartbeats.discard(self)
        if self._writer_id is not None:
            with contextlib.suppress(StoreError):
                await self._run_async(self.closing_writer())
        self.close()

    def close(self) -> None:
        self._drop_connections()
        super().close()


__all__ = ["AsyncPostgresCheckpointStore"]
