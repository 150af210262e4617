"""A large tree's statuses in its checkpoint records, packed (schema 6).

A tree with its paths stored once (`TreePaths`) has its statuses packed: one letter a node
(`S`, `F`, `R`, `I`, the letters of `returns.py`), in the order of the tree's paths, and a
record stores them as `"sp"`, the runs of letters that differ from the previous record's
(`[[start, letters], ...]`; a full record's against every node INVALID). A tick that changes
every node of a 110,000-node tree is then one run of 110,000 letters, which the store's deflate
makes a few hundred bytes, instead of a JSON mapping of 110,000 paths to encode, compare and
deflate. Statuses of nodes outside the tree (a swarm agent's) stay in the record's `"s"`.

`ChainStatuses` is the one reader of a chain's statuses, packed or not (an older store's
records map paths to statuses; a full one with `"p"` lists only those not INVALID): every
reader of a record's statuses (a checkpoint read whole, the telemetry rebuilt from a delta)
goes through it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import compress, islice
from operator import attrgetter, is_not, itemgetter
from typing import Any, NamedTuple

from py_trees.common import Status

_CODE_OF_VALUE = {status._value_: status._value_[0] for status in Status}  # SUCCESS -> S ... (by str: hashed in C)
_VALUE_OF_CODE = {code: value for value, code in _CODE_OF_VALUE.items()}
_VALUE = attrgetter("_value_")
_OLD = itemgetter(0)
_GAP = 8  # unchanged letters a run takes in rather than end (a run costs ~10 bytes of JSON)
_CHANGED = re.compile(rb"[^\x00]+(?:\x00{1,%d}[^\x00]+)*" % _GAP)  # a run in the XOR of two packings


def pack(statuses: Iterable[Status]) -> str:
    """The statuses (in the tree's order) as one letter each: 110,000 in ~5 ms."""
    return "".join(map(_CODE_OF_VALUE.__getitem__, map(_VALUE, statuses)))


def _xor(old: str, new: str) -> bytes:
    """A zero byte where the two packings (of one length) agree: computed in C, not a loop."""
    return (int.from_bytes(old.encode(), "big") ^ int.from_bytes(new.encode(), "big")).to_bytes(len(new), "big")


def runs(old: str | None, new: str) -> list[list[Any]]:
    """The runs of `new` that differ from `old` (None: every node INVALID), as a record stores them."""
    if old is None:
        old = "I" * len(new)
    if old == new:
        return []
    return [[m.start(), new[m.start():m.end()]] for m in _CHANGED.finditer(_xor(old, new))]


def applied(old: str, stored: Sequence[Sequence[Any]]) -> str:
    """`old` with a record's runs written over it; `ValueError` for a run outside it (damage)."""
    parts, at = [], 0
    for start, letters in stored:
        if not isinstance(letters, str) or start < at or start + len(letters) > len(old):
            raise ValueError(f"packed statuses: a run at {start} of {len(letters)} outside {len(old)} nodes")
        parts += [old[at:start], letters]
        at = start + len(letters)
    return "".join(parts) + old[at:] if parts else old


def changed_places(old: str, new: str) -> list[int]:
    """The places whose letter differs, in order."""
    if old == new:
        return []
    xor = _xor(old, new)
    return [i for m in re.finditer(rb"[^\x00]+", xor) for i in range(m.start(), m.end())]


def _matches(old: str, places: list[int], paths: Sequence[str], changed: Mapping[str, tuple[Status, Status]]) -> bool:
    """Whether a tick's `changed` (in the tree's order) are the changes at `places` of the packing `old`,
    each from its old letter: then a reader rebuilds its `node.status` events from the packings alone."""
    return (len(places) == len(changed) and list(map(paths.__getitem__, places)) == list(changed)
            and "".join(map(old.__getitem__, places)) == pack(map(_OLD, changed.values())))


def _spliced(old: str, places: list[int], statuses: Sequence[Status]) -> str:
    """`old` with the letters at `places` those of `statuses` now (all packed again when many changed)."""
    if len(places) * 8 > len(old):
        return pack(statuses)
    letters = bytearray(old.encode())
    for i in places:
        letters[i] = ord(_CODE_OF_VALUE[statuses[i]._value_])
    return letters.decode()


class Packing(NamedTuple):
    """What a record stores of a large tree's statuses (`PackedWriter.encode`)."""

    runs: list[list[Any]]  # the runs that differ from the previous record's (a full record's: from every node INVALID)
    derived: bool  # the tick's `changed` are its changes (else the record lists them)
    before: list[list[Any]] | None  # a full record's, whose changes they are: the runs that give the packing before it
    places: list[int] | None  # the places that changed since the line's previous record (None: a new line)
    step: list[list[Any]] | None = None  # a full record's runs that differ from the previous record's (`Step`)


class PackedWriter:
    """Packs a large tree's statuses for one line of checkpoints, each record against the one before.

    The statuses come as the runner's list of them (`status_lists`), which it replaces and never
    changes: the places that changed since the last record are those where the two lists hold
    other members, found in C (3 ms at 110,000 nodes), and only those letters are written again
    (a static tree's save costs no pass over its nodes in Python)."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = paths  # the tree's (`TreePaths.paths`): the statuses packed are in their order
        self.packed: str | None = None  # as the last record stored them
        self._statuses: Sequence[Status] = ()  # the list they were packed from

    def encode(self, statuses: Sequence[Status], fresh: bool, full: bool, changed: Mapping[str, tuple[Status, Status]],
               moved: Callable[[Sequence[Status], Sequence[Status]], list[int] | None] | None = None) -> Packing:
        """A record's packing (`full`: stated against every node INVALID; `fresh`: a new line, nothing
        stored before it). `moved(before, after)`: the places that differ between two lists, when known
        (the runner's `moved_between`: a tick's changes, not the lists compared again), else None."""
        if len(statuses) != len(self.paths):
            raise ValueError(f"{len(statuses)} statuses for a tree of {len(self.paths)} nodes")
        old = None if fresh else self.packed
        if old is None:
            places, new = None, pack(statuses)
        else:
            places = [] if statuses is self._statuses else moved and moved(self._statuses, statuses)
            if places is None:
                places = list(compress(range(len(statuses)), map(is_not, self._statuses, statuses)))
            new = _spliced(old, places, statuses) if places else old
        self.packed, self._statuses = new, statuses
        derived = not changed if old is None else _matches(old, places, self.paths, changed)
        before = runs(new, old) if full and old is not None and changed and derived else None
        step = runs(old, new) if full and old is not None else None
        return Packing(runs(None if full else old, new), derived, before, places, step)


class ChainStatuses:
    """The statuses of a chain's records read so far, oldest first (`add` each record's data)."""

    def __init__(self) -> None:
        self.paths: Sequence[str] = ()  # the tree's paths, while its records are packed
        self.packed: str | None = None  # their letters as of the last record (None: no packed record yet)
        self.before = ""  # ... and as of the record before it
        self.others: dict[str, str] = {}  # statuses by path: an unpacked record's, or of nodes outside the tree

    def add(self, data: dict[str, Any], tree_paths: Callable[[str], Sequence[str]],
            changes: int = 0) -> list[tuple[str, str, str]]:
        """Read one record's statuses; its first `changes` changes (path, old, new), what its tick's
        `node.status` events are rebuilt from: a packed record's in the tree's order, another's in its own."""
        found = [] if "sp" in data else [  # (the old statuses: those before this record)
            (p, self.others.get(p, "INVALID"), new) for p, new in islice(data["s"].items(), changes)]
        if "p" in data:  # a full record of a large tree: every node INVALID unless it says otherwise
            self.paths = tree_paths(data["p"])
            self.packed, self.others = ("I" * len(self.paths) if "sp" in data else None), {}
            if self.packed is None:
                self.others = dict.fromkeys(self.paths, "INVALID")
        self.others.update(data["s"])
        stored = data.get("sp")
        if stored is not None:
            if self.packed is None:
                raise ValueError("packed statuses without their tree")
            self.before, self.packed = self.packed, applied(self.packed, stored)
            back = (data.get("t") or {}).get("o")
            if back is not None:  # a full record after a tick: what its tick changed from
                self.before = applied(self.packed, back)
            if changes:
                paths, old, new = self.paths, self.before, self.packed
                found = [(paths[i], _VALUE_OF_CODE[old[i]], _VALUE_OF_CODE[new[i]])
                         for i in changed_places(old, new)[:changes]]
        return found

    def statuses(self) -> dict[str, str]:
        """Path -> status value, the tree's in its order, then the others."""
        if self.packed is None:
            return dict(self.others)
        out = dict(zip(self.paths, map(_VALUE_OF_CODE.__getitem__, self.packed), strict=True))
        out.update(self.others)
        return out


__all__ = ["ChainStatuses", "PackedWriter", "Packing", "applied", "changed_places", "pack", "runs"]
