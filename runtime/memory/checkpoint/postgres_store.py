"""`PostgresCheckpointStore`: one store for runs written by many processes on many machines.

The same records, encoding and queries as the SQLite store (`sql_store.py`), in tables of
their own schema (`jianmu`) of a PostgreSQL database, created on first use under an advisory
lock (ten writers may start at once) and versioned like the SQLite format: another
version is refused in one line; a store already there at this version opens in one query.
A save is one transaction (a tick's: one statement, `statement_fusion.py`) that also `NOTIFY`s
`jianmu_checkpoints` with the run id, so a studio following the run hears of each checkpoint as
it commits. A writer whose connection
is lost raises `StoreError` at its next save: the run stops rather than going on unrecorded;
the store connects again for what comes after (how the run ended).

Every wait for the server is bounded (`postgres.answer_timeout` in jianmu.yaml, 90 s: longer than a statement waits for a lock, 60 s): a server that
accepted the connection and then answers nothing (a stopped or hung server, a dead proxy, which TCP does
not tell: a stopped server's kernel still acknowledges what is sent, and `statement_timeout` is the
server's own) fails the statement in one line naming the store and what it was doing, and the
connection is dropped, connected again on its next use (`answering.py`).

The store is named by a `postgresql://user:password@host:port/database` URL; its
`location` (what messages show) is that URL without the password.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import conninfo
from psycopg.types.numeric import Int8Dumper

from ...config import ConfigError, PostgresSettings, get_config
from ...urls import masked_url, url_secrets
from .answering import BoundedConnection, NoAnswer
from .liveness import WRITERS_TABLE
from .reserved_ids import ReservedIds
from .sql_plan import ALL, ONE, Plan, Query, run
from .sql_store import CHAIN_READ, SCHEMA_VERSION, SQLCheckpointStore, _item_data
from .statement_fusion import NOTIFY, fused
from .store import StoreError

SCHEMA = "jianmu"
CHANNEL = "jianmu_checkpoints"
CONNECT_TIMEOUT = 10  # seconds to connect, unless the URL (connect_timeout) or $PGCONNECT_TIMEOUT says: libpq's
# own default is to wait forever, and an address that accepts TCP but never answers would hang every command
LOCK_TIMEOUT = 60  # seconds a statement waits for a lock, unless the URL's or $PGOPTIONS's lock_timeout says:
# PostgreSQL's own default is forever, and a session holding the store's tables locked would hang every command
_SCHEMA_LOCK = 0x6A69616E6D75  # pg_advisory_xact_lock key: one process creates the tables
# psycopg logs what it does on an interrupted statement ("query cancellation interrupted"): records for
# the program's handlers (the CLI shows them with --debug), never Python's last resort on the user's stderr
logging.getLogger("psycopg").addHandler(logging.NullHandler())

_TABLES = """
CREATE SCHEMA IF NOT EXISTS jianmu;
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE checkpoints(
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, run_id TEXT NOT NULL, branch TEXT NOT NULL,
    parent_id BIGINT, base_id BIGINT, tick INTEGER NOT NULL, time DOUBLE PRECISION NOT NULL,
    status TEXT NOT NULL, source TEXT NOT NULL, event_position BIGINT NOT NULL,
    stream BIGINT, data BYTEA NOT NULL);
ALTER TABLE checkpoints ALTER data SET STORAGE MAIN;
CREATE INDEX checkpoints_run ON checkpoints(run_id);
CREATE TABLE items(id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, hash BYTEA NOT NULL UNIQUE,
    text TEXT, packed BYTEA, CHECK ((text IS NULL) <> (packed IS NULL)));
CREATE TABLE chunks(list_id TEXT NOT NULL, start INTEGER NOT NULL, items TEXT NOT NULL);
CREATE INDEX chunks_list ON chunks(list_id);
CREATE TABLE events(id BIGINT GENERATED ALWAYS AS IDENTITY, run_id TEXT NOT NULL,
    branch TEXT NOT NULL, stream BIGINT, data BYTEA NOT NULL);
