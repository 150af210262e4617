"""`SQLiteCheckpointStore`: the embedded default, one file the user can keep, copy and open later.

WAL journal, one transaction per save (a crash loses at most the tick in flight), a
versioned schema. Its saves are short synchronous commits; `ThreadedSQLiteCheckpointStore` (what
`open_store(FILE, asynchronous=True)` opens) commits a running run's in a writer thread instead.
Opening never overwrites or truncates anything: a file that is not a checkpoint store, is
corrupt, locked, or of another schema version is refused with one line naming it. What is stored and how (the schema version) is `sql_store.py`'s; this module connects
and speaks SQLite.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from ...engine.loop_share import take_turn
from .awaited_writes import AwaitedWrites
from .liveness import WRITERS_TABLE
from .sql_plan import Plan, run
from .sql_store import SCHEMA_VERSION, SQLCheckpointStore, _decoding, _item_data
from .store import StoreError

T = TypeVar("T")

LOCK_TIMEOUT = 15.0  # seconds a write waits for another process's commit (longer than a large one) before it fails
_SQLITE_MAGIC = b"SQLite format 3\x00"
_POLL = 0.1  # seconds between looks at another writer's commits (`wait_for_change`)

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE checkpoints(
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, branch TEXT NOT NULL,
    parent_id INTEGER, base_id INTEGER, tick INTEGER NOT NULL, time REAL NOT NULL,
    status TEXT NOT NULL, source TEXT NOT NULL, event_position INTEGER NOT NULL,
    stream INTEGER, data BLOB NOT NULL);
CREATE INDEX checkpoints_run ON checkpoints(run_id, id);
CREATE TABLE items(id INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE, data NOT NULL);
CREATE TABLE chunks(list_id TEXT NOT NULL, start INTEGER NOT NULL, items TEXT NOT NULL,
    PRIMARY KEY(list_id, start)) WITHOUT ROWID;
CREATE TABLE events(id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, branch TEXT NOT NULL, stream INTEGER,
    data BLOB NOT NULL);
CREATE INDEX events_run ON events(run_id, id);
CREATE TABLE io(id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, branch TEXT NOT NULL, kind TEXT NOT NULL,
    node TEXT NOT NULL, round INTEGER NOT NULL, idx INTEGER NOT NULL, request TEXT NOT NULL,
    response TEXT, error TEXT, time REAL NOT NULL);
CREATE INDEX io_call ON io(run_id, round, idx);
"""
_UPGRADES = {3: "DROP INDEX checkpoints_base; DROP INDEX io_call; CREATE INDEX io_call ON io(run_id, round, idx)",
             # a run's checkpoints after one (what a step lists, twice) sought, not the run's scanned: 0.4 ms at 4,000
             4: "DROP INDEX checkpoints_run; CREATE INDEX checkpoints_run ON checkpoints(run_id, id)",
             5: "", 6: "", 7: ""}  # schemas 6 to 8 only add a record form, row forms (sql_store.SCHEMA_VERSION)
OLDEST_UPGRADED = min(_UPGRADES)  # the oldest schema this version opens (and upgrades in place)


