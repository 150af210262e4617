"""`SQLCheckpointStore`: what the SQLite and PostgreSQL stores share — records, encoding, queries.

The concrete stores (`sqlite_store.py`, `postgres_store.py`) only connect, create and check
their schema, explain their driver's errors in one line, and give the few statements their
SQL dialects spell differently. Queries here are written with `?` placeholders.

What makes a store small:

- Message-sized values are items, stored once by content (and deflated): a list's chunks, a
  recorded model reply (also the next message of the history), a tool result, a model config
  sent with every call all point at the same rows. A tool's result and the message carrying
  it in the history share one too: the message is stored as the result spliced into the rest
  of its text (schema 4).
- Checkpoint records and event batches are deflated row by row, each row on its own with a preset
  dictionary and a checksum, and a checkpoint's row carries its parent's record too, a full record's
  child its own delta (`row_codec.py`, schema 8): a damaged row, delta or full, costs its checkpoint
  or batch, never the rows after it (the streams continued row by row before cost every later row of a
  chain). A delta's row is deflated against the deltas before it, which a reader has in two rows.
- A tick's telemetry (tick.started, a node.status per changed node, tick.completed) is not
  stored as events: the record keeps how the runner numbered them, its status delta gives
  the changes, and `events()` rebuilds them where a `[checkpoint id]` marker ends the
  tick's event batch (schema 3).
- A large tree's paths are stored once (`TreePaths`, `paths:<hash>` in `meta`, written when a
  checkpointer attaches): its records hold its statuses packed, one letter a node, as the runs
  that differ from the previous record's (`sp`, schema 6, `statuses.py`). A schema-5 store's
  full records (`p` without `sp`) list only the statuses that are not INVALID, its deltas map
  paths to statuses; records without `p` (a small tree's) list every status. `ChainStatuses`
  reads all of these, for every reader of a record's statuses.
- A tick's returns (what each node returned, in order) are one entry of its record, `rt`,
  encoded against the previous record's (`returns.py`): no row per node. A record without it
  (an older store's) has no returns, and reads as before: the schema is unchanged.

Run metadata (`run:<id>` in `meta`: host, pid, start, how it ended, which writer writes it now) is
written by the store itself, from a run's first checkpoint and its lifecycle events, in the same
transaction, so every writer records it (a replay of the run elsewhere keeps where it first ran,
and claims the run for its own writer). Writers and their heartbeats (the `writers` table, added to
an older store when it is opened for writing) are `liveness.py`'s.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import os
import threading
import time
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple, TypeVar

from pydantic_core import from_json

from ...engine.events import EventType, RuntimeEvent
from ...engine.record import telemetry_events
from .facts_written import FactsWritten
from .liveness import PIGGYBACK, WRITER_COLUMNS, heartbeats, this_process
from .model import (
    Checkpoint,
    CheckpointInfo,
    CheckpointRecord,
    ListChunk,
    TreePaths,
    dumpb,
    dumpb_telemetry,
    dumps,
)
from .returns import ReturnsReader
from .row_codec import OF_PREVIOUS, STANDALONE, Carried, Row, context_of, decode_row, encode_row
from .runner_checkpoints import RecordsRuns
from .sql_plan import ALL, COUNT, NOTHING, ONE, Plan, Query, run
from .statuses import ChainStatuses
from .store import CheckpointError, IORecord, RunSummary, StoreError, Writer

SCHEMA_VERSION = 8  # of the tables and their encoding, in either store (4: fewer, narrower indexes; spliced
# items; 5: a large tree's full records list only statuses not INVALID, which an older reader would show as a
# tree of a few nodes: it refuses the store instead; SQLite seeks a run's checkpoints after one by (run, id);
# 6: a large tree's statuses packed, `sp`, which an older reader would not see: the tables are the same;
# 7: each row deflated on its own, a delta's carrying the delta before it, `row_codec.py`: the same tables;
# 8: every row carries its parent's record, a full one its own delta, whose row names what it is a delta of)
_BIG = 128  # a recorded request/response part whose JSON is at least this long is stored as an item
_DEFLATE = 256  # an item this long is stored deflated (bytes) when that is shorter
_SPLICE = "\x01"  # starts an item stored as another spliced into its text (`_spliced`, schema 4)
_LOOKUP = 16  # unknown items in one write from which they are looked up first, in one query ...
_LOOKUP_MAX = 500  # ... of at most this many
_LISTS_KEPT = 64  # stored lists whose item ids a store keeps read
_CHAIN_LEVEL = 1  # deflate level of a large checkpoint row: a 100k-node full record in 40 ms, not 350 (6% larger) ...
_LARGE_ROW = 65_536  # ... a row of this many bytes before deflate; a smaller one at level 6 (13% smaller rows, each ~0.1 ms)
_CONTEXT = 3  # deltas of its chain a checkpoint row is deflated against (a ReAct run's rows: 237 -> 165 KB)
_KNOWN = 256  # records a reading of a run's events keeps, for the rows deflated against them
_CHAINS_READ = 8  # chains whose statuses a reading of a run's events keeps (a large tree's: 110,000 letters)
_TREES_KEPT = 4  # large trees' paths (`TreePaths`) a store keeps, as written or read
_INFO = "id, run_id, branch, parent_id, tick, time, status, source, event_position"
_CHAIN = ", ".join(f"c.{column}" for column in (*_INFO.split(", "), "base_id", "stream", "data"))  # a chain's rows, `c`
CHAIN_READ = (f"SELECT {_CHAIN} FROM checkpoints h JOIN checkpoints c ON c.id BETWEEN h.base_id AND h.id "
              "AND c.base_id = h.base_id WHERE h.id = ? ORDER BY c.id")  # a checkpoint's chain, oldest row first
_ENDINGS = {EventType.RUN_COMPLETED: "completed", EventType.RUN_FAILED: "failed",
            EventType.RUN_SUSPENDED: "suspended"}
_LIFECYCLE = frozenset({EventType.RUN_STARTED, EventType.APPROVAL_RESOLVED, *_ENDINGS})


T = TypeVar("T")


@dataclass
class _Tx:
    """What one write transaction added, known to the store object once it commits: items by
    content hash, the records it wrote as their children's rows carry them, the runs its writer claimed,
    the runs' facts it writes at its end (`meta` key -> the text it replaces, its own: `facts_written.py`)."""

    items: dict[bytes, int] = field(default_factory=dict)
    kept: dict[int, _Line] = field(default_factory=dict)
    claiming: set[str] = field(default_factory=set)
    facts: dict[str, tuple[str | None, str]] = field(default_factory=dict)


def _statements(*queries: Query) -> Plan[None]:
    """A plan of statements whose results nobody reads."""
    yield from queries


