"""What a checkpoint is, on the way in (a delta record) and on the way out (a whole checkpoint).

A record stores only what changed since its parent; it is a full snapshot at the start of
every saving session, once the deltas since the last full one outgrow it a few times, and at
the latest every `full_every` records, so restoring reads a bounded chain.
Growing lists (a message history) are stored as appended chunks of content-addressed items:
a list of 400 messages costs its messages once, plus a reference per checkpoint.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from py_trees.common import Status
from pydantic_core import PydanticSerializationError, to_json, to_jsonable_python

from ...engine.record import Returns

# A state entry in a record: ["v", value] | ["l", list_id, length] | ["d"] (deleted)
Entry = list


class Source(StrEnum):
    """Why a checkpoint was written (LangGraph's metadata source)."""

    INPUT = "input"  # the state a fresh run starts from, before its first tick
    LOOP = "loop"  # after a tick
    UPDATE = "update"  # after an edit made outside a tick
    FORK = "fork"  # the first checkpoint of a new branch, with its edits
    REPLAY = "replay"  # the first checkpoint of a replay's branch
    SUSPEND = "suspend"  # a run that suspended after its last tick (a node asked between ticks): what it waits for
    INTERRUPT = "interrupt"  # a run stopped from outside (a signal, a cancelled task): its end, status INTERRUPTED


@dataclass(frozen=True)
class CheckpointInfo:
    """The header of a checkpoint: what lists and histories show."""

    id: int
    run_id: str
    branch: str
    parent_id: int | None
    tick: int
    time: float
    status: str
    source: str
    event_position: int

    @property
    def root_status(self) -> Status:
        """`status` as the root's py_trees status: the recorded end of a run whose save failed
        (`ERROR`, what `list` shows) is a FAILURE, a damaged value INVALID."""
        if self.status == "ERROR":
            return Status.FAILURE
        return Status._value2member_map_.get(self.status, Status.INVALID)


def tick_positions(infos: Iterable[CheckpointInfo],
                   into: dict[tuple[str, int], int] | None = None) -> dict[tuple[str, int], int]:
    """(branch, tick) -> the event position of the tick's own checkpoint, the first at that tick on that
    branch: an event of the tick stored after it was published between ticks (async work finishing,
    a node asking for approval), even when a later checkpoint of the same tick (an edit's, the
    suspension's) holds it. `into`: a map to add to (new checkpoints of a followed run)."""
    positions = {} if into is None else into
    for info in infos:
        positions.setdefault((info.branch, info.tick), info.event_position)
    return positions


@dataclass(frozen=True)
class Checkpoint(CheckpointInfo):
    """A whole checkpoint: everything needed to resume after its tick."""

    statuses: dict[str, str] = field(default_factory=dict)  # node path -> py_trees Status value
    resume: dict[str, dict[str, Any]] = field(default_factory=dict)  # node path -> resume data
    state: dict[str, dict[str, Any]] = field(default_factory=dict)  # namespace ("" global) -> raw values
    bindings: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)  # edited port bindings
    wake: bool = False  # a wake was pending when the tick ended (the next tick came at once)
    lists: dict[str, dict[str, list]] = field(default_factory=dict)  # namespace -> key -> [list id, length]
    returns: Returns | None = None  # what each node returned in its tick, in order (None: no tick's, or not recorded)

    @property
    def info(self) -> CheckpointInfo:
        return CheckpointInfo(self.id, self.run_id, self.branch, self.parent_id, self.tick, self.time,
                              self.status, self.source, self.event_position)


@dataclass(frozen=True)
class ListChunk:
    """Items appended to a stored list at `start` (each item is its JSON text)."""

    list_id: str
    start: int
    items: list[str]


@dataclass(frozen=True, eq=False)
class TreePaths:
    """A large tree's node paths, in tree order, stored once per store (`key`, their JSON's hash):
    a full record of that tree then stores only the statuses that are not INVALID, and a read
    puts INVALID back for the other paths. A fresh run's first record (every node INVALID) of a
    100,000-node tree is then a few bytes, not 5 MB of JSON to encode and deflate."""

    paths: tuple[str, ...]  # the tree's paths, in order (strings only: a store keeping them keeps no node alive)
    key: str  # "paths:<hash of their JSON>", the store's meta key
    places: Mapping[str, int] | None = None  # path -> its place, when whoever made these has one (a runner's)

    @classmethod
    def of(cls, paths: Iterable[str], places: Mapping[str, int] | None = None) -> TreePaths:
        paths = tuple(paths)
        return cls(paths, "paths:" + hashlib.blake2b(dumpb(paths), digest_size=10).hexdigest(), places)

    @property
    def text(self) -> str:
        """Their JSON array, made when written (kept, it would be 3 MB more at 100,000 nodes)."""
        return dumps(self.paths)