CREATE INDEX events_run ON events(run_id);
CREATE TABLE io(id BIGINT GENERATED ALWAYS AS IDENTITY, run_id TEXT NOT NULL,
    branch TEXT NOT NULL, kind TEXT NOT NULL, node TEXT NOT NULL, round INTEGER NOT NULL,
    idx INTEGER NOT NULL, request TEXT NOT NULL, response TEXT, error TEXT, time DOUBLE PRECISION NOT NULL);
CREATE INDEX io_call ON io(run_id, round, idx);
"""
# Schema 4 (bench/checkpoint_growth.py's 450 KB run: 1,573 -> 1,335 KB): no index a query does not use
# (events and io rows are read by run, never by id; a chain by the primary key's range); run and list
# indexes of the run or list alone, which PostgreSQL stores deduplicated (a chunk's uniqueness is
# checked on reading); io calls found by (run, round, index), their few rows filtered; a checkpoint
# record kept in its row up to a page (STORAGE MAIN: not in TOAST, whose index a 3 KB record costs).
_UPGRADES = {3: """
DROP INDEX checkpoints_base;
DROP INDEX checkpoints_run;
CREATE INDEX checkpoints_run ON checkpoints(run_id);
ALTER TABLE checkpoints ALTER data SET STORAGE MAIN;
ALTER TABLE chunks DROP CONSTRAINT chunks_pkey;
CREATE INDEX chunks_list ON chunks(list_id);
DROP INDEX events_run;
CREATE INDEX events_run ON events(run_id);
ALTER TABLE events DROP CONSTRAINT events_pkey;
ALTER TABLE io DROP CONSTRAINT io_pkey;
DROP INDEX io_call;
CREATE INDEX io_call ON io(run_id, round, idx)
""", 4: "", 5: "", 6: "", 7: ""}  # schemas 5 to 8 only add a record or row form (sql_store.SCHEMA_VERSION)


def redacted(url: str) -> str:
    """The URL as messages show it: `postgresql://user@host:port/database`, never a password."""
    try:
        parts = conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "postgresql://(an unreadable URL)"
    user = f"{parts['user']}@" if parts.get("user") else ""
    port = f":{parts['port']}" if parts.get("port") else ""
    host = parts.get("host", "").rsplit("@", 1)[-1]  # libpq ends a password at its first @, masked_url at the last
    return f"postgresql://{user}{host}{port}/{parts.get('dbname', '')}"


def _answer_timeout() -> float:
    """jianmu.yaml's `postgres.answer_timeout`; the default when the file cannot be read (its error shows elsewhere)."""
    try:
        return get_config().postgres.answer_timeout
    except ConfigError:
        return PostgresSettings().answer_timeout


@functools.lru_cache(maxsize=256)
def _dialect(sql: str) -> str:
    """A shared query (`?` placeholders) as psycopg takes it (`%s`, literal `%` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


class _Connection:
    """A psycopg connection that speaks the shared queries' placeholders."""

    def __init__(self, raw: psycopg.Connection):
        self.raw = raw

    def execute(self, sql: str, params: tuple = ()) -> psycopg.Cursor:
        return self.raw.execute(_dialect(sql), params)

    def close(self) -> None:
        self.raw.close()


