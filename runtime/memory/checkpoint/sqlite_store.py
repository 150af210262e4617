"""`SQLiteCheckpointStore`: the embedded default, one file the user can keep, copy and open later.

WAL journal, one transaction per save (a crash loses at most the tick in flight), a
versioned schema. Opening never overwrites or truncates anything: a file that is not a
checkpoint store, is corrupt, locked, or of another schema version is refused with one
line naming it.

What makes a file small (schema 2):

- Message-sized values are items, stored once by content (and deflated): a list's chunks, a
  recorded model reply (also the next message of the history), a tool result, a model config
  sent with every call all point at the same rows.
- Checkpoint deltas and event batches are deflate streams continued row by row (`_Streams`):
  a tick's events (about 1 KB) compress 2.4x alone but 5x with the window of the rows
  before them, deltas 1.6x alone but 8x. A chain of deltas is one stream from its full
  record, so a restore inflates exactly the rows it reads anyway.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ...engine.events import RuntimeEvent
from .model import Checkpoint, CheckpointInfo, CheckpointRecord, ListChunk, dumpb, dumps
from .runner_checkpoints import RecordsRuns
from .store import CheckpointError, IORecord, RunSummary, StoreError

SCHEMA_VERSION = 2
LOCK_TIMEOUT = 2.0  # seconds a write waits for another process's commit before it fails
_SQLITE_MAGIC = b"SQLite format 3\x00"
_BIG = 128  # a recorded request/response part whose JSON is at least this long is stored as an item
_DEFLATE = 256  # an item this long is stored deflated (a BLOB) when that is shorter

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE checkpoints(
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, branch TEXT NOT NULL,
    parent_id INTEGER, base_id INTEGER, tick INTEGER NOT NULL, time REAL NOT NULL,
    status TEXT NOT NULL, source TEXT NOT NULL, event_position INTEGER NOT NULL,
    stream INTEGER, data BLOB NOT NULL);
CREATE INDEX checkpoints_run ON checkpoints(run_id, branch, id);
CREATE INDEX checkpoints_base ON checkpoints(base_id, id);
CREATE TABLE items(id INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE, data NOT NULL);
CREATE TABLE chunks(list_id TEXT NOT NULL, start INTEGER NOT NULL, items TEXT NOT NULL,
    PRIMARY KEY(list_id, start)) WITHOUT ROWID;
CREATE TABLE events(id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, branch TEXT NOT NULL, stream INTEGER,
    data BLOB NOT NULL);
CREATE INDEX events_run ON events(run_id, id);
CREATE TABLE io(id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, branch TEXT NOT NULL, kind TEXT NOT NULL,
    node TEXT NOT NULL, round INTEGER NOT NULL, idx INTEGER NOT NULL, request TEXT NOT NULL,
    response TEXT, error TEXT, time REAL NOT NULL);
CREATE INDEX io_call ON io(run_id, kind, node, round, idx);
"""

_INFO = "id, run_id, branch, parent_id, tick, time, status, source, event_position"


def _decoding(method):
    """A read whose stored bytes do not decode (a damaged page, item or header) raises a
    `StoreError` naming the store, never an `IndexError` or `zlib.error` from deep inside."""

    @functools.wraps(method)
    def read(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError, zlib.error, RecursionError) as exc:
            raise StoreError(f"{self.location}: corrupt checkpoint store "
                             f"({type(exc).__name__}: {str(exc)[:200]})") from exc

    return read


def _hash(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=10).digest()


def _item_data(text: str) -> str | bytes:
    """What the items table holds for a JSON text: the text, or its raw deflate when shorter."""
    if len(text) < _DEFLATE:
        return text
    raw = text.encode()
    packed = zlib.compress(raw, 6, -15)
    return packed if len(packed) < len(raw) else text


def _item_text(data: str | bytes) -> str:
    return zlib.decompress(data, -15).decode() if isinstance(data, bytes) else data