@dataclass
class Step:
    """A full record's own delta from its parent, as a delta record of its tick would have held it:
    the row after it carries this instead of the whole record (`row_codec.py`), so a damaged full
    record is rebuilt from the checkpoint before it. Bindings, wake, telemetry and returns are the
    full record's own (they are stated whole in every record)."""

    statuses: dict[str, str]
    resume: dict[str, dict[str, Any] | None]
    packed: list[list[Any]] | None  # the packed statuses' runs that differ from the parent's (`statuses.py`)
    state: dict[str, dict[str, Entry]] = field(default_factory=dict)


@dataclass
class CheckpointRecord:
    """What one save writes: the header plus the changes since `parent_id` (or everything, if full)."""

    run_id: str
    branch: str
    parent_id: int | None
    base_id: int | None  # the full record this delta builds on; None: this record is full
    tick: int
    time: float
    status: str
    source: str
    event_position: int
    wake: bool
    statuses: dict[str, str]
    resume: dict[str, dict[str, Any] | None]  # None: the node has no resume data any more
    state: dict[str, dict[str, Entry]]
    bindings: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    chunks: list[ListChunk] = field(default_factory=list)
    telemetry: dict[str, Any] | None = None  # a tick's: how to rebuild its telemetry events (see RunnerCheckpoints)
    size: int = 0  # set by the store's save(): the bytes of its encoded data (what a restore parses)
    # the tree (a large one) the record names nodes in. A full record's `statuses` (not `packed`) has no path
    # outside it: INVALID may be left out of them (by the checkpointer, by the store), a reader puts it back for
    # the tree's other paths; `returns` may name nodes by their place in it (`returns.py`)
    tree: TreePaths | None = None
    returns: list[Any] | None = None  # its tick's returns, encoded (`returns.py`); None: not a tick's
    # the statuses of `tree`'s paths, packed (`statuses.py`): the runs that differ from the chain's previous
    # record (a full record's: from every node INVALID); `statuses` then holds only nodes outside the tree
    packed: list[list[Any]] | None = None
    step: Step | None = None  # a full record's own delta from its parent (None: a delta, or a line's first record)

    @property
    def full(self) -> bool:
        return self.base_id is None


def dumpb(value: Any) -> bytes:
    """Compact JSON of any runtime value (pydantic models included; unknown objects as repr)."""
    return to_json(value, fallback=repr)


def dumpb_telemetry(value: Any) -> bytes:
    """`dumpb` of what a run told (its events): a lone surrogate in a text (a decoded hostile tool output
    or log line) is kept as its escape (`\\ud800`), not refused. An event is what happened, not state a
    restore puts back; refusing it would stop the run at every later save, which carries it again."""
    try:
        return dumpb(value)
    except PydanticSerializationError:
        return dumpb(_escaped(jsonable(value)))


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode()
    if isinstance(value, dict):
        return {_escaped(key): _escaped(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_escaped(item) for item in value]
    return value


def dumps(value: Any) -> str:
    return dumpb(value).decode()


def jsonable(value: Any) -> Any:
    return to_jsonable_python(value, fallback=repr)


class ListTracker:
    """Encodes list values as references to stored lists, appending when a list only grew.

    One tracker belongs to one writer (a saving session, a recorder): a stored list is
    appended to by its writer only, so chunk positions never collide.
    """

    def __init__(self) -> None:
        self._known: dict[Any, tuple[list, str]] = {}  # slot -> (items as last stored, list id)

    def encode(self, slot: Any, value: list, chunks: list[ListChunk]) -> Entry:
        known = self._known.get(slot)
        if known is not None:
            old, list_id = known
            n = len(old)
            if len(value) >= n and all(a is b or a == b for a, b in zip(old, value, strict=False)):
                if len(value) > n:
                    chunks.append(ListChunk(list_id, n, [dumps(v) for v in value[n:]]))
                    self._known[slot] = (list(value), list_id)
                return ["l", list_id, len(value)]
        list_id = uuid.uuid4().hex[:16]
        chunks.append(ListChunk(list_id, 0, [dumps(v) for v in value]))
        self._known[slot] = (list(value), list_id)
        return ["l", list_id, len(value)]

    def forget(self, slot: Any) -> None:
        self._known.pop(slot, None)

    def copy(self) -> ListTracker:
        """A tracker that knows what this one knows now: what its writer goes back to when a record
        this one encodes lists for is never stored (its chunks with it)."""
        copied = ListTracker()
        copied._known = dict(self._known)
        return copied


__all__ = ["Checkpoint", "CheckpointInfo", "CheckpointRecord", "ListChunk", "ListTracker", "Source",
           "Step", "TreePaths", "dumpb", "dumps", "jsonable", "tick_positions"]