class PostgresCheckpointStore(SQLCheckpointStore):
    _DRIVER_ERROR = psycopg.Error
    _RETRY = (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure)
    _ITEM_INSERT = "hash, text, packed"
    _ITEM_COLUMNS = "i.text, i.packed"
    _BRANCHES = "string_agg(DISTINCT branch, ',')"
    _UPGRADES = _UPGRADES
    _OWN_ID = "OVERRIDING SYSTEM VALUE "
    _ALONE_FIRST = True

    def __init__(self, url: str, *, create: bool = True):
        self._configure(url)
        self._conn = _Connection(self._connect())
        with self._guard():
            run(self._opening(create), self._conn.execute)
            # the chain read prepared: a new server backend pays that query's parsing and catalog lookups
            # (0.35-0.5 ms here) while opening, not when the first checkpoint is read
            self._conn.raw.execute(_dialect(CHAIN_READ), (0,), prepare=True)

    def _configure(self, url: str) -> None:
        """What the store knows of its URL before it connects: where it is, what never to show, how to connect."""
        super().__init__()
        self._reserved: dict[str, ReservedIds] = {}  # table -> its ids reserved ahead
        self.location = redacted(url)
        self._url = url
        parts = self._parts(url)
        self._secrets = [s for s in (parts.get("password"), os.environ.get("PGPASSWORD"), *url_secrets(url)) if s]
        given = parts.get("options") or os.environ.get("PGOPTIONS", "")
        bound = "" if "lock_timeout" in given else f" -c lock_timeout={LOCK_TIMEOUT * 1000}"
        self._options = f"{given} -c search_path={SCHEMA}{bound}".strip()
        timeout_given = parts.get("connect_timeout") or os.environ.get("PGCONNECT_TIMEOUT")
        self._timeout = {} if timeout_given else {"connect_timeout": CONNECT_TIMEOUT}
        self._answer_timeout = _answer_timeout()
        self._listener: psycopg.Connection | None = None
        self._conn: _Connection | None = None  # connected on first use when the store was opened without it
        self._closed = False

    @staticmethod
    def _parts(url: str) -> dict[str, Any]:
        try:
            return conninfo.conninfo_to_dict(url)
        except psycopg.ProgrammingError:
            return {}

    def _connect(self) -> psycopg.Connection:
        """A connection whose search path names the store's schema from its start (the URL's or
        $PGOPTIONS's own options kept), not set by a statement: a round trip less to open."""
        try:
            raw = BoundedConnection.connect(self._url, autocommit=True, options=self._options, **self._timeout)
        except psycopg.Error as exc:
            raise self._unconnected(exc) from None
        raw.answer_timeout = self._answer_timeout
        raw.adapters.register_dumper(int, Int8Dumper)  # every id a bigint: a statement prepared once fits all
        return raw

    def _unconnected(self, exc: psycopg.Error) -> StoreError:
        return StoreError(f"{self.location}: cannot connect ({self._first_line(exc)})")

    @contextmanager
    def _guard(self) -> Iterator[Any]:
        """The connection, connected again first when it was lost: the write that met the loss
        raised (its run stops), and what comes next (recording how the run ended) can still land."""
        with self._lock:
            if self._closed:
                raise StoreError(f"{self.location}: the store is closed")
            if self._conn is None or self._lost(self._conn.raw):
                if self._conn is not None:  # replaced: the lost one closed, not left open for the process's life
                    with contextlib.suppress(psycopg.Error):
                        self._conn.close()
                self._conn = _Connection(self._connect())
            with super()._guard() as conn:
                yield conn

    def _lost(self, raw: psycopg.Connection) -> bool:
        """Whether the synchronous connection is known lost (a statement met the loss): connect again."""
        return raw.broken

    def _opening(self, create: bool) -> Plan[None]:
        """The plan that checks the store's schema, creating or upgrading it (`create`) when it is not
        there at this version: a store already there opens in one query, not a transaction of four (the
        tables and their version row commit together, so reading them needs no lock). A version this one
        cannot read is refused; an older one (or one without the writers' table), or no store, is made
        current under the creation lock. Either connection runs it: the synchronous one (`run`) or the
        asyncio store's (`_run_async`, which never holds the event loop)."""
        try:
            row = yield Query("SELECT value, to_regclass('jianmu.writers') FROM meta WHERE key = 'schema_version'",
                              want=ONE)
        except psycopg.errors.UndefinedTable:
            row = None
        except (psycopg.errors.ProgrammingError, psycopg.errors.DataError) as exc:
            if isinstance(exc, psycopg.errors.InsufficientPrivilege):
                raise
            # a `meta` without our columns, or of other types: another program's table, not a damaged store
            raise StoreError(f"{self.location}: not a checkpoint store (schema jianmu has a table meta of "
                             "another program)") from None
        if row is not None and self._version(row) >= SCHEMA_VERSION and row[1] is not None:
            return
        yield Query("BEGIN")
        try:
            yield Query("SELECT pg_advisory_xact_lock(?)", (_SCHEMA_LOCK,), ONE)
            found = yield Query("SELECT to_regclass('jianmu.meta'), to_regnamespace('jianmu')", want=ONE)
            if found[0] is None:
                if found[1] is not None and (yield Query(
                        "SELECT 1 FROM pg_tables WHERE schemaname = 'jianmu' LIMIT 1", want=ONE)):
                    raise StoreError(f"{self.location}: not a checkpoint store "
                                     "(schema jianmu holds other tables)")
                if not create:
                    raise StoreError(f"{self.location}: no checkpoint store in this database")
                for statement in filter(str.strip, _TABLES.split(";")):
                    yield Query(statement)
                yield Query("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                yield Query("INSERT INTO meta VALUES ('created', ?)", (repr(time.time()),))
            else:
                version = self._version((yield Query("SELECT value FROM meta WHERE key = 'schema_version'",
                                                     want=ONE)))
                yield from self._upgrading(version)
            yield Query(WRITERS_TABLE)  # (an older store gains it)
            yield Query("COMMIT")
        except BaseException:
            with contextlib.suppress(psycopg.Error):  # a lost connection: the error that got us here says why
                yield Query("ROLLBACK")
            raise

    def _first_line(self, exc: Exception) -> str:
        text = (str(exc).strip().splitlines() or [type(exc).__name__])[0].strip()
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return masked_url(text)  # a URL the driver could not read, quoted with what it holds

    def _explain(self, exc: Exception, raw: psycopg.BaseConnection | None = None) -> str:
        """One line for `exc`, met on `raw` (this store's own connection when None)."""
        raw = raw if raw is not None else self._conn.raw if self._conn is not None else None
        if isinstance(exc, NoAnswer):  # (its connection closed, as a lost one is: it says why)
            return f"{self.location}: {self._first_line(exc)}"
        if raw is None or raw.broken or raw.closed:
            return f"{self.location}: lost the connection to the PostgreSQL server ({self._first_line(exc)})"
        return f"{self.location}: {self._first_line(exc)}"

    @staticmethod
    def _item_values(text: str) -> tuple[str | None, bytes | None]:
        data = _item_data(text)
        return (data, None) if isinstance(data, str) else (None, data)

    def _item_insert(self, rows: Sequence[tuple[bytes, tuple]]) -> Query:
        """The items' INSERT answering the ids of those already stored too (another process's runs of the
        same texts: most of a run's items when its runs repeat a workload), in the same round trip, where
        a second statement looked them up. (Those it finds neither inserted nor stored before it began,
        another writer's committed meanwhile, are still looked up after it.)"""
        insert = super()._item_insert(rows)
        return Query(f"WITH new AS ({insert.sql}) SELECT hash, id FROM new UNION ALL "
                     f"SELECT hash, id FROM items WHERE hash IN ({','.join('?' * len(rows))})",
                     [*insert.params, *(key for key, _ in rows)], ALL, alone=True)

    def _usable(self) -> bool:
        return self._conn is not None and not (self._conn.raw.broken or self._conn.raw.closed)

    def _announce(self, run_id: str) -> Plan[None]:
        yield Query(NOTIFY, (CHANNEL, run_id))

    def _new_id(self, table: str) -> Plan[int]:
        ids = self._reserved.get(table)
        if ids is None:
            ids = self._reserved[table] = ReservedIds(table)
        return (yield from ids.take())

    def _renew_ids(self) -> None:
        for ids in self._reserved.values():
            ids.renew()

    def _fused(self, queries: Sequence[Query]) -> list[Query]:
        return fused(queries)

    def wait_for_change(self, timeout: float) -> bool:
        """Waits for a `NOTIFY` on the channel saves announce on (its own connection, opened
        on first use: call once before reading what is there, so nothing lands unheard)."""
        try:
            if self._listener is None:
                self._listener = self._connect()
                self._listener.execute(f"LISTEN {CHANNEL}")
                return True
            return any(True for _ in self._listener.notifies(timeout=timeout, stop_after=1))
        except psycopg.Error as exc:
            listener, self._listener = self._listener, None  # (the next wait connects again: a follower goes on)
            if listener is not None:
                listener.close()
            raise StoreError(f"{self.location}: lost the connection to the PostgreSQL server "
                             f"({self._first_line(exc)})") from None

    def close(self) -> None:
        with self._lock:
            self.close_writer()
            if self._listener is not None:
                self._listener.close()
            if self._conn is not None:
                self._conn.close()
            self._closed = True


__all__ = ["CHANNEL", "PostgresCheckpointStore", "redacted"]