class _Streams:
    """Open deflate streams, one per key (a run's events, a chain of deltas), continued row by row.

    Each row is one sync-flushed segment, so the rows of a stream, inflated in order from
    its first, give back exactly what was written. A stream lives as long as this store object
    (a reopened store starts new ones). A write takes its stream out and puts it back only
    once committed: after a failed transaction the next row starts a new stream instead of
    continuing a segment that was never stored.
    """

    LIMIT = 8  # open streams kept (a compressor holds about 256 KB)

    def __init__(self) -> None:
        self._open: dict[Any, tuple[int, Any]] = {}  # key -> (id of the stream's first row, compressor)

    def deflate(self, key: Any, data: bytes, pending: dict) -> tuple[int | None, bytes, Any]:
        """Continue stream `key` (None: start one) with `data`, taking it from `pending` (this
        transaction's streams) or the open ones: (its first row id, None for a new stream;
        the row's bytes; the compressor)."""
        found = key is not None and (pending.pop(key, None) or self._open.pop(key, None))
        stream, compressor = found or (None, zlib.compressobj(6, zlib.DEFLATED, -15))
        return stream, compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH), compressor

    def keep(self, pending: dict) -> None:
        self._open.update(pending)
        while len(self._open) > self.LIMIT:
            del self._open[next(iter(self._open))]


