"""`SQLiteCheckpointStore`: the embedded default, one file the user can keep, copy and open later.

WAL journal, one transaction per save (a crash loses at most the tick in flight), a
versioned schema. Opening never overwrites or truncates anything: a file that is not a
checkpoint store, is corrupt, locked, or newer than this version reads is refused with
one line naming it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...engine.events import RuntimeEvent
from .model import Checkpoint, CheckpointInfo, CheckpointRecord, ListChunk, dumps, item_hash
from .store import CheckpointError, IORecord, RunSummary, StoreError

SCHEMA_VERSION = 1
_SQLITE_MAGIC = b"SQLite format 3\x00"

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE checkpoints(
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, branch TEXT NOT NULL,
    parent_id INTEGER, base_id INTEGER, tick INTEGER NOT NULL, time REAL NOT NULL,
    status TEXT NOT NULL, source TEXT NOT NULL, event_position INTEGER NOT NULL, data TEXT NOT NULL);
CREATE INDEX checkpoints_run ON checkpoints(run_id, branch, id);
CREATE INDEX checkpoints_base ON checkpoints(base_id, id);
CREATE TABLE items(id INTEGER PRIMARY KEY, hash TEXT NOT NULL UNIQUE, data TEXT NOT NULL);
CREATE TABLE chunks(list_id TEXT NOT NULL, start INTEGER NOT NULL, hashes TEXT NOT NULL,
    PRIMARY KEY(list_id, start)) WITHOUT ROWID;
CREATE TABLE events(id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, branch TEXT NOT NULL, seq INTEGER NOT NULL,
    type TEXT NOT NULL, tick INTEGER NOT NULL, node TEXT, time REAL NOT NULL, payload TEXT NOT NULL);
CREATE INDEX events_run ON events(run_id, id);
CREATE TABLE io(id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, branch TEXT NOT NULL, kind TEXT NOT NULL,
    node TEXT NOT NULL, round INTEGER NOT NULL, idx INTEGER NOT NULL, request TEXT NOT NULL,
    response TEXT, error TEXT, time REAL NOT NULL);
CREATE INDEX io_call ON io(run_id, kind, node, round, idx);
"""

_INFO = "id, run_id, branch, parent_id, tick, time, status, source, event_position"


