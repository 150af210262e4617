"""A tick's returns (`runtime.engine.record`) in its checkpoint record, compactly.

A record's data holds them as `"rt": [tree, order, codes]`:

- `codes`: what each node returned, one letter a return (`S`, `F`, `R`, `I`);
- `order`: which node returned each time: their paths, or (`tree` set: a large tree's `TreePaths`
  key, its paths stored once per store) their places in that tree's paths;
- either is null when it is the same as the previous record's: a tick's returns are mostly the
  same nodes as the previous tick's (a static tree returns the same order every tick), so "the
  same" costs five bytes, and the store's deflate streams make the rest small.

A record without `"rt"` has no returns (a save outside a tick, a store written before returns
were recorded): the record after it states its returns whole, and so does every full record,
which starts a chain. So a reader of a chain, oldest record first, always has what "the same"
refers to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from typing import Any

from py_trees.common import Status

from ...engine.record import Returns
from .model import TreePaths

CODES = {Status.SUCCESS: "S", Status.FAILURE: "F", Status.RUNNING: "R", Status.INVALID: "I"}
_STATUS_OF_CODE = {code: status for status, code in CODES.items()}
_CODE_OF_VALUE = {status._value_: code for status, code in CODES.items()}  # looked up by a str, hashed in C
_VALUE = attrgetter("_value_")  # (a `Status` key would hash in Python: Enum.__hash__, ~30 ms at 100,000)


class ReturnsWriter:
    """Encodes each tick's returns against the previous record's, for one line of checkpoints."""

    def __init__(self) -> None:
        self._previous: Returns | None = None  # the last record's returns, None: it had none
        self._places: tuple[str, dict[str, int]] | None = None  # (tree key, path -> place) of the last tree used

    def encode(self, returns: Returns | None, tree: TreePaths | None, full: bool) -> list[Any] | None:
        """The `"rt"` entry of a record (None: the record has no returns); `full`: a record that
        starts a chain, stated whole."""
        previous = None if full else self._previous
        self._previous = returns
        if returns is None:
            return None
        paths, statuses = returns.paths, returns.statuses
        same_order = previous is not None and previous.paths == paths  # the same path objects: compared in C
        same_codes = previous is not None and previous.statuses == statuses
        codes = None if same_codes else "".join(map(_CODE_OF_VALUE.__getitem__, map(_VALUE, statuses)))
        if same_order:
            return [None, None, codes]
        places = self._places_in(tree)
        if places is not None:
            try:
                return [tree.key, list(map(places.__getitem__, paths)), codes]
            except KeyError:  # a node the tree's paths do not hold yet: by path
                pass
        return [None, list(paths), codes]

    def _places_in(self, tree: TreePaths | None) -> Mapping[str, int] | None:
        if tree is None:
            return None
        if tree.places is not None:  # (its runner's index: shared, not one more of ~70 bytes a node)
            return tree.places
        if self._places is None or self._places[0] != tree.key:
            self._places = (tree.key, {path: place for place, path in enumerate(tree.paths)})
        return self._places[1]


class ReturnsReader:
    """Reads the returns of a chain's records, oldest first: `add` each record's `"rt"`, then `returns`."""

    def __init__(self) -> None:
        self._tree: str | None = None
        self._order: list | None = None
        self._codes: str | None = None
        self._stated = False  # the last record added had returns

    def add(self, entry: Sequence[Any] | None) -> None:
        """One record's entry (None: it had none). `ValueError` for "the same" after a record with
        none, or an entry that is not one (the store reports it as damage)."""
        if entry is None:
            self._stated = False
            return
        tree, order, codes = entry
        if (order is None or codes is None) and not self._stated:
            raise ValueError("returns 'the same as the previous record' after a record without returns")
        if order is not None:
            self._tree, self._order = tree, order
        if codes is not None:
            self._codes = codes
        self._stated = True

    def returns(self, tree_paths: Callable[[str], Sequence[str]]) -> Returns | None:
        """The last record's returns (None: it had none); `tree_paths(key)` gives a large tree's paths."""
        if not self._stated:
            return None
        order, codes = self._order, self._codes
        if len(order) != len(codes):
            raise ValueError(f"{len(order)} returning nodes but {len(codes)} statuses")
        paths = order if self._tree is None else list(map(tree_paths(self._tree).__getitem__, order))
        return Returns(paths, list(map(_STATUS_OF_CODE.__getitem__, codes)))


__all__ = ["CODES", "ReturnsReader", "ReturnsWriter"]