def _decoding(method):
    """A read whose stored bytes do not decode (a damaged page, item or header) raises a
    `StoreError` naming the store, never an `IndexError` or `zlib.error` from deep inside."""

    @functools.wraps(method)
    def read(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except _UNDECODABLE as exc:
            raise _corrupt(self, exc) from exc

    return read


def _decoded(store: Any, plan: Plan[T]) -> Plan[T]:
    """`_decoding` for a read's plan (the asyncio store runs it over its own connections): what the plan
    raises as it reads the rows is damage; a driver refusing a parameter as it sends a statement (a
    `TypeError`, a `UnicodeEncodeError`) is the question's fault, and said so."""
    send, value, met = plan.send, None, None
    while True:
        try:
            query = send(value)
        except StopIteration as stop:
            return stop.value
        except _UNDECODABLE as exc:
            if exc is met:
                raise StoreError(f"{store.location}: a value asked about cannot be sent "
                                 f"({type(exc).__name__}: {str(exc)[:200]})") from exc
            raise _corrupt(store, exc) from exc
        try:
            send, value, met = plan.send, (yield query), None
        except GeneratorExit:
            plan.close()
            raise
        except BaseException as exc:
            send, value, met = plan.throw, exc, exc


_UNDECODABLE = (ValueError, KeyError, IndexError, TypeError, AttributeError, zlib.error, RecursionError)


def _corrupt(store: Any, exc: Exception) -> StoreError:
    return StoreError(f"{store.location}: corrupt checkpoint store ({type(exc).__name__}: {str(exc)[:200]})")


_FACT_TYPES = {"started": (int, float), "host": str, "pid": int, "writer": str, "ended": str,
               "ended_at": (int, float), "released": (int, float)}


def run_facts(text: str | None) -> dict[str, Any]:
    """A run's facts (`run:<id>` in meta); a damaged row, or a fact of the wrong type, reads as nothing
    known, so the damage stays there: the store's other runs are still listed, the run still read."""
    try:
        facts = json.loads(text) if text else {}
    except ValueError:
        return {}
    if not isinstance(facts, dict):
        return {}
    return {key: value for key, value in facts.items()
            if key not in _FACT_TYPES or isinstance(value, _FACT_TYPES[key]) and not isinstance(value, bool)}


def _hash(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=10).digest()


def _item_data(text: str) -> str | bytes:
    """How an item (a JSON text) is stored: the text, or its raw deflate when shorter."""
    if len(text) < _DEFLATE:
        return text
    raw = text.encode()
    packed = zlib.compress(raw, 6, -15)
    return packed if len(packed) < len(raw) else text


def _spliced(text: str, known: Callable[[bytes], int | None]) -> str:
    """How an item is stored: a message whose `content` is an item already stored (a tool's result,
    recorded when the tool returned, then carried by the message the history gains) as that item
    spliced into the rest, `\x01id\x01before\x01after` (no JSON text holds a raw \x01): the
    result is stored once, not twice (~110 KB of bench/checkpoint_growth.py's 450 KB run)."""
    if len(text) < _DEFLATE or not text.startswith("{") or '"content":' not in text:  # parse messages only
        return text
    content = from_json(text).get("content")
    if not isinstance(content, str) or len(content) < _BIG:
        return text
    part = dumps(content)
    item_id = known(_hash(part))
    at = text.find(part)
    if item_id is None or at < 0:
        return text
    return f"{_SPLICE}{item_id}{_SPLICE}{text[:at]}{_SPLICE}{text[at + len(part):]}"


def _record_json(record: CheckpointRecord, statuses: dict[str, str], resume: dict[str, Any],
                 state: dict[str, dict[str, list]], packed: list | None, tree: TreePaths | None = None) -> bytes:
    """The JSON a checkpoint row stores of `record` (or of its own delta: `CheckpointRecord.step`)."""
    return dumpb({"s": statuses, "r": resume, "st": state, "b": record.bindings, "w": record.wake,
                  "t": record.telemetry, **({"p": tree.key} if tree is not None else {}),
                  **({"sp": packed} if packed is not None else {}),
                  **({"rt": record.returns} if record.returns is not None else {})})


def _item_text(row: Sequence[str | bytes | None]) -> str:
    """The JSON text of an item row: its one non-null column (of one or two), a text or deflated bytes."""
    data = row[0] if row[0] is not None else row[-1]
    return zlib.decompress(data, -15).decode() if type(data) is bytes else data


class _ItemTexts:
    """The texts of items read, by id, up to `LIMIT` characters (the oldest let go first). A stored
    item never changes and its id is never reused, so a past view moving between checkpoints of a
    long history inflates only the items it has not read yet (each about 5 us: 2.6 ms for 400)."""

    LIMIT = 16_000_000

    def __init__(self) -> None:
        self._texts: dict[int, str] = {}
        self._size = 0

    def get(self, item_id: int) -> str | None:
        return self._texts.get(item_id)

    def keep(self, item_id: int, text: str) -> str:
        self._texts[item_id] = text
        self._size += len(text)
        while self._size > self.LIMIT:
            self._size -= len(self._texts.pop(next(iter(self._texts))))
        return text


class _Read(NamedTuple):
    """A checkpoint's record as read: its data, the id of the row it was read from (its own, or its
    child's: a copy), and the checkpoint it is a delta of (None: it is whole, a full record)."""

    data: Any
    row: int
    of: int | None


@dataclass
class EventsRead:
    """Where a reading of a run's events stands (`events(run_id, since=...)` continues from it):
    the last rows read, the deflate streams open in them (a schema-6 store's rows), the statuses of
    the chains being written, and the telemetry of checkpoints read whose event batch has not been yet."""

    events_after: int = 0  # id of the last events row read
    checkpoints_after: int = 0  # id of the last checkpoint row read for telemetry
    event_streams: dict[int, Any] = field(default_factory=dict)  # stream (its first row id) -> its inflater
    checkpoint_streams: dict[int, Any] = field(default_factory=dict)
    chains: dict[int, ChainStatuses] = field(default_factory=dict)  # the last record read of a line -> its statuses
    known: dict[int, bytes] = field(default_factory=dict)  # the JSON of records read, which later rows are deflated against
    telemetry: dict[int, list[RuntimeEvent]] = field(default_factory=dict)  # checkpoint id -> its tick's telemetry
    damaged: list[str] = field(default_factory=list)  # a line for each event batch read that did not decode


class _Line(NamedTuple):
    """The last record written of a line of checkpoints, as its child's row carries it (a delta, a full
    record's own delta, or a line's first record whole), and the deltas of its chain before it that their
    children carried (each in two rows: a reader has it though one row is damaged), the newest last:
    its child's row is deflated against them (`row_codec.py`)."""

    carried: Carried
    context: tuple[Carried, ...] = ()


class _Kept:
    """The last record written of each line this store object continues (`_Line`), by its id. Kept
    once a write commits: after a failed transaction a row carries the last record stored, never one
    that was not."""

    LIMIT = 64  # records kept (lines written at once by one store object) ...
    BYTES = 32_000_000  # ... and their bytes (a 100,000-node tree's first record: ~1 MB)

    def __init__(self) -> None:
        self._kept: dict[int, _Line] = {}
        self._bytes = 0

    def of(self, parent_id: int | None, pending: dict[int, _Line]) -> _Line | None:
        """The record a child of `parent_id` carries: this transaction's, or one kept."""
        return None if parent_id is None else pending.get(parent_id) or self._kept.get(parent_id)

    def keep(self, pending: dict[int, _Line]) -> None:
        for record_id, line in pending.items():
            of = line.carried.of
            gone = self._kept.pop(of, None) if of is not None else None  # (its parent's: carried)
            self._bytes += _size(line) - (_size(gone) if gone is not None else 0)
            self._kept[record_id] = line
        while len(self._kept) > self.LIMIT or self._bytes > self.BYTES:
            self._bytes -= _size(self._kept.pop(next(iter(self._kept))))


def _size(line: _Line) -> int:
    return len(line.carried.json) + sum(len(c.json) for c in line.context)


class SQLCheckpointStore(RecordsRuns, ABC):
    """The `CheckpointStore` over a DB-API connection; subclasses connect and give their dialect."""

    location: str
    _conn: Any
    _DRIVER_ERROR: ClassVar[type[Exception] | tuple[type[Exception], ...]]
    _RETRY: ClassVar[tuple[type[Exception], ...]] = ()  # errors after which a transaction is run again
    _BEGIN: ClassVar[str] = "BEGIN"
    _OWN_ID: ClassVar[str] = ""  # what an INSERT naming a row's id says before VALUES
    _ALONE_FIRST: ClassVar[bool] = False  # a statement that may run `alone` goes before the transaction
    # (a round trip less on a server; an SQLite file would commit it on its own: one commit more)
    _ITEM_INSERT: ClassVar[str]  # the columns of `items` an insert gives: hash, then the item's
    _ITEM_COLUMNS: ClassVar[str]  # the item columns of `items i`, for _item_text
    _BRANCHES: ClassVar[str]  # an aggregate of the distinct `branch` values, comma-separated
    _UPGRADES: ClassVar[dict[int, str]]  # schema version -> the statements that make it the next one

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._items: dict[bytes, int] = {}  # content hash -> id of the items known to be stored
        self._kept = _Kept()
        self._texts = _ItemTexts()
        self._list_ids: dict[str, list[int]] = {}  # list id -> the item ids of its chunks read
        self._noted: set[str] = set()  # runs whose `run:<id>` facts this object has written
        self._facts = FactsWritten()  # ... and the text it wrote last
        self._writers_table = True  # False: an older store opened read-only, which has none
        self._writer_id: str | None = None  # this object's row of `writers`, once it writes a run
        self._claimed: set[str] = set()  # runs this object's writer has claimed (`_Tx.claiming`: in a transaction)
        self._beaten = 0.0  # (monotonic) when this writer last said it is alive
        self._trees: dict[str, Iterable[str]] = {}  # meta key -> a large tree's paths (`TreePaths`), the newest last

    # -- dialect -------------------------------------------------------------------
    @abstractmethod
    def _explain(self, exc: Exception) -> str:
        """One line for a driver error, naming the store."""

    @staticmethod
    @abstractmethod
    def _item_values(text: str) -> tuple[str | bytes | None, ...]:
        """The item columns `_ITEM_INSERT` names after the hash."""

    @abstractmethod
    def _announce(self, run_id: str) -> Plan[None]:
        """Tell followers that run `run_id` has a new checkpoint (inside the saving transaction)."""

    @abstractmethod
    def wait_for_change(self, timeout: float) -> bool:
        """Block until another writer may have changed the store, or `timeout` seconds pass;
        True if something changed (a follower then reads what is new)."""

    def _version(self, row: tuple[str] | None) -> int:
        """The schema version a `schema_version` row says; one this version cannot read (or
        upgrade: `_UPGRADES`) is refused in one line, the store left as it is."""
        try:
            version = int(row[0]) if row else 0
        except (TypeError, ValueError):  # another program's `meta`, or a damaged row
            raise StoreError(f"{self.location}: not a checkpoint store (schema version {str(row[0])[:40]!r})") from None
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.location}: written by a newer version (schema {version}; "
                             f"this version reads up to {SCHEMA_VERSION})")
        if version < 1:
            raise StoreError(f"{self.location}: not a checkpoint store (no schema version)")
        if version < SCHEMA_VERSION and version not in self._UPGRADES:
            raise StoreError(f"{self.location}: written by an older version (schema {version}; this version "
                             f"reads schema {SCHEMA_VERSION}): open it with that version, or move it aside")
        return version

    def _upgrade(self, conn: Any, version: int) -> None:
        """Bring a store of an older schema to this one, inside the caller's transaction (`_upgrading`)."""
        for query in self._upgrading(version):
            conn.execute(query.sql, query.params)

    def _upgrading(self, version: int) -> list[Query]:
        """The statements that bring a store of schema `version` to this one. Schema 3 to 4 only drops
        and narrows indexes, 4 to 5 and 5 to 6 add a record form the old rows do not use, 6 to 7 and 7 to 8
        a row form (`row_codec.py`): the rows are read the same either way."""
        if version >= SCHEMA_VERSION:
            return []
        return [*(Query(statement) for step in range(version, SCHEMA_VERSION)
                  for statement in filter(str.strip, self._UPGRADES[step].split(";"))),
                Query("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))]

    # -- connection ----------------------------------------------------------------
    @contextmanager
    def _guard(self) -> Iterator[Any]:
        with self._lock:
            try:
                yield self._conn
            except self._DRIVER_ERROR as exc:
                raise StoreError(self._explain(exc)) from None

    def _run(self, plan: Plan[T]) -> T:
        """Run a write's plan over this store's own connection (`sql_plan.run`)."""
        with self._guard() as conn:
            return run(plan, conn.execute)

    def _transaction(self, body: Callable[[_Tx], Plan[T]]) -> T:
        return self._run(self._transacting(body))

    def _transacting(self, body: Callable[[_Tx], Plan[T]]) -> Plan[T]:
        """The plan of `body(transaction)` in one transaction (again after a deadlock); what it
        added (items, chains continued, runs claimed) is known to this object once committed.

        The statements whose results nobody reads wait, and go together (`_fused`) before the next
        one that is read, or at the end: a write that reads nothing back (a tick's save, its ids
        reserved ahead) is one statement on PostgreSQL, atomic alone, without BEGIN and COMMIT. There
        a statement that may run `alone` (storing items by content) goes ahead of them while no
        transaction has begun (`_ALONE_FIRST`): it reads none of what they write, and the items it
        stores or finds are known to the store object at once (an asyncio store's other writes in flight
        then point at them instead of storing them again)."""
        for attempt in itertools.count(1):
            tx = _Tx()
            steps, pending, begun = body(tx), [], False
            try:
                send: Callable[[Any], Query] = steps.send
                value: Any = None
                while True:
                    try:
                        query = send(value)
                    except StopIteration as stop:
                        result = stop.value
                        pending += [FactsWritten.write(key, seen, text) for key, (seen, text) in tx.facts.items()
                                    if text != seen]
                        break
                    if not begun:  # (what statements alone stored is stored: another write may point at it now)
                        self._items.update(tx.items)
                    if query.want == NOTHING:
                        pending.append(query)
                        send, value = steps.send, None
                        continue
                    if not begun and not (query.alone and self._ALONE_FIRST):
                        yield Query(self._BEGIN)
                        begun = True
                    if begun:
                        yield from self._flush(pending)
                    try:
                        send, value = steps.send, (yield query)
                    except GeneratorExit:
                        raise
                    except BaseException as exc:  # (the body may catch it: an item inserted by another writer)
                        send, value = steps.throw, exc
                fused = self._fused(pending)
                if not begun and fused is not None and len(fused) <= 1:
                    yield from fused  # one statement is its own transaction
                else:
                    if not begun:
                        yield Query(self._BEGIN)
                        begun = True
                    yield from pending if fused is None else fused
                    yield Query("COMMIT")
            except GeneratorExit:
                raise
            except BaseException as exc:
                if begun:
                    with contextlib.suppress(self._DRIVER_ERROR):  # a lost connection: the error that got us here says why
                        yield Query("ROLLBACK")
                if isinstance(exc, self._RETRY) and attempt < 5:
                    continue
                raise
            finally:
                steps.close()
            self._items.update(tx.items)
            self._kept.keep(tx.kept)
            self._facts.kept(tx.facts)
            if tx.claiming:
                self._claimed |= tx.claiming
                heartbeats.add(self)
            return result

    def _flush(self, pending: list[Query]) -> Plan[None]:
        """The statements waiting, as few as the dialect sends them in; the list emptied."""
        fused = self._fused(pending)
        queries = list(pending) if fused is None else fused
        pending.clear()
        yield from queries

    def _fused(self, queries: Sequence[Query]) -> list[Query] | None:
        """`queries` (results unread) as fewer statements doing the same, or None: sent one by one,
        in a transaction (SQLite: no round trips to save)."""
        return None

    def close(self) -> None:
        with self._lock:
            self.close_writer()
            self._conn.close()

    # -- writing -------------------------------------------------------------------
    def _item_ids(self, texts: Iterable[str], added: dict[bytes, int]) -> Plan[list[int]]:
        """The ids of items (JSON texts), storing those not stored yet. Many items this object
        does not know (a restored history written again, by a new process) are looked up in
        one query first: they are most likely stored, and each insert would deflate its item.
        Those still unknown are inserted in one statement (and those another store object stored
        meanwhile looked up in one more), before the transaction: an item is content, stored once,
        and one the transaction then fails to point at is only unused."""
        texts = list(texts)
        keys = [_hash(text) for text in texts]
        unknown = [key for key in dict.fromkeys(keys) if key not in self._items and key not in added]
        for start in range(0, len(unknown) if len(unknown) >= _LOOKUP else 0, _LOOKUP_MAX):
            batch = unknown[start:start + _LOOKUP_MAX]
            added.update((yield Query(f"SELECT hash, id FROM items WHERE hash IN ({','.join('?' * len(batch))})",
                                      batch, ALL, alone=True)))
        inserting: dict[bytes, tuple] = {}  # hash -> its item's columns, inserted together

        def known(key: bytes) -> int | None:
            return self._items.get(key) or added.get(key)

        def spliceable(part: bytes) -> int | None:  # (an item being inserted: spliced in once it has its id)
            if part in inserting:
                waiting.append(part)
            return known(part)

        for text, key in zip(texts, keys, strict=True):
            if known(key) is not None or key in inserting:
                continue
            if len(inserting) >= _LOOKUP_MAX:
                yield from self._insert_items(inserting, added)
            waiting: list[bytes] = []
            stored = _spliced(text, spliceable)
            if waiting:
                yield from self._insert_items(inserting, added)
                stored = _spliced(text, known)
            inserting[key] = self._item_values(stored)
        yield from self._insert_items(inserting, added)
        return [known(key) for key in keys]

    def _insert_items(self, inserting: dict[bytes, tuple], added: dict[bytes, int]) -> Plan[None]:
        """Store the items of `inserting` (emptied) in one statement; their ids into `added`. (In the
        order of their hashes: two writers storing the same new items do not wait on each other's.)"""
        if not inserting:
            return
        added.update((yield self._item_insert(sorted(inserting.items()))))
        others = [key for key in inserting if key not in added]  # stored by another store object
        if others:
            added.update((yield Query(f"SELECT hash, id FROM items WHERE hash IN ({','.join('?' * len(others))})",
                                      others, ALL, alone=True)))
        inserting.clear()

    def _item_insert(self, rows: Sequence[tuple[bytes, tuple]]) -> Query:
        """The statement storing items (hash, their columns) that answers (hash, id) of those it stored."""
        width = 1 + len(rows[0][1])
        values = ", ".join([f"({', '.join('?' * width)})"] * len(rows))
        return Query(f"INSERT INTO items ({self._ITEM_INSERT}) VALUES {values} ON CONFLICT (hash) DO NOTHING "
                     "RETURNING hash, id", [value for key, columns in rows for value in (key, *columns)], ALL, alone=True)

    def _write_chunks(self, chunks: Sequence[ListChunk], added: dict[bytes, int]) -> Plan[None]:
        ids = iter((yield from self._item_ids((text for chunk in chunks for text in chunk.items), added)))
        for chunk in chunks:  # (every item first, in one statement: the chunks then go with the rest)
            yield Query("INSERT INTO chunks VALUES (?, ?, ?)",
                        (chunk.list_id, chunk.start, json.dumps(list(itertools.islice(ids, len(chunk.items))))))

    def _stored(self, table: str, columns: str, params: tuple, data: bytes, row_id: int | None,
                level: int = 6, carried: Carried | None = None, context: Sequence[Carried] = ()) -> Plan[int]:
        """Insert a row of `table` whose last two `columns` are (stream, data), `data` deflated on its own
        (after `carried`, the record it carries, against `context`: `row_codec.py`); returns its id:
        `row_id` (`_new_id`'s), else (None) the one the database gives it."""
        values = (*params, STANDALONE, encode_row(data, level, carried, context))
        if row_id is None:
            sql = f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * len(values))}) RETURNING id"
            return (yield Query(sql, values, ONE))[0]
        yield Query(f"INSERT INTO {table} (id, {columns}) {self._OWN_ID}VALUES ({', '.join('?' * (len(values) + 1))})",
                    (row_id, *values))
        return row_id

    def _new_id(self, table: str) -> Plan[int | None]:
        """An id for a new row of `table` known before it is inserted, or None (the insert returns it)."""
        yield from ()
        return None

    def _write_events(self, tx: _Tx, events: Sequence[tuple[str, RuntimeEvent]],
                      tick_of: CheckpointRecord | None = None, checkpoint_id: int = 0) -> Plan[None]:
        """Event batches, each row on its own; `tick_of` a record whose tick's telemetry is
        rebuilt on reading: `[checkpoint id]` ends its batch, so the events go where they happened."""
        groups = [(key, [event for _, event in group])
                  for key, group in itertools.groupby(events, lambda pair: (pair[1].run_id or "", pair[0]))]
        if tick_of is not None:
            key = (tick_of.run_id, tick_of.branch)
            if not groups or groups[-1][0] != key:
                groups.append((key, []))
        for (run_id, branch), batch in groups:
            rows: list[list] = [[e.seq, e.type, e.tick, e.node, e.time, e.payload] for e in batch]
            if tick_of is not None and (run_id, branch) == (tick_of.run_id, tick_of.branch):
                rows.append([checkpoint_id])
            yield from self._note_run(tx, run_id, batch)  # (first: a run taken over gets ids reserved after)
            yield from self._stored("events", "run_id, branch, stream, data", (run_id, branch), dumpb_telemetry(rows),
                                    (yield from self._new_id("events")))
            yield from self._announce(run_id)  # a run's last events (how it ended) come without a checkpoint

    def _note_run(self, tx: _Tx, run_id: str, batch: Sequence[RuntimeEvent],
                  first_time: float | None = None) -> Plan[None]:
        """Keep `run:<id>` up to date: where it first ran (host, pid, from its first checkpoint or its
        run.started, whichever is stored first) and since when, which writer writes it now (this
        object's, from its first write of the run), and how it ended (run.* events; an approval
        resolved ends a suspension: a studio steps on without a run.started)."""
        lifecycle = [e for e in batch if e.type in _LIFECYCLE]
        claim = run_id not in self._claimed and run_id not in tx.claiming
        if not lifecycle and first_time is None and not claim:
            return
        key = f"run:{run_id}"
        if key in tx.facts:
            seen, text = tx.facts[key]
        elif (text := self._facts.get(key)) is not None:
            seen = text
        else:  # (read before the transaction: its write checks the text is still this one)
            row = yield Query("SELECT value FROM meta WHERE key = ?", (key,), ONE, alone=True)
            seen = text = row[0] if row else None
        meta = run_facts(text)
        started = [first_time] if first_time is not None else []
        started += [e.time for e in lifecycle if e.type == EventType.RUN_STARTED]
        if started:
            me = this_process()
            meta.setdefault("started", min(started))
            meta.setdefault("host", me.host)
            meta.setdefault("pid", me.pid)
        if claim:  # (ids reserved before are let go when another writer wrote the run: it is taken over)
            meta["writer"] = yield from self._claim(renew=seen is not None and meta.get("writer") != self._writer_id)
            meta.pop("released", None)
            tx.claiming.add(run_id)
        for event in lifecycle:
            ended = _ENDINGS.get(event.type)
            if event.type != EventType.APPROVAL_RESOLVED or meta.get("ended") == "suspended":
                meta.update(ended=ended, ended_at=event.time if ended else None)
        tx.facts[key] = (seen, json.dumps(meta))

    def _claim(self, renew: bool = True) -> Plan[str]:
        """This object's writer row (written with its first claim, its heartbeat with each), for a run
        to name as its writer; `renew`: the ids reserved ahead let go (`_renew_ids`), unless the run is
        new, or was this writer's."""
        if self._writer_id is None:
            self._writer_id = os.urandom(8).hex()
        if renew:
            self._renew_ids()
        me, now = this_process(), time.time()
        yield Query(f"INSERT INTO writers ({WRITER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, NULL) "
                    "ON CONFLICT (id) DO UPDATE SET seen = excluded.seen",
                    (self._writer_id, me.host, me.machine, me.pid, me.start, now, now))
        self._beaten = time.monotonic()
        return self._writer_id

    def _renew_ids(self) -> None:
        """Ids reserved ahead (`_new_id`) are let go: a run this writer claims gets ids greater than
        those its earlier writers gave it."""

    def _beat(self) -> Plan[None]:
        yield Query("UPDATE writers SET seen = ? WHERE id = ?", (time.time(), self._writer_id))
        self._beaten = time.monotonic()

    def beat(self, interval: float) -> None:
        """The heartbeat thread's: say this writer is alive, unless a save said so within `interval`.
        A store that cannot be written now (locked, its server gone) is left for the next beat."""
        if self._writer_id is None or time.monotonic() - self._beaten < interval / 2:
            return
        with contextlib.suppress(StoreError):
            self._transaction(lambda _: self._beat())

    def release(self, run_id: str) -> None:
        """This writer leaves `run_id` unfinished for good (a studio restarted onto a new run): it is
        abandoned now, while the writer goes on; a later write of it claims it again. A store that
        cannot be written now leaves it as it is (running, while this writer lives)."""
        if run_id not in self._claimed:
            return

        def write(_: _Tx) -> Plan[None]:
            row = yield Query("SELECT value FROM meta WHERE key = ?", (f"run:{run_id}",), ONE)
            meta = run_facts(row[0] if row else None)
            if not meta.get("ended"):
                yield self._put_meta(f"run:{run_id}", json.dumps({**meta, "released": time.time()}))

        self._facts.forget(f"run:{run_id}")
        with contextlib.suppress(StoreError):
            self._transaction(write)
            self._claimed.discard(run_id)

    def take_over(self, run_id: str, seen: str | None) -> bool:
        """Make this writer the writer of `run_id`, which another left (it suspended, stopped or died),
        if the run's facts (`run:<id>` in meta) are still the text `seen` when it was found so: one
        compare-and-set, so of two processes that take one run at once, one does. Taken, the run is
        running again, written here; False when another process took it first."""
        key = f"run:{run_id}"
        facts = {k: v for k, v in run_facts(seen).items() if k not in ("ended", "ended_at", "released")}
        self._facts.forget(key)

        def write(tx: _Tx) -> Plan[bool]:
            value = json.dumps({**facts, "writer": (yield from self._claim())})
            taken = yield (Query("UPDATE meta SET value = ? WHERE key = ? AND value = ?", (value, key, seen), COUNT)
                           if seen is not None else
                           Query("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (key, value), COUNT))
            if taken != 1:
                return False
            tx.claiming.add(run_id)
            return True

        return self._transaction(write)

    def written_elsewhere(self, run_id: str) -> bool:
        """Whether another writer took `run_id` over from this one (`take_over`: another process resumed
        it while this one still held it suspended): this one must not go on with it."""
        if run_id not in self._claimed:
            return False
        return run_facts(self.get_meta(f"run:{run_id}")).get("writer") not in (None, self._writer_id)

    def close_writer(self) -> None:
        """Say this writer has closed (a clean exit is no death); its runs not ended are abandoned now."""
        heartbeats.discard(self)
        if self._writer_id is None or not self._usable():
            return
        with contextlib.suppress(StoreError):
            self._run(self.closing_writer())

    def closing_writer(self) -> Plan[None]:
        """The plan of `close_writer` (the asyncio store runs it over its own connections)."""
        if self._writer_id is None:
            return
        writer, self._writer_id = self._writer_id, None
        self._claimed.clear()
        now = time.time()
        yield from self._transacting(lambda _: _statements(Query(
            "UPDATE writers SET seen = ?, closed = ? WHERE id = ?", (now, now, writer))))

    def _usable(self) -> bool:
        """Whether a write now would not first have to connect again (closing never waits for a server)."""
        return True

    @staticmethod
    def _put_meta(key: str, value: str) -> Query:
        return Query("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                     (key, value))

    def save(self, record: CheckpointRecord, events: Sequence[tuple[str, RuntimeEvent]] = ()) -> int:
        return self._run(self.saving(record, events))

    def saving(self, record: CheckpointRecord, events: Sequence[tuple[str, RuntimeEvent]] = ()) -> Plan[int]:
        """The plan of `save`, the record encoded now: the asyncio store may run the plan later, when
        the picture the record was taken from has moved on."""
        tree = record.tree if record.full else None
        statuses = record.statuses
        if tree is not None and record.packed is None:  # a large tree's full record: the statuses not INVALID
            statuses = {p: s for p, s in statuses.items() if s != "INVALID"}  # (the tree's paths give the rest)
        data = _record_json(record, statuses, record.resume, record.state, record.packed, tree)
        step = record.step
        kept = data if step is None else _record_json(record, step.statuses, step.resume, step.state, step.packed)
        record.size = len(data)

        def write(tx: _Tx) -> Plan[int]:
            parent = self._kept.of(record.parent_id, tx.kept)
            carried, context = parent if parent is not None else (None, ())
            large = len(data) + len(carried.json if carried else b"") >= _LARGE_ROW
            level = _CHAIN_LEVEL if large else 6
            yield from self._write_chunks(record.chunks, tx.items)
            if record.tree is not None:  # (a full record's statuses, or its returns, may name its nodes by it)
                yield from self._write_tree(record.tree)
            if record.run_id not in self._noted:  # (first: a run taken over gets ids reserved after)
                yield from self._note_run(tx, record.run_id, (), first_time=record.time)
            own_id = yield from self._new_id("checkpoints")  # a full record is its chain's base
            checkpoint_id = yield from self._stored(
                "checkpoints",
                "run_id, branch, parent_id, base_id, tick, time, status, source, event_position, stream, data",
                (record.run_id, record.branch, record.parent_id, own_id if record.full else record.base_id,
                 record.tick, record.time, record.status, record.source, record.event_position),
                data, own_id, level, carried, () if record.full or large else context)
            if record.full and own_id is None:
                yield Query("UPDATE checkpoints SET base_id = id WHERE id = ?", (checkpoint_id,))
            whole = record.full and step is None  # (a line's first record: a delta of nothing)
            if record.full or carried is None or carried.id == record.base_id:  # (a full record: in one row only)
                context = ()
            else:
                context = (*context, carried)[-_CONTEXT:]
            tx.kept[checkpoint_id] = _Line(Carried(checkpoint_id, None if whole else record.parent_id, kept), context)
            if self._writer_id is not None and time.monotonic() - self._beaten >= PIGGYBACK:
                yield from self._beat()
            ticked = record if record.telemetry is not None else None
            yield from self._write_events(tx, events, ticked, checkpoint_id)
            yield from self._announce(record.run_id)
            return checkpoint_id

        def plan() -> Plan[int]:
            checkpoint_id = yield from self._transacting(write)
            self._noted.add(record.run_id)
            if record.tree is not None and record.tree.key not in self._trees:
                self._keep_tree(record.tree.key, record.tree.paths)
            return checkpoint_id

        return plan()

    def save_tree(self, tree: TreePaths) -> None:
        """Store a large tree's paths ahead of its first full record (a checkpointer attaching
        to it), so the run's first save does not write them (3 MB at 100,000 nodes)."""
        if tree.key not in self._trees:
            self._transaction(lambda _: self._write_tree(tree))
            self._keep_tree(tree.key, tree.paths)

    def _write_tree(self, tree: TreePaths) -> Plan[None]:
        """Its paths, unless stored already (by this object, or before: a store reopened)."""
        if tree.key not in self._trees and not (yield Query("SELECT 1 FROM meta WHERE key = ?", (tree.key,), ONE)):
            yield Query("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (tree.key, tree.text))

    def _keep_tree(self, key: str, paths: Iterable[str]) -> None:
        with self._lock:  # (a reader's thread may keep one too)
            self._trees[key] = paths
            if len(self._trees) > _TREES_KEPT:
                del self._trees[next(iter(self._trees))]

    def _tree_paths(self, key: str) -> Iterable[str]:
        """A large tree's paths (`TreePaths`), as written or read by this object, else from `meta`."""
        paths = self._trees.get(key)
        if paths is None:
            text = self.get_meta(key)
            if text is None:
                raise StoreError(f"{self.location}: the tree paths {key!r} of a checkpoint are missing")
            paths = from_json(text)
            self._keep_tree(key, paths)
        return paths

    def add_events(self, events: Sequence[tuple[str, RuntimeEvent]]) -> None:
        self._run(self.adding_events(events))

    def adding_events(self, events: Sequence[tuple[str, RuntimeEvent]]) -> Plan[None]:
        """The plan of `add_events`."""
        if events:
            yield from self._transacting(lambda tx: self._write_events(tx, events))

    def _pack(self, value: Any, added: dict[bytes, int]) -> Plan[str]:
        """JSON `[value, refs]` of a recorded value whose big parts are items: refs is the item id
        of the whole value (then value is null) or {key: item id} for big values of a dict."""
        if isinstance(value, dict):
            texts = {key: dumps(part) for key, part in value.items()}
            big = [key for key, text in texts.items() if len(text) >= _BIG]
            ids = yield from self._item_ids((texts[key] for key in big), added)
            return dumps([{key: None if key in big else part for key, part in value.items()},
                          dict(zip(big, ids, strict=True))])
        text = dumps(value)
        if len(text) >= _BIG:
            return dumps([None, (yield from self._item_ids([text], added))[0]])
        return dumps([value, {}])

    def put_io(self, record: IORecord, chunks: Sequence[ListChunk] = ()) -> None:
        self._run(self.putting_io(record, chunks))

    def putting_io(self, record: IORecord, chunks: Sequence[ListChunk] = ()) -> Plan[None]:
        """The plan of `put_io`."""
        def write(tx: _Tx) -> Plan[None]:
            yield from self._write_chunks(chunks, tx.items)
            request = yield from self._pack(record.request, tx.items)
            response = None if record.response is None else (yield from self._pack(record.response, tx.items))
            yield Query("INSERT INTO io (run_id, branch, kind, node, round, idx, request, response, error, time) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (record.run_id, record.branch, record.kind, record.node, record.round, record.index,
                         request, response, None if record.error is None else dumps(record.error), time.time()))

        yield from self._transacting(write)

    def set_meta(self, key: str, value: str) -> None:
        """Remember a fact about the store's runs (for example which tree file a run came from)."""
        self._transaction(lambda _: _statements(self._put_meta(key, value)))

    # -- reading -------------------------------------------------------------------
    def _inflate(self, rows: Iterable[tuple[int, int | None, bytes]], what: str,
                 decoders: dict[int, Any] | None = None, damaged: list[str] | None = None) -> list[Any]:
        """The JSON values written into (row id, stream, data) rows, read in id order (event batches); a
        damaged row is named in one line (`what` and its id): into `damaged` when given (its value None, the
        other rows read all the same), else raised as a `StoreError`."""
        out = []
        for row_id, _, value in self._values(rows, decoders):
            if value is None:
                self._damaged(f"{what} {row_id}", damaged)
            out.append(value)
        return out

    def _damaged(self, what: str, damaged: list[str] | None) -> None:
        """`what` is corrupt, said in one line naming the store: into `damaged`, else raised."""
        line = f"{self.location}: {what} is corrupt"
        if damaged is None:
            raise StoreError(line)
        damaged.append(line)

    def _values(self, rows: Iterable[tuple[int, int | None, bytes]], decoders: dict[int, Any] | None = None,
                known: dict[int, bytes] | None = None,
                lacks: dict[int, int] | None = None) -> Iterator[tuple[int, Row | None, Any]]:
        """(row id, its row, its JSON value) of (row id, stream, data) rows in id order; row and value None:
        damaged, or deflated against a record not there (into `lacks`: row id -> the damaged record it
        needs, at the root). `known`: the JSON of records read before, by id (the rows read add theirs).
        A schema-6 row continues its stream (the inflaters open in rows read before: `decoders`, by
        their first row's id) and carries no record."""
        decoders = {} if decoders is None else decoders
        known = {} if known is None else known
        lacks = {} if lacks is None else lacks
        for row_id, stream, data in rows:
            try:
                if stream == STANDALONE:
                    context = context_of(data)[0]
                    missing = next((i for i in context if i not in known), None)
                    if missing is not None:
                        lacks[row_id] = lacks.get(missing, missing)
                    row = decode_row(data, [known[i] for i in context])
                else:
                    decoder = decoders[row_id] = zlib.decompressobj(-15) if stream is None else decoders[stream]
                    row = Row(decoder.decompress(data))
                value = from_json(row.own)
            except (KeyError, TypeError, zlib.error, ValueError):  # (TypeError: a schema-6 row's text, not bytes)
                yield row_id, None, None
                continue
            known[row_id] = row.own
            if row.carried is not None:
                known.setdefault(row.carried.id, row.carried.json)
            yield row_id, row, value

    def _records(self, rows: Iterable[tuple[int, int | None, int, int | None, bytes]],
                 decoders: dict[int, Any] | None = None, after: int = 0, known: dict[int, bytes] | None = None,
                 lacks: dict[int, int] | None = None) -> dict[int, _Read]:
        """The records of checkpoint rows (id, parent id, base id, stream, data) in id order, by id: each
        read from its own row, else (its row damaged, or gone: an id after `after`) from the copy its
        child's row among `rows` carries (`row_codec.py`). Absent: not there (`_values`' `lacks`). `known`
        keeps the deltas read only: a full record is never a row's context, and a large tree's is large."""
        rows = list(rows)
        heads = {row[0]: row[1:3] for row in rows}  # id -> (parent id, base id)
        read: dict[int, _Read] = {}
        copies: dict[int, tuple[Carried, int]] = {}
        for row_id, row, value in self._values(((row[0], row[3], row[4]) for row in rows), decoders, known, lacks):
            parent_id, base_id = heads[row_id]
            if value is not None:
                read[row_id] = _Read(value, row_id, None if row_id == base_id else parent_id)
            if row is not None and row.carried is not None:
                copies[row.carried.id] = (row.carried, row_id)
        for copy_id, (carried, carrier) in copies.items():
            if copy_id <= after or copy_id in read:
                continue
            of = carried.of
            if of == OF_PREVIOUS:  # (a schema-7 row's: the record before it in its chain)
                chain = heads[carrier][1]
                of = heads[copy_id][0] if copy_id in heads else max(
                    (i for i, (_, base_id) in heads.items() if base_id == chain and i < copy_id), default=chain)
            with contextlib.suppress(ValueError):
                read[copy_id] = _Read(from_json(carried.json), carrier, of)
        if known is not None:
            for full_id in [i for i, (_, base_id) in heads.items() if i == base_id] + [
                    i for i, (carried, _) in copies.items() if carried.of is None]:
                known.pop(full_id, None)
        return dict(sorted(read.items()))

    def _built(self, conn: Any, checkpoint_id: int, rows: list[tuple], *, copy: bool = False) -> list[Any]:
        """The records that build checkpoint `checkpoint_id` (`rows`: its chain's, `CHAIN_READ`), oldest
        first: back from its own, each one the next is a delta of, to a whole one. A full record read
        from its copy (its row damaged) is a delta of the checkpoint before it: the chain before is read
        too. A record not there is a `StoreError` naming it; `copy`: its own may be read from a copy."""
        lacks: dict[int, int] = {}  # a row deflated against a record lost (two damaged rows in a row) -> that record
        read = self._records(((r[0], r[3], r[-3], r[-2], r[-1]) for r in rows), lacks=lacks)
        own = read.get(checkpoint_id)
        if checkpoint_id in lacks and (own is None or not copy):
            raise StoreError(f"{self.location}: checkpoint {checkpoint_id} cannot be read: checkpoint "
                             f"{lacks[checkpoint_id]} of its chain is corrupt")
        if own is None or own.row != checkpoint_id and not copy:  # its own row damaged: no copy is read
            raise StoreError(f"{self.location}: checkpoint {checkpoint_id} is corrupt")
        base, out, at_id, of = rows[-1][-3], [own.data], checkpoint_id, own.of
        while of is not None:
            if of not in read and of < base:  # a full record's own delta: the checkpoint before it is in the chain before
                before = conn.execute(CHAIN_READ, (of,)).fetchall()
                if before and before[-1][0] == of:
                    base = before[-1][-3]
                    read.update(self._records(((r[0], r[3], r[-3], r[-2], r[-1]) for r in before), lacks=lacks))
            previous = read.get(of)
            if previous is None or of >= at_id:  # (a delta of a later record: damage)
                raise StoreError(f"{self.location}: checkpoint {checkpoint_id} cannot be read: checkpoint "
                                 f"{lacks.get(of, of)} of its chain is corrupt")
            out.append(previous.data)
            at_id, of = of, previous.of
        out.reverse()
        return out

    @_decoding
    def read_list(self, list_id: str, length: int, first: int = 0) -> list[Any]:
        """Items `first` to `length` of a stored list (a reader comparing a growing list reads what it added)."""
        text = self.read_list_json(list_id, length, first) if first else self.read_list_json(list_id, length)
        return from_json(text)  # pydantic's parser: twice as fast as json

    @_decoding
    def read_list_json(self, list_id: str, length: int, first: int = 0) -> str:
        """The first `length` items of a stored list (from `first`) as one JSON array text, for a
        caller that validates it in one pass (`StateManager.validate_json`)."""
        with self._guard() as conn:
            ids = self._list_ids.get(list_id, [])
            if len(ids) < length:  # a chunk is never written over (its key is the list and its start):
                # the chunks read before are kept, those appended since are read (a growing history's new ones)
                chunks = conn.execute("SELECT start, items FROM chunks WHERE list_id = ? AND start >= ? AND start < ? "
                                      "ORDER BY start", (list_id, len(ids), length)).fetchall()
                ids = list(ids)
                for (start, _), items in zip(chunks, from_json(f"[{','.join(row[1] for row in chunks)}]"), strict=True):
                    if start != len(ids):  # PostgreSQL's chunks have no unique key (schema 4): a chunk twice is damage
                        raise StoreError(f"{self.location}: stored list {list_id} is corrupt (a chunk at {start} "
                                         f"after {len(ids)} items)")
                    ids += items
                if len(ids) < length:
                    raise StoreError(f"{self.location}: stored list {list_id} is incomplete "
                                     f"({len(ids)} of {length} items)")
                self._list_ids[list_id] = ids
                while len(self._list_ids) > _LISTS_KEPT:
                    del self._list_ids[next(iter(self._list_ids))]
            return "[" + ",".join(self._item_texts(conn, ids[first:length])) + "]"

    def _item_texts(self, conn: Any, ids: Sequence[int]) -> list[str]:
        """The JSON texts of items by id: those not kept read are read in as few queries as can be."""
        return run(self._reading_items(ids), conn.execute)

    def _reading_items(self, ids: Sequence[int]) -> Plan[list[str]]:
        """The plan of `_item_texts`."""
        found = {item_id: text for item_id in ids if (text := self._texts.get(item_id)) is not None}
        missing = [item_id for item_id in dict.fromkeys(ids) if item_id not in found]
        read: dict[int, str] = {}
        for start in range(0, len(missing), _LOOKUP_MAX):
            batch = missing[start:start + _LOOKUP_MAX]
            for row in (yield Query(f"SELECT id, {self._ITEM_COLUMNS} FROM items i "
                                    f"WHERE id IN ({','.join('?' * len(batch))})", batch, ALL)):
                read[row[0]] = _item_text(row[1:])
        gone = next((item_id for item_id in missing if item_id not in read), None)
        if gone is not None:
            raise StoreError(f"{self.location}: recorded item {gone} is missing")
        spliced = {item_id: text.split(_SPLICE) for item_id, text in read.items() if text.startswith(_SPLICE)}
        if spliced:  # (a damaged one: ValueError, a cycle: RecursionError, both a StoreError)
            inner = yield from self._reading_items([int(parts[1]) for parts in spliced.values()])
            for (item_id, (_, _, before, after)), part in zip(spliced.items(), inner, strict=True):
                read[item_id] = before + part + after
        for item_id, text in read.items():
            found[item_id] = self._texts.keep(item_id, text)
        return [found[item_id] for item_id in ids]

    @_decoding
    def get(self, checkpoint_id: int, *, read_lists: bool = True) -> Checkpoint:
        """The whole checkpoint; with `read_lists=False` its stored lists are left out of `state`
        (`lists` says where they are) for a caller that keeps them decoded."""
        with self._guard() as conn:
            # one round trip (on PostgreSQL the first after a pause costs ~0.8 ms here, the read 0.2): the
            # chain's rows lie between its full record and its last, the primary key's range, no index of its own
            if checkpoint_id.bit_length() > 63:  # beyond 64-bit integers: no such checkpoint, never a query
                raise CheckpointError(f"unknown checkpoint id {checkpoint_id} in {self.location}")
            rows = conn.execute(CHAIN_READ, (checkpoint_id,)).fetchall()
            if not rows or rows[-1][0] != checkpoint_id:  # no chain: a damaged header, or no such checkpoint
                if rows or conn.execute("SELECT 1 FROM checkpoints WHERE id = ?", (checkpoint_id,)).fetchone():
                    raise StoreError(f"{self.location}: checkpoint {checkpoint_id} is corrupt (no chain to read)")
                raise CheckpointError(f"unknown checkpoint id {checkpoint_id} in {self.location}")
            records = self._built(conn, checkpoint_id, rows)
        statuses = ChainStatuses()
        resume: dict[str, Any] = {}
        entries: dict[str, dict[str, list]] = {}
        returns = ReturnsReader()
        data: dict[str, Any] = {}
        for data in records:
            returns.add(data.get("rt"))
            statuses.add(data, self._tree_paths)
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
            if ns and not values:  # every key deleted (a cleared namespace): gone, as in the live state
                continue
            state[ns] = {}
            for key, entry in values.items():
                if entry[0] == "v":
                    state[ns][key] = entry[1]
                else:
                    lists.setdefault(ns, {})[key] = entry[1:]
                    if read_lists:
                        state[ns][key] = self.read_list(entry[1], entry[2])
        return Checkpoint(*rows[-1][:-3], statuses=statuses.statuses(), resume=resume, state=state,
                          bindings=data["b"], wake=data["w"], lists=lists, returns=returns.returns(self._tree_paths))

    def _infos(self, where: str, params: tuple, order: str = "id") -> list[CheckpointInfo]:
        with self._guard() as conn:
            rows = conn.execute(f"SELECT {_INFO} FROM checkpoints {where} ORDER BY {order}", params).fetchall()
        return [CheckpointInfo(*row) for row in rows]

    def list(self, run_id: str | None = None, branch: str | None = None, *,
             after: int | None = None) -> list[CheckpointInfo]:
        """Headers, oldest first; `after`: only those with a greater id (what a follower has not seen)."""
        clauses, params = [], []
        for clause, value in (("run_id = ?", run_id), ("branch = ?", branch), ("id > ?", after)):
            if value is not None:
                clauses.append(clause)
                params.append(value)
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
        out, seen = [], set()
        current: CheckpointInfo | None = head
        while current is not None:
            if current.id in seen:  # a damaged (or hostile) parent id: the walk would never end, out growing
                raise StoreError(f"{self.location}: run {run_id} cannot be read: checkpoint {out[-1].id}'s "
                                 f"parents go round in a loop (through checkpoint {current.id}): the store is damaged")
            seen.add(current.id)
            out.append(current)
            current = by_id.get(current.parent_id) if current.parent_id is not None else None
        return out

    def get_meta(self, key: str) -> str | None:
        with self._guard() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def branches(self, run_id: str) -> list[str]:
        with self._guard() as conn:
            return [row[0] for row in conn.execute(
                "SELECT branch FROM checkpoints WHERE run_id = ? GROUP BY branch ORDER BY min(id)", (run_id,))]

    @_decoding
    def runs(self, run_id: str | None = None) -> list[RunSummary]:
        """Every run (or the one `run_id` names), oldest first, with what its writers recorded about
        it (tree, host, pid, end) and, while it has no end, the writer that writes it now."""
        where, params = ("WHERE run_id = ? ", (run_id,)) if run_id is not None else ("", ())
        with self._guard() as conn:
            rows = conn.execute(
                f"SELECT run_id, {self._BRANCHES}, count(*), min(time), max(time), "
                "(SELECT status FROM checkpoints l WHERE l.run_id = c.run_id ORDER BY id DESC LIMIT 1) "
                f"FROM checkpoints c {where}GROUP BY run_id ORDER BY min(id)", params).fetchall()
            if run_id is None:
                meta = dict(conn.execute("SELECT key, value FROM meta WHERE key LIKE 'run:%' OR key LIKE 'tree:%'"))
            else:
                meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN (?, ?)",
                                         (f"run:{run_id}", f"tree:{run_id}")))
            facts = {run: run_facts(meta.get(f"run:{run}")) for run, *_ in rows}
            writers = self._writers(conn, {f["writer"] for f in facts.values() if f.get("writer") and not f.get("ended")})
        return [RunSummary(run, sorted(branches.split(",")), n, first, last, status, tree=meta.get(f"tree:{run}"),
                           host=facts[run].get("host"), pid=facts[run].get("pid"), started=facts[run].get("started"),
                           ended=facts[run].get("ended"), writer=writers.get(facts[run].get("writer")),
                           released=facts[run].get("released"))
                for run, branches, n, first, last, status in rows]

    def _writers(self, conn: Any, ids: set[str]) -> dict[str, Writer]:
        """The writer rows of `ids` (none in an older store opened read-only: it has no `writers`)."""
        found: dict[str, Writer] = {}
        ids_list = sorted(ids) if self._writers_table else []
        for start in range(0, len(ids_list), _LOOKUP_MAX):
            batch = ids_list[start:start + _LOOKUP_MAX]
            for row in conn.execute(f"SELECT {WRITER_COLUMNS} FROM writers WHERE id IN ({','.join('?' * len(batch))})",
                                    batch).fetchall():
                found[row[0]] = Writer(*row)
        return found

    @_decoding
    def events(self, run_id: str, since: EventsRead | None = None) -> list[tuple[str, RuntimeEvent]]:
        """(branch, event) pairs in the order they happened, each tick's telemetry rebuilt where
        its checkpoint's marker stands in the event batch; with `since`, only those stored after
        it last stood (it moves on): a follower's look costs what landed, not the whole run. A batch whose
        bytes do not decode costs its own events only: with `since`, the others are read and the damage is
        said in `since.damaged`; a whole read (a copy, a comparison, short of it unseen) raises it instead."""
        read = since if since is not None else EventsRead()
        damaged = None if since is None else read.damaged
        with self._guard() as conn:
            rows = conn.execute("SELECT id, branch, stream, data FROM events WHERE run_id = ? AND id > ? "
                                "ORDER BY id", (run_id, read.events_after)).fetchall()
        what = f"run {run_id}: event batch"
        batches = self._inflate(((r[0], r[2], r[3]) for r in rows), what, read.event_streams, damaged)
        if any(b and len(b[-1]) == 1 for b in batches):  # read after the events: their checkpoints are in
            self._tick_telemetry(run_id, read)
        out = []
        for (row_id, branch, _, _), batch in zip(rows, batches, strict=True):
            try:
                events = [RuntimeEvent(seq, type_, t, tick, node, run_id, payload)
                          for seq, type_, tick, node, t, payload in (e for e in batch if len(e) > 1)]
            except (TypeError, ValueError):  # (None: damaged, said; a batch of another shape, said here)
                if batch is not None:
                    self._damaged(f"{what} {row_id}", damaged)
                continue
            if batch and len(batch[-1]) == 1:
                events = sorted([*events, *read.telemetry.pop(batch[-1][0], ())], key=lambda e: e.seq)
            out.extend((branch, event) for event in events)
        if rows:
            read.events_after = rows[-1][0]
        return out

    def _tick_telemetry(self, run_id: str, read: EventsRead) -> None:
        """Into `read.telemetry`, checkpoint id -> its tick's telemetry events (tick.started,
        node.status..., tick.completed) of the checkpoints stored since `read` last stood, the
        statuses' old values from the checkpoint each is a delta of."""
        with self._guard() as conn:
            rows = conn.execute("SELECT id, parent_id, base_id, tick, status, stream, data FROM checkpoints "
                                "WHERE run_id = ? AND id > ? ORDER BY id", (run_id, read.checkpoints_after)).fetchall()
        headers = {row[0]: row[3:5] for row in rows}
        records = self._records(((r[0], r[1], r[2], r[5], r[6]) for r in rows), read.checkpoint_streams,
                                read.checkpoints_after, read.known)
        while len(read.known) > _KNOWN:  # (the rows after these are deflated against the last few of each line)
            del read.known[next(iter(read.known))]
        lost = next((row[0] for row in rows if row[0] not in records), None)
        if lost is not None:  # (its tick's telemetry, and the statuses after it: nothing is taken from this look)
            raise StoreError(f"{self.location}: checkpoint {lost} is corrupt")
        tips = read.chains
        for checkpoint_id, record in records.items():
            if record.of is None:  # a whole record: its line's statuses start again
                saved = ChainStatuses()
            else:  # the statuses as of the record it is a delta of: read last, or let go (read again)
                saved = tips.pop(record.of, None) or self._statuses_at(record.of)
            tips[checkpoint_id] = saved
            if len(tips) > _CHAINS_READ:  # a large tree's statuses, kept for the lines still written
                del tips[next(iter(tips))]
            data = record.data
            t = data.get("t") or {}
            changes = saved.add(data, self._tree_paths, t["n"][2] if "n" in t and "x" not in t else 0)
            header = headers.get(checkpoint_id)  # (None: its row is gone, its record read from its child's)
            if t and header is not None:
                tick, status = header
                read.telemetry[checkpoint_id] = telemetry_events(run_id, tick, status, t, t.get("x", changes))
        if rows:
            read.checkpoints_after = rows[-1][0]

    def _statuses_at(self, checkpoint_id: int) -> ChainStatuses:
        """The statuses of checkpoint `checkpoint_id`, from the records that build it."""
        with self._guard() as conn:
            rows = conn.execute(CHAIN_READ, (checkpoint_id,)).fetchall()
            if not rows or rows[-1][0] != checkpoint_id:
                raise StoreError(f"{self.location}: checkpoint {checkpoint_id} is corrupt")
            records = self._built(conn, checkpoint_id, rows, copy=True)
        saved = ChainStatuses()
        for data in records:
            saved.add(data, self._tree_paths)
        return saved

    def _unpack(self, conn: Any, text: str) -> Any:
        return run(self._unpacking(text), conn.execute)

    def _unpacking(self, text: str) -> Plan[Any]:
        """The plan that reads a recorded value back (`_pack`): its big parts from their items."""
        value, refs = json.loads(text)
        if isinstance(refs, int):
            return json.loads((yield from self._reading_items((refs,)))[0])
        for key, item_id in refs.items():
            value[key] = json.loads((yield from self._reading_items((item_id,)))[0])
        return value

    @_decoding
    def io_records(self, run_id: str) -> list[IORecord]:
        """Every recorded call of a run, all branches, in the order recorded (what a run file copies)."""
        with self._guard() as conn:
            rows = conn.execute("SELECT branch, kind, node, round, idx, request, response, error FROM io "
                                "WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()
            return [IORecord(run_id, branch, kind, node, round, index, self._unpack(conn, request),
                             None if response is None else self._unpack(conn, response),
                             None if error is None else json.loads(error))
                    for branch, kind, node, round, index, request, response, error in rows]

    def get_io(self, run_id: str, kind: str, node: str, round: int, index: int,
               branch: str | None = None) -> IORecord | None:
        with self._guard() as conn:
            return run(self.getting_io(run_id, kind, node, round, index, branch), conn.execute)

    def getting_io(self, run_id: str, kind: str, node: str, round: int, index: int,
                   branch: str | None = None) -> Plan[IORecord | None]:
        """The plan of `get_io`, its stored values decoded (`_decoded`: damage is a `StoreError`)."""
        return _decoded(self, self._getting_io(run_id, kind, node, round, index, branch))

    def _getting_io(self, run_id: str, kind: str, node: str, round: int, index: int,
                    branch: str | None) -> Plan[IORecord | None]:
        row = yield Query("SELECT branch, request, response, error FROM io WHERE run_id = ? AND kind = ? AND node = ? "
                          "AND round = ? AND idx = ? ORDER BY branch = ? DESC, id DESC LIMIT 1",
                          (run_id, kind, node, round, index, branch), ONE)
        if row is None:
            return None
        found_branch, request, response, error = row
        return IORecord(run_id, found_branch, kind, node, round, index, (yield from self._unpacking(request)),
                        None if response is None else (yield from self._unpacking(response)),
                        None if error is None else json.loads(error))


__all__ = ["CHAIN_READ", "SCHEMA_VERSION", "EventsRead", "SQLCheckpointStore"]