class SQLiteCheckpointStore(SQLCheckpointStore):
    _DRIVER_ERROR = sqlite3.Error
    _BEGIN = "BEGIN IMMEDIATE"
    _ITEM_INSERT = "hash, data"
    _ITEM_COLUMNS = "i.data"
    _BRANCHES = "group_concat(DISTINCT branch)"
    _UPGRADES = _UPGRADES

    def __init__(self, path: str | Path, *, create: bool = True):
        super().__init__()
        self.location = str(path)
        self.read_only = False  # a store this process may not write opens for viewing only
        if self.location != ":memory:":
            self._check_file(Path(path), create)
        try:
            self._open(self.location, uri=False)
        except StoreError:
            if self.location == ":memory:" or not Path(path).exists() or os.access(path, os.W_OK):
                raise
            self.read_only = True  # a file (or folder) this process may only read: open it for viewing
            uri = f"file:{quote(str(Path(path).resolve()))}"
            try:
                self._open(f"{uri}?mode=ro", uri=True)  # sees a live writer's WAL, if it can share its -shm
            except StoreError:
                self._open(f"{uri}?immutable=1", uri=True)  # a read-only folder: the file as it is
        self._seen_version = self._data_version()

    # -- opening -------------------------------------------------------------------
    def _open(self, target: str, uri: bool) -> None:
        try:
            self._conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False, uri=uri)
        except sqlite3.Error as exc:
            raise StoreError(self._explain(exc)) from None
        try:
            with self._guard():
                self._conn.execute(f"PRAGMA busy_timeout = {int(LOCK_TIMEOUT * 1000)}")
                self._open_schema(read_only=uri)
                if not uri:
                    self._conn.execute("PRAGMA journal_mode = WAL")
                    self._conn.execute("PRAGMA synchronous = NORMAL")
        except StoreError:
            self._conn.close()
            raise

    def _check_file(self, path: Path, create: bool) -> None:
        if path.is_dir():
            raise StoreError(f"{path}: is a directory, not a checkpoint store")
        if not path.exists():
            if not create:
                raise StoreError(f"{path}: no such checkpoint store")
            return
        if not path.is_file():  # reading a pipe's first bytes would wait for a writer forever
            raise StoreError(f"{path}: not a regular file (a pipe, device or socket), not a checkpoint store")
        try:
            with path.open("rb") as f:
                head = f.read(len(_SQLITE_MAGIC))
        except OSError as exc:
            raise StoreError(f"{path}: cannot be read ({exc.strerror})") from None
        if head and head != _SQLITE_MAGIC:
            raise StoreError(f"{path}: not a checkpoint store (not an SQLite database)")
        if not head and not create:  # a reader (`list`, `replay`) never writes a schema into a file it was shown
            raise StoreError(f"{path}: an empty file, not a checkpoint store (nothing was recorded in it)")

    @_decoding
    def _open_schema(self, read_only: bool) -> None:
        """Create the tables in an empty file; check the version of a store, upgrading an older one
        and adding the writers' table it lacks (a store opened read-only is read as it is: schema 3's
        rows read the same as 4's, and its runs have no writers)."""
        conn = self._conn
        tables = self._tables()
        self._writers_table = "writers" in tables
        if not tables or not read_only and "meta" in tables and (
                not self._writers_table or self._version(self._schema_row()) < SCHEMA_VERSION):
            conn.execute("BEGIN IMMEDIATE")
            try:
                tables = self._tables()  # another writer may have created or upgraded them while we waited
                if not tables:
                    for statement in filter(str.strip, _SCHEMA.split(";")):
                        conn.execute(statement)
                    conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                    conn.execute("INSERT INTO meta VALUES ('created', ?)", (repr(time.time()),))
                elif (version := self._version(self._schema_row())) < SCHEMA_VERSION:
                    self._upgrade(conn, version)
                conn.execute(WRITERS_TABLE)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            self._writers_table = True
            if not tables:
                return
        if "meta" not in tables:
            raise StoreError(f"{self.location}: not a checkpoint store (an SQLite database with other tables)")
        self._version(self._schema_row())

    def _schema_row(self) -> tuple[str] | None:
        try:
            return self._conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.OperationalError as exc:  # a `meta` without our columns: another program's table
            if "no such column" not in str(exc):
                raise
            raise StoreError(f"{self.location}: not a checkpoint store (an SQLite database whose table meta "
                             "is another program's)") from None

    def _tables(self) -> set[str]:
        return {row[0] for row in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _explain(self, exc: Exception) -> str:
        text = str(exc)
        if "locked" in text or "busy" in text:
            return f"{self.location}: locked by another process ({text})"
        if "not a database" in text or "malformed" in text or "corrupt" in text:
            return f"{self.location}: corrupt checkpoint store ({text})"
        if "readonly" in text or "read-only" in text:
            return (f"{self.location}: read-only ({text}): it opens for viewing (list, show, replay), "
                    "not for recording")
        if "unable to open" in text:
            return f"{self.location}: cannot be opened ({text})"
        return f"{self.location}: {text}"

    @staticmethod
    def _item_values(text: str) -> tuple[str | bytes]:
        return (_item_data(text),)

    def _announce(self, run_id: str) -> Plan[None]:
        """Nothing to send: followers see the commit in `data_version` (`wait_for_change`)."""
        yield from ()

    def _data_version(self) -> int:
        with self._guard() as conn:
            return conn.execute("PRAGMA data_version").fetchone()[0]

    def wait_for_change(self, timeout: float) -> bool:
        """Polls SQLite's `data_version`, which moves when another connection commits."""
        deadline = time.monotonic() + timeout
        while True:
            version = self._data_version()
            if version != self._seen_version:
                self._seen_version = version
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(_POLL, max(0.0, deadline - time.monotonic())))


