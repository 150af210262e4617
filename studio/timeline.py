"""The past of a run as the store holds it: checkpoints by id, lineages, the changes between them.

A checkpoint's *lineage* is its chain of parents, across the branches it forked from. The
events of a lineage are, per branch, those numbered up to where the next branch forked
(a fork rewinds the event stream to that point), and for the checkpoint's own branch those
up to its own position. Every difference shown (a marker, a timeline row) is between a
checkpoint and its parent, with state keys named the way the state pane names them; the nodes
a row counts as changed are read from the record of its tick (`runtime.engine.record`): those
whose status differs from the parent's, and those that returned a status their tick did not end
with (a loop's round that failed, reset in the same tick).
"""

from __future__ import annotations

import functools
from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from runtime.debug.changes import TakenStatuses, changed_keys, checkpoint_summary, row_numbers
from runtime.debug.names import State, StateNames
from runtime.engine.events import EventType
from runtime.memory.checkpoint import Checkpoint, CheckpointError, CheckpointInfo, CheckpointStore, StoreError
from runtime.state import Deferred

RUN_END = frozenset({EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_SUSPENDED})
CACHED = 4  # decoded checkpoints kept: the head, its parent, the one viewed and its parent (each holds
# every node's status: ~0.5 MB at 10,000 nodes)


@dataclass(frozen=True)
class Lineage:
    """Which events belong to a frame: per branch, the last event number (None: all of them)."""

    run_id: str | None
    branch: str
    tick: int | None  # the frame's tick (None: the head, still growing)
    limits: Mapping[str, int | None]

    def holds(self, branch: str, seq: int, tick: int, event_type: str) -> bool:
        if branch not in self.limits:
            return False
        limit = self.limits[branch]
        if limit is None or seq <= limit:
            return True
        # the run's end is published after the last tick's checkpoint, but belongs to that tick
        return branch == self.branch and tick == self.tick and event_type in RUN_END


class StoredList:
    """A list the store holds (a message history), not read until a pane shows its items: a past
    frame's state draws `[402 items]` and is compared with its parent's by the reference alone.
    Not a `list` subclass (json.dumps and pydantic would take one for an empty list): what needs
    the items reads them through `whole()`."""

    __slots__ = ("_items", "_read", "length", "list_id")

    def __init__(self, list_id: str, length: int, read: Callable[[], list]):
        self.list_id, self.length, self._read = list_id, length, read
        self._items: list | None = None

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return f"StoredList({self.list_id!r}, {self.length})"

    def items(self) -> list:
        """The items, read from the store once (`StoreError` if it cannot)."""
        if self._items is None:
            self._items = self._read()
        return self._items

    def same_reference(self, other: Any) -> bool:
        return isinstance(other, StoredList) and (other.list_id, other.length) == (self.list_id, self.length)

    def __eq__(self, other: Any) -> bool:
        """Equal to the same items. A stored list is only appended to and never written over, so two
        references to one list are equal exactly when their lengths are: neither is read. One the
        store cannot read equals nothing (a mark, then; opening it says why)."""
        if isinstance(other, StoredList) and other.list_id == self.list_id:
            return other.length == self.length
        if isinstance(other, StoredList | list):
            try:
                return len(other) == self.length and self.items() == whole(other)
            except StoreError:
                return False
        return NotImplemented

    __hash__ = None  # a list is not hashable either


def whole(value: Any) -> Any:
    """The value itself: a stored list's items read (the one seam where a past frame's list is read)."""
    return value.items() if isinstance(value, StoredList) else value


@dataclass(frozen=True)
class Mark:
    """A state key whose value differs from the previous checkpoint of the branch."""

    old: Any
    new: Any
    between: int | None = None  # written after this tick's checkpoint, by work finishing between ticks


def diff(old: State, new: State) -> dict[str, Mark]:
    """Qualified key (`key` or `ns.key`) -> Mark, for every key added, changed or removed."""
    return {key: Mark(before, after) for key, before, after in changed_keys(old, new)}


class Saved(NamedTuple):
    """What marks and timeline rows read of a checkpoint: its tick, state and node statuses, and
    the nodes its tick left with another status than one they returned (`Returns.transient`)."""

    tick: int
    state: State
    statuses: Mapping[str, str]
    transient: frozenset[str] = frozenset()


class _Stored(dict):
    """A remembered state as the runner stored it, not named and converted yet."""


T = TypeVar("T")


class _Few(list[T]):
    """Values a run has few of, each held once: a header keeps a value's place, a number."""

    def __init__(self) -> None:
        super().__init__()
        self._places: dict[T, int] = {}

    def place(self, value: T) -> int:
        """`value`'s place, added at the end when new."""
        at = self._places.get(value)
        if at is None:
            at = self._places[value] = len(self)
            self.append(value)
        return at