class SQLiteCheckpointStore:
    def __init__(self, path: str | Path, *, create: bool = True):
        self.location = str(path)
        self._lock = threading.RLock()
        self._items: set[str] = set()  # item hashes known to be stored
        if self.location != ":memory:":
            self._check_file(Path(path), create)
        try:
            self._conn = sqlite3.connect(self.location, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(self._explain(exc)) from None
        with self._guard():
            self._conn.execute("PRAGMA busy_timeout = 2000")
            self._open_schema()
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")

    # -- opening -------------------------------------------------------------------
    def _check_file(self, path: Path, create: bool) -> None:
        if path.is_dir():
            raise StoreError(f"{path}: is a directory, not a checkpoint store")
        if not path.exists():
            if not create:
                raise StoreError(f"{path}: no such checkpoint store")
            return
        try:
            with path.open("rb") as f:
                head = f.read(len(_SQLITE_MAGIC))
        except OSError as exc:
            raise StoreError(f"{path}: cannot be read ({exc.strerror})") from None
        if head and head != _SQLITE_MAGIC:
            raise StoreError(f"{path}: not a checkpoint store (not an SQLite database)")

    def _open_schema(self) -> None:
        conn = self._conn
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    conn.execute(statement)
                conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                conn.execute("INSERT INTO meta VALUES ('created', ?)", (repr(time.time()),))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return
        if "meta" not in tables:
            raise StoreError(f"{self.location}: not a checkpoint store (an SQLite database with other tables)")
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.location}: written by a newer version (schema {version}; "
                             f"this version reads up to {SCHEMA_VERSION})")
        if version < 1:
            raise StoreError(f"{self.location}: not a checkpoint store (no schema version)")

    def _explain(self, exc: sqlite3.Error) -> str:
        text = str(exc)
        if "locked" in text or "busy" in text:
            return f"{self.location}: locked by another process ({text})"
        if "not a database" in text or "malformed" in text or "corrupt" in text:
            return f"{self.location}: corrupt checkpoint store ({text})"
        if "unable to open" in text or "readonly" in text:
            return f"{self.location}: cannot be opened ({text})"
        return f"{self.location}: {text}"

    @contextmanager
    def _guard(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise StoreError(self._explain(exc)) from None

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._guard() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- writing -------------------------------------------------------------------
    def _write_chunks(self, conn: sqlite3.Connection, chunks: Sequence[ListChunk]) -> set[str]:
        new: dict[str, str] = {}
        rows = []
        for chunk in chunks:
            hashes = []
            for text in chunk.items:
                h = item_hash(text)
                hashes.append(h)
                if h not in self._items:
                    new[h] = text
            rows.append((chunk.list_id, chunk.start, json.dumps(hashes)))
        if new:
            conn.executemany("INSERT OR IGNORE INTO items (hash, data) VALUES (?, ?)", new.items())
        if rows:
            conn.executemany("INSERT INTO chunks VALUES (?, ?, ?)", rows)
        return set(new)

    @staticmethod
    def _event_rows(events: Sequence[tuple[str, RuntimeEvent]]) -> list[tuple]:
        return [(e.run_id or "", branch, e.seq, e.type, e.tick, e.node, e.time, dumps(e.payload))
                for branch, e in events]

    def save(self, record: CheckpointRecord, events: Sequence[tuple[str, RuntimeEvent]] = ()) -> int:
        data = dumps({"s": record.statuses, "r": record.resume, "st": record.state,
                      "b": record.bindings, "w": record.wake})
        with self._transaction() as conn:
            new_items = self._write_chunks(conn, record.chunks)
            cursor = conn.execute(
                "INSERT INTO checkpoints (run_id, branch, parent_id, base_id, tick, time, status, source, "
                "event_position, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (record.run_id, record.branch, record.parent_id, record.base_id, record.tick, record.time,
                 record.status, record.source, record.event_position, data))
            checkpoint_id = cursor.lastrowid
            if record.full:
                conn.execute("UPDATE checkpoints SET base_id = id WHERE id = ?", (checkpoint_id,))
            if events:
                conn.executemany("INSERT INTO events (run_id, branch, seq, type, tick, node, time, payload) "
                                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", self._event_rows(events))
        self._items |= new_items
        return checkpoint_id

    def add_events(self, events: Sequence[tuple[str, RuntimeEvent]]) -> None:
        if events:
            with self._transaction() as conn:
                conn.executemany("INSERT INTO events (run_id, branch, seq, type, tick, node, time, payload) "
                                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", self._event_rows(events))

    def put_io(self, record: IORecord, chunks: Sequence[ListChunk] = ()) -> None:
        with self._transaction() as conn:
            new_items = self._write_chunks(conn, chunks)
            conn.execute(
                "INSERT INTO io (run_id, branch, kind, node, round, idx, request, response, error, time) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (record.run_id, record.branch, record.kind, record.node, record.round, record.index,
                 dumps(record.request), None if record.response is None else dumps(record.response),
                 None if record.error is None else dumps(record.error), time.time()))
        self._items |= new_items

    # -- reading -------------------------------------------------------------------
    def read_list(self, list_id: str, length: int) -> list[Any]:
        with self._guard() as conn:
            texts = [row[0] for row in conn.execute(
                "SELECT i.data FROM chunks c, json_each(c.hashes) j JOIN items i ON i.hash = j.value "
                "WHERE c.list_id = ? AND c.start < ? ORDER BY c.start, j.key", (list_id, length))]
        if len(texts) < length:
            raise StoreError(f"{self.location}: stored list {list_id} is incomplete "
                             f"({len(texts)} of {length} items)")
        return json.loads("[" + ",".join(texts[:length]) + "]")

    def get(self, checkpoint_id: int) -> Checkpoint:
        with self._guard() as conn:
            row = conn.execute("SELECT base_id FROM checkpoints WHERE id = ?", (checkpoint_id,)).fetchone()
            if row is None:
                raise CheckpointError(f"unknown checkpoint id {checkpoint_id} in {self.location}")
            rows = conn.execute(f"SELECT {_INFO}, data FROM checkpoints WHERE base_id = ? AND id <= ? "
                                "ORDER BY id", (row[0], checkpoint_id)).fetchall()
        statuses: dict[str, str] = {}
        resume: dict[str, Any] = {}
        entries: dict[str, dict[str, list]] = {}
        data: dict[str, Any] = {}
        for *_, text in rows:
            try:
                data = json.loads(text)
            except ValueError:
                raise StoreError(f"{self.location}: checkpoint {checkpoint_id} is corrupt") from None
            statuses.update(data["s"])
            for path, value in data["r"].items():
                if value is None:
                    resume.pop(path, None)
                else:
                    resume[path] = value
            for ns, changes in data["st"].items():
                target = entries.setdefault(ns, {})
                for key, entry in changes.items():
                    if entry[0] == "d":
                        target.pop(key, None)
                    else:
                        target[key] = entry
        state = {ns: {key: entry[1] if entry[0] == "v" else self.read_list(entry[1], entry[2])
                      for key, entry in values.items()} for ns, values in entries.items()}
        return Checkpoint(*rows[-1][:-1], statuses=statuses, resume=resume, state=state,
                          bindings=data["b"], wake=data["w"])

    def _infos(self, where: str, params: tuple, order: str = "id") -> list[CheckpointInfo]:
        with self._guard() as conn:
            rows = conn.execute(f"SELECT {_INFO} FROM checkpoints {where} ORDER BY {order}", params).fetchall()
        return [CheckpointInfo(*row) for row in rows]

    def list(self, run_id: str | None = None, branch: str | None = None) -> list[CheckpointInfo]:
        clauses, params = [], []
        if run_id is not None:
            clauses.append("run_id = ?")
            params.append(run_id)
        if branch is not None:
            clauses.append("branch = ?")
            params.append(branch)
        return self._infos("WHERE " + " AND ".join(clauses) if clauses else "", tuple(params))

    def latest(self, run_id: str, branch: str | None = None) -> CheckpointInfo | None:
        where = "WHERE run_id = ?" + (" AND branch = ?" if branch is not None else "")
        params = (run_id,) if branch is None else (run_id, branch)
        found = self._infos(where, params, "id DESC LIMIT 1")
        return found[0] if found else None

    def history(self, run_id: str, branch: str = "main") -> list[CheckpointInfo]:
        head = self.latest(run_id, branch)
        if head is None:
            return []
        by_id = {info.id: info for info in self.list(run_id)}
        out = []
        current: CheckpointInfo | None = head
        while current is not None:
            out.append(current)
            current = by_id.get(current.parent_id) if current.parent_id is not None else None
        return out

    def set_meta(self, key: str, value: str) -> None:
        """Remember a fact about the store's runs (for example which tree file a run came from)."""
        with self._transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def get_meta(self, key: str) -> str | None:
        with self._guard() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def branches(self, run_id: str) -> list[str]:
        with self._guard() as conn:
            return [row[0] for row in conn.execute(
                "SELECT branch FROM checkpoints WHERE run_id = ? GROUP BY branch ORDER BY min(id)", (run_id,))]

    def runs(self) -> list[RunSummary]:
        with self._guard() as conn:
            rows = conn.execute(
                "SELECT run_id, group_concat(DISTINCT branch), count(*), min(time), max(time), "
                "(SELECT status FROM checkpoints l WHERE l.run_id = c.run_id ORDER BY id DESC LIMIT 1) "
                "FROM checkpoints c GROUP BY run_id ORDER BY min(id)").fetchall()
        return [RunSummary(run_id, sorted(branches.split(",")), n, first, last, status)
                for run_id, branches, n, first, last, status in rows]

    def events(self, run_id: str) -> list[tuple[str, RuntimeEvent]]:
        with self._guard() as conn:
            rows = conn.execute("SELECT branch, seq, type, tick, node, time, payload FROM events "
                                "WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()
        return [(branch, RuntimeEvent(seq=seq, type=type_, tick=tick, node=node, time=t, run_id=run_id,
                                      payload=json.loads(payload)))
                for branch, seq, type_, tick, node, t, payload in rows]

    def get_io(self, run_id: str, kind: str, node: str, round: int, index: int,
               branch: str | None = None) -> IORecord | None:
        with self._guard() as conn:
            row = conn.execute(
                "SELECT branch, request, response, error FROM io WHERE run_id = ? AND kind = ? AND node = ? "
                "AND round = ? AND idx = ? ORDER BY branch = ? DESC, id DESC LIMIT 1",
                (run_id, kind, node, round, index, branch)).fetchone()
        if row is None:
            return None
        found_branch, request, response, error = row
        return IORecord(run_id, found_branch, kind, node, round, index, json.loads(request),
                        None if response is None else json.loads(response),
                        None if error is None else json.loads(error))


__all__ = ["SCHEMA_VERSION", "SQLiteCheckpointStore"]