class SQLiteCheckpointStore(RecordsRuns):
    def __init__(self, path: str | Path, *, create: bool = True):
        self.location = str(path)
        self._lock = threading.RLock()
        self._items: dict[bytes, int] = {}  # content hash -> id of the items known to be stored
        self._streams = _Streams()
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

    # -- opening -------------------------------------------------------------------
    def _open(self, target: str, uri: bool) -> None:
        try:
            self._conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False, uri=uri)
        except sqlite3.Error as exc:
            raise StoreError(self._explain(exc)) from None
        try:
            with self._guard():
                self._conn.execute(f"PRAGMA busy_timeout = {int(LOCK_TIMEOUT * 1000)}")
                self._open_schema()
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
        try:
            with path.open("rb") as f:
                head = f.read(len(_SQLITE_MAGIC))
        except OSError as exc:
            raise StoreError(f"{path}: cannot be read ({exc.strerror})") from None
        if head and head != _SQLITE_MAGIC:
            raise StoreError(f"{path}: not a checkpoint store (not an SQLite database)")

    @_decoding
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
        if version < SCHEMA_VERSION:
            raise StoreError(f"{self.location}: written by an older version (schema {version}; this version "
                             f"reads schema {SCHEMA_VERSION}): open it with that version, or move it aside")

    def _explain(self, exc: sqlite3.Error) -> str:
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

    @contextmanager
    def _guard(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise StoreError(self._explain(exc)) from None

    @contextmanager
    def _transaction(self) -> Iterator[tuple[sqlite3.Connection, dict, dict]]:
        """(connection, items added, streams continued): both known to this object once committed."""
        with self._guard() as conn:
            items: dict[bytes, int] = {}
            streams: dict[Any, tuple[int, Any]] = {}
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn, items, streams
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            self._items.update(items)
            self._streams.keep(streams)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- writing -------------------------------------------------------------------
    def _item_ids(self, conn: sqlite3.Connection, texts: Iterable[str], added: dict[bytes, int]) -> list[int]:
        """The ids of items (JSON texts), storing those not stored yet."""
        ids = []
        for text in texts:
            key = _hash(text)
            item_id = self._items.get(key) or added.get(key)
            if item_id is None:
                row = conn.execute("INSERT INTO items (hash, data) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING "
                                   "RETURNING id", (key, _item_data(text))).fetchone()
                if row is None:  # stored by another store object
                    row = conn.execute("SELECT id FROM items WHERE hash = ?", (key,)).fetchone()
                item_id = added[key] = row[0]
            ids.append(item_id)
        return ids

    def _write_chunks(self, conn: sqlite3.Connection, chunks: Sequence[ListChunk], added: dict[bytes, int]) -> None:
        conn.executemany("INSERT INTO chunks VALUES (?, ?, ?)", [
            (chunk.list_id, chunk.start, json.dumps(self._item_ids(conn, chunk.items, added))) for chunk in chunks])

    def _streamed(self, conn: sqlite3.Connection, streams: dict, key: Any, sql: str, params: tuple,
                  data: bytes) -> tuple[int, tuple[int, Any]]:
        """Insert a row whose last two columns are (stream, data), continuing the stream `key`
        (None: a new one); returns the row id and the stream, for the caller to keep under the
        key its next row will continue."""
        stream, blob, compressor = self._streams.deflate(key, data, streams)
        row_id = conn.execute(sql, (*params, stream, blob)).lastrowid
        return row_id, (stream or row_id, compressor)

    def _write_events(self, conn: sqlite3.Connection, streams: dict,
                      events: Sequence[tuple[str, RuntimeEvent]]) -> None:
        for (run_id, branch), group in itertools.groupby(events, lambda pair: (pair[1].run_id or "", pair[0])):
            data = dumpb([[e.seq, e.type, e.tick, e.node, e.time, e.payload] for _, e in group])
            key = ("events", run_id)
            _, streams[key] = self._streamed(conn, streams, key, "INSERT INTO events (run_id, branch, stream, data) "
                                             "VALUES (?, ?, ?, ?)", (run_id, branch), data)

    def save(self, record: CheckpointRecord, events: Sequence[tuple[str, RuntimeEvent]] = ()) -> int:
        data = dumpb({"s": record.statuses, "r": record.resume, "st": record.state,
                      "b": record.bindings, "w": record.wake})
        with self._transaction() as (conn, items, streams):
            self._write_chunks(conn, record.chunks, items)
            checkpoint_id, stream = self._streamed(
                conn, streams, None if record.full else ("chain", record.base_id),
                "INSERT INTO checkpoints (run_id, branch, parent_id, base_id, tick, time, status, source, "
                "event_position, stream, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (record.run_id, record.branch, record.parent_id, record.base_id, record.tick, record.time,
                 record.status, record.source, record.event_position), data)
            if record.full:
                conn.execute("UPDATE checkpoints SET base_id = id WHERE id = ?", (checkpoint_id,))
            streams[("chain", record.base_id or checkpoint_id)] = stream
            self._write_events(conn, streams, events)
        return checkpoint_id

    def add_events(self, events: Sequence[tuple[str, RuntimeEvent]]) -> None:
        if events:
            with self._transaction() as (conn, _, streams):
                self._write_events(conn, streams, events)

    def _pack(self, conn: sqlite3.Connection, value: Any, added: dict[bytes, int]) -> str:
        """JSON `[value, refs]` of a recorded value whose big parts are items: refs is the item id
        of the whole value (then value is null) or {key: item id} for big values of a dict."""
        if isinstance(value, dict):
            texts = {key: dumps(part) for key, part in value.items()}
            big = [key for key, text in texts.items() if len(text) >= _BIG]
            ids = self._item_ids(conn, (texts[key] for key in big), added)
            return dumps([{key: None if key in big else part for key, part in value.items()}, dict(zip(big, ids, strict=True))])
        text = dumps(value)
        if len(text) >= _BIG:
            return dumps([None, self._item_ids(conn, [text], added)[0]])
        return dumps([value, {}])

    def put_io(self, record: IORecord, chunks: Sequence[ListChunk] = ()) -> None:
        with self._transaction() as (conn, items, _):
            self._write_chunks(conn, chunks, items)
            conn.execute(
                "INSERT INTO io (run_id, branch, kind, node, round, idx, request, response, error, time) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (record.run_id, record.branch, record.kind, record.node, record.round, record.index,
                 self._pack(conn, record.request, items),
                 None if record.response is None else self._pack(conn, record.response, items),
                 None if record.error is None else dumps(record.error), time.time()))

    # -- reading -------------------------------------------------------------------
    def _inflate(self, rows: Iterable[tuple[int, int | None, bytes]], what: str) -> list[Any]:
        """The JSON values written into (row id, stream, data) rows, read in id order from each
        stream's first; a damaged row is named (`what` and its id)."""
        decoders: dict[int, Any] = {}
        out = []
        for row_id, stream, data in rows:
            try:
                decoder = decoders[row_id] = zlib.decompressobj(-15) if stream is None else decoders[stream]
                out.append(json.loads(decoder.decompress(data)))
            except (KeyError, zlib.error, ValueError):
                raise StoreError(f"{self.location}: {what} {row_id} is corrupt") from None
        return out

    @_decoding
    def read_list(self, list_id: str, length: int) -> list[Any]:
        with self._guard() as conn:
            texts = [_item_text(row[0]) for row in conn.execute(
                "SELECT i.data FROM chunks c, json_each(c.items) j JOIN items i ON i.id = j.value "
                "WHERE c.list_id = ? AND c.start < ? ORDER BY c.start, j.key", (list_id, length))]
        if len(texts) < length:
            raise StoreError(f"{self.location}: stored list {list_id} is incomplete "
                             f"({len(texts)} of {length} items)")
        return json.loads("[" + ",".join(texts[:length]) + "]")

    @_decoding
    def get(self, checkpoint_id: int, *, read_lists: bool = True) -> Checkpoint:
        """The whole checkpoint; with `read_lists=False` its stored lists are left out of `state`
        (`lists` says where they are) for a caller that keeps them decoded."""
        with self._guard() as conn:
            row = None if checkpoint_id.bit_length() > 63 else conn.execute(  # beyond SQLite's integers
                "SELECT base_id FROM checkpoints WHERE id = ?", (checkpoint_id,)).fetchone()
            if row is None:
                raise CheckpointError(f"unknown checkpoint id {checkpoint_id} in {self.location}")
            rows = conn.execute(f"SELECT {_INFO}, stream, data FROM checkpoints WHERE base_id = ? AND id <= ? "
                                "ORDER BY id", (row[0], checkpoint_id)).fetchall()
        statuses: dict[str, str] = {}
        resume: dict[str, Any] = {}
        entries: dict[str, dict[str, list]] = {}
        data: dict[str, Any] = {}
        for data in self._inflate(((r[0], r[-2], r[-1]) for r in rows), "checkpoint"):
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
        state: dict[str, dict[str, Any]] = {}
        lists: dict[str, dict[str, list]] = {}
        for ns, values in entries.items():
            state[ns] = {}
            for key, entry in values.items():
                if entry[0] == "v":
                    state[ns][key] = entry[1]
                else:
                    lists.setdefault(ns, {})[key] = entry[1:]
                    if read_lists:
                        state[ns][key] = self.read_list(entry[1], entry[2])
        return Checkpoint(*rows[-1][:-2], statuses=statuses, resume=resume, state=state,
                          bindings=data["b"], wake=data["w"], lists=lists)

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
        with self._transaction() as (conn, _, _):
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def get_meta(self, key: str) -> str | None:
        with self._guard() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def branches(self, run_id: str) -> list[str]:
        with self._guard() as conn:
            return [row[0] for row in conn.execute(
                "SELECT branch FROM checkpoints WHERE run_id = ? GROUP BY branch ORDER BY min(id)", (run_id,))]

    @_decoding
    def runs(self) -> list[RunSummary]:
        with self._guard() as conn:
            rows = conn.execute(
                "SELECT run_id, group_concat(DISTINCT branch), count(*), min(time), max(time), "
                "(SELECT status FROM checkpoints l WHERE l.run_id = c.run_id ORDER BY id DESC LIMIT 1) "
                "FROM checkpoints c GROUP BY run_id ORDER BY min(id)").fetchall()
        return [RunSummary(run_id, sorted(branches.split(",")), n, first, last, status)
                for run_id, branches, n, first, last, status in rows]

    @_decoding
    def events(self, run_id: str) -> list[tuple[str, RuntimeEvent]]:
        with self._guard() as conn:
            rows = conn.execute("SELECT id, branch, stream, data FROM events WHERE run_id = ? ORDER BY id",
                                (run_id,)).fetchall()
        batches = self._inflate(((r[0], r[2], r[3]) for r in rows), "event batch")
        return [(branch, RuntimeEvent(seq=seq, type=type_, tick=tick, node=node, time=t, run_id=run_id,
                                      payload=payload))
                for (_, branch, _, _), batch in zip(rows, batches, strict=True)
                for seq, type_, tick, node, t, payload in batch]

    def _item(self, conn: sqlite3.Connection, item_id: int) -> Any:
        row = conn.execute("SELECT data FROM items WHERE id = ?", (item_id,)).fetchone()
        if row is None:
            raise StoreError(f"{self.location}: recorded item {item_id} is missing")
        return json.loads(_item_text(row[0]))

    def _unpack(self, conn: sqlite3.Connection, text: str) -> Any:
        value, refs = json.loads(text)
        if isinstance(refs, int):
            return self._item(conn, refs)
        for key, item_id in refs.items():
            value[key] = self._item(conn, item_id)
        return value

    @_decoding
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
            return IORecord(run_id, found_branch, kind, node, round, index, self._unpack(conn, request),
                            None if response is None else self._unpack(conn, response),
                            None if error is None else json.loads(error))


__all__ = ["SCHEMA_VERSION", "SQLiteCheckpointStore"]