class Headers(Sequence[CheckpointInfo]):
    """One run's checkpoint headers, oldest first, as columns of numbers (a `CheckpointInfo` each, its
    strings, ints and float, and two dict entries were ~14 objects a checkpoint kept for the run's
    length): each header is built when read. Its run, branch, status and source are one of the few
    such combinations a run has. Each keeps where its lineage leaves its branch (`left`) and the
    numbers its timeline row's summary is written from, once worked out (`summaries`)."""

    def __init__(self, run_id: str | None):
        self.run_id = run_id
        self.ids, self.parents, self.ticks, self.positions = array("q"), array("q"), array("q"), array("q")
        self.times = array("d")
        self.kinds = array("L")  # each header's (run, branch, status, source): its place in `_kinds`
        self._kinds: _Few[tuple[str, str, str, str]] = _Few()
        self.left = array("q")  # the place of its nearest ancestor on another branch (-1: none)
        self.nodes = array("q")  # its summary's nodes changed (-1: not worked out yet)
        self.keys = array("L")  # its summary's state keys changed: their place in `_keys`
        self._keys: _Few[tuple[str, ...]] = _Few()
        self._ordered = True  # ids only grew: a header is found by bisection

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        run_id, branch, status, source = self._kinds[self.kinds[index]]
        parent = self.parents[index]
        return CheckpointInfo(self.ids[index], run_id, branch, None if parent < 0 else parent, self.ticks[index],
                              self.times[index], status, source, self.positions[index])

    def __iter__(self) -> Iterator[CheckpointInfo]:
        return map(self.__getitem__, range(len(self)))

    def add(self, info: CheckpointInfo) -> None:
        """A header listed after those held; its parent is listed before it (or is no ancestor: a damaged
        store's loop of parents ends the walk there)."""
        code = self._kinds.place((info.run_id, info.branch, info.status, info.source))
        parent = self.place(info.parent_id) if info.parent_id is not None else None
        left = -1 if parent is None else self.left[parent] if self.branch(parent) == info.branch else parent
        self._ordered = self._ordered and (not self.ids or info.id > self.ids[-1])
        self.ids.append(info.id)
        self.parents.append(-1 if info.parent_id is None else info.parent_id)
        self.ticks.append(info.tick)
        self.times.append(info.time)
        self.positions.append(info.event_position)
        self.kinds.append(code)
        self.left.append(left)
        self.nodes.append(-1)
        self.keys.append(0)

    def place(self, checkpoint_id: int) -> int | None:
        """Where the header of `checkpoint_id` is held (None: not this run's)."""
        ids = self.ids
        if self._ordered:
            at = bisect_left(ids, checkpoint_id)
            return at if at < len(ids) and ids[at] == checkpoint_id else None
        return next((at for at in range(len(ids) - 1, -1, -1) if ids[at] == checkpoint_id), None)

    def branch(self, place: int) -> str:
        return self._kinds[self.kinds[place]][1]

    def last_of(self, branch: str) -> int | None:
        """The place of the branch's newest header (the greatest id)."""
        if self._ordered:  # the last of the branch's (a step looks for the head's: from the newest back)
            return next((at for at in range(len(self) - 1, -1, -1) if self.branch(at) == branch), None)
        places = [at for at in range(len(self)) if self.branch(at) == branch]
        return max(places, key=self.ids.__getitem__) if places else None

    def summary_numbers(self, place: int) -> tuple[int, list[str]] | None:
        """(nodes changed, state keys changed) of the header's row, once noted (None: not yet)."""
        nodes = self.nodes[place]
        return None if nodes < 0 else (nodes, list(self._keys[self.keys[place]]))

    def note_summary(self, place: int, nodes: int, keys: list[str]) -> None:
        self.nodes[place], self.keys[place] = nodes, self._keys.place(tuple(keys))