class ThreadedSQLiteCheckpointStore(AwaitedWrites, SQLiteCheckpointStore):
    """`SQLiteCheckpointStore` with `save_async`, `add_events_async` and `put_io_async`, which a runner
    recording into it awaits (`RunnerCheckpoints`, as the asyncio PostgreSQL store's): the record is
    encoded in the caller's thread, and its statements and commit run in the store's one writer
    thread, in the order asked. The event loop runs other work meanwhile: the commit, a checkpoint of
    the WAL and a wait for another process's lock (up to `LOCK_TIMEOUT`) no longer hold it. Every write
    (the synchronous ones a script or a studio makes too) goes over the writer's own connection, one
    at a time; reads over the store's: in WAL mode a reader never waits for a writer, so a read from
    the loop's thread does not wait out the writer's wait for a lock. (An in-memory or read-only
    store has one connection: its reads and writes take turns.)"""

    def __init__(self, path: str | Path, *, create: bool = True):
        self._writer: ThreadPoolExecutor | None = None
        self._writing: sqlite3.Connection | None = None  # the writes' connection, opened on the first
        self._write_lock = threading.Lock()
        self._closed = False
        super().__init__(path, create=create)

    def _run(self, plan: Plan[T]) -> T:
        """A write's plan over the writer's connection (`_writing_connection`)."""
        if self.read_only or self.location == ":memory:":
            return super()._run(plan)
        with self._write_lock:
            self._refuse_if_closed(plan)
            try:
                if self._writing is None:
                    self._writing = self._writing_connection()
                return run(plan, self._writing.execute)
            except sqlite3.Error as exc:
                raise StoreError(self._explain(exc)) from None

    def _refuse_if_closed(self, plan: Plan[Any]) -> None:
        if self._closed:
            plan.close()
            raise StoreError(f"{self.location}: the store is closed")

    def _writing_connection(self) -> sqlite3.Connection:
        """A second connection to the file, set up as the store's (the WAL journal is the file's own)."""
        conn = sqlite3.connect(self.location, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(LOCK_TIMEOUT * 1000)}")
        conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    async def _run_async(self, plan: Plan[T]) -> T:
        self._refuse_if_closed(plan)  # (its writer thread is gone)
        if self._writer is None:
            self._writer = ThreadPoolExecutor(1, thread_name_prefix=f"jianmu-writer-{Path(self.location).name}")
        written = await asyncio.get_running_loop().run_in_executor(self._writer, self._run, plan)
        if (turn := take_turn()) is not None:  # writes end together: what follows each takes its turn
            await turn
        return written

    def close(self) -> None:
        if self._closed:
            return
        if self._writer is not None:  # (its writes asked for land first)
            self._writer.shutdown()
        self.close_writer()  # (a write: before the base's, which holds the reads' lock, as a write never does first)
        super().close()
        with self._write_lock:
            self._closed = True
            if self._writing is not None:
                self._writing.close()


__all__ = ["OLDEST_UPGRADED", "SCHEMA_VERSION", "SQLiteCheckpointStore", "ThreadedSQLiteCheckpointStore"]