class RunTimeline:
    """Read side of the store for one session: checkpoints (cached), lineages, row summaries."""

    def __init__(self, store: CheckpointStore, names: StateNames):
        self.store = store
        self.names = names
        self._cache: OrderedDict[int, tuple[Checkpoint, State]] = OrderedDict()
        self._headers = Headers(None)  # one run's headers, as listed
        self._remembered: OrderedDict[int, Saved] = OrderedDict()  # the live runner's last saves (state
        # as stored until first read: `saved` names it then)

    def infos(self, run_id: str) -> Headers:
        """Every checkpoint header of a run, oldest first. Saved checkpoints never change, so only
        those newer than the last one listed are read: a step costs the same at tick 10 and 10,000."""
        headers = self._headers
        if headers.run_id != run_id:
            headers = self._headers = Headers(run_id)
        for info in self.store.list(run_id, after=headers.ids[-1] if headers.ids else None):
            headers.add(info)
        return headers

    def info(self, run_id: str, checkpoint_id: int) -> CheckpointInfo:
        """A checkpoint's header, from its run's listing (the head is looked up most)."""
        headers = self.infos(run_id)
        place = headers.place(checkpoint_id)
        return headers[place] if place is not None else self.get(checkpoint_id)[0].info

    def get(self, checkpoint_id: int) -> tuple[Checkpoint, State]:
        """The checkpoint and its state by one name per value; `CheckpointError` if unknown. Its stored
        lists are not read yet (a 400-message history is most of a checkpoint's read): in the state
        each is a `StoredList`, in the checkpoint's own state a `Deferred` of the same read, what a
        `StateManager` restored from it with `trusted=checkpoint.lists` reads when first read."""
        cached = self._cache.pop(checkpoint_id, None)
        if cached is None:
            try:
                checkpoint = self.store.get(int(checkpoint_id), read_lists=False)
            except (StoreError, ValueError) as exc:
                raise CheckpointError(str(exc)) from None
            for ns, refs in checkpoint.lists.items():
                for key, (list_id, length) in refs.items():
                    read = functools.partial(self.store.read_list, list_id, length)
                    checkpoint.state.setdefault(ns, {})[key] = StoredList(list_id, length, read)
            cached = (checkpoint, self.names.state(checkpoint.state, parsed=True))
            for ns, refs in checkpoint.lists.items():
                for key in refs:
                    checkpoint.state[ns][key] = Deferred(checkpoint.state[ns][key].items)
        self._cache[checkpoint_id] = cached
        while len(self._cache) > CACHED:
            self._cache.popitem(last=False)
        return cached

    def remember(self, checkpoint_id: int, saved: Saved) -> None:
        """What the live runner has just saved, as the runner holds it (its state as stored: values are
        replaced, never changed, so holding them is holding the save): the head's marks and its
        timeline row then read nothing back (decoding a checkpoint: ~60 ms at 100,000 nodes), and a
        tick pays no conversion of a state nobody draws (a headless run)."""
        self._remembered[checkpoint_id] = saved._replace(state=_Stored(saved.state))
        while len(self._remembered) > CACHED:
            self._remembered.popitem(last=False)

    def saved(self, checkpoint_id: int) -> Saved:
        """A checkpoint's tick, state and statuses: as remembered, or from the store."""
        saved = self._remembered.get(checkpoint_id)
        if saved is None:
            checkpoint, state = self.get(checkpoint_id)
            returns = checkpoint.returns
            return Saved(checkpoint.tick, state, checkpoint.statuses,
                         frozenset(returns.transient(checkpoint.statuses)) if returns is not None else frozenset())
        if type(saved.state) is _Stored:
            saved = self._remembered[checkpoint_id] = saved._replace(state=self.names.state(saved.state))
        return saved

    def parent_state(self, checkpoint: CheckpointInfo) -> State | None:
        return self.saved(checkpoint.parent_id).state if checkpoint.parent_id is not None else None

    def marks(self, checkpoint: CheckpointInfo) -> dict[str, Mark]:
        """What the checkpoint holds that its parent did not (nothing for a run's first)."""
        parent = self.parent_state(checkpoint)
        return {} if parent is None else diff(parent, self.saved(checkpoint.id).state)

    def lineage(self, checkpoint: CheckpointInfo | None, run_id: str | None, branch: str) -> Lineage:
        """The lineage of a checkpoint, or (checkpoint None) of the head of `branch`, still growing."""
        limits: dict[str, int | None] = {branch: None} if checkpoint is None else {}
        if run_id is None:
            return Lineage(run_id, branch, None, limits)
        headers = self.infos(run_id)
        if checkpoint is None:
            place = headers.last_of(branch)
        elif (place := headers.place(checkpoint.id)) is None:  # not listed: its parent's walk
            limits[checkpoint.branch] = checkpoint.event_position
            place = headers.place(checkpoint.parent_id) if checkpoint.parent_id is not None else None
        while place is not None:  # a branch's limit is its newest checkpoint's: its older ones are skipped
            limits.setdefault(headers.branch(place), headers.positions[place])
            place = headers.left[place] if headers.left[place] >= 0 else None
        return Lineage(run_id, branch, checkpoint.tick if checkpoint is not None else None, limits)

    def summary(self, info: CheckpointInfo) -> str:
        """`3 nodes; messages, rounds`: node statuses and state keys changed since the parent (worked out
        once: two checkpoints decoded; kept as numbers beside the header)."""
        headers = self._headers
        place = headers.place(info.id) if headers.run_id == info.run_id else None
        noted = headers.summary_numbers(place) if place is not None else None
        if noted is None:
            saved = self.saved(info.id)
            parent = self.saved(info.parent_id) if info.parent_id is not None else None
            noted = row_numbers(saved.statuses, saved.transient, saved.state,
                                None if parent is None else (parent.statuses, parent.state))
            if place is not None:
                headers.note_summary(place, *noted)
        return checkpoint_summary(info, *noted)


__all__ = ["RUN_END", "Headers", "Lineage", "Mark", "RunTimeline", "Saved", "State", "StateNames", "StoredList",
           "TakenStatuses", "diff", "whole"]
