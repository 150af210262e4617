"""The session's event log: every event of its runs, per branch and per node, a tick's telemetry as one block.

A tick at 100,000 nodes changes ~10,000 of them: an event object each (and a row, and a place in
each index) cost a step ~60 ms and ~200 bytes a change. So a local session takes a tick's telemetry
(its `node.returned` and `node.status` events and its `tick.completed`) as the runner numbered it, in
the record `runtime.engine.record.telemetry_record` makes of it with the tick's changes beside it
(`TickEvents`), and builds one of those events only when something reads it: the events pane the
rows on screen, a node's detail that node's. The other events are logged one by one (`StampedEvent`).
"""

from __future__ import annotations

import heapq
import math
import struct
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate
from typing import Any

from py_trees.common import Status

from runtime.engine.events import STATE_CHANGED, TICK_STARTED, EventType, RuntimeEvent, tick_completed_payload
from runtime.engine.record import TickReport, telemetry_record

from .timeline import RUN_END, Lineage

TICK_BLOCK = frozenset({EventType.NODE_RETURNED, EventType.NODE_STATUS, EventType.TICK_COMPLETED})  # `TickEvents`' types
NODE_EVENTS = frozenset({EventType.NODE_STATUS, EventType.NODE_RETURNED, EventType.NODE_ERROR,
                         EventType.TOOL_CALL_STARTED, EventType.TOOL_CALL_FAILED})  # what a node's detail is made of
SHARED_KEPT = 4_096  # distinct kinds and state keys shared by ticks' blocks (past it, a block keeps its own)
TOUCHING_KEPT = 64  # the nodes whose ticks `EventLog` keeps found (the node pane reads the selected one each step)


class StampedEvent:
    """A runtime event with the branch it belongs to (the bus knows run and tick, not branches).

    Every tick logs a `tick.started`, and most a `state.changed` (the keys a node wrote), kept for the
    run's length: the event, its payload, its keys' list, its number and its time were ~6 objects each.
    Those two are kept packed (their numbers one bytes object; the namespace and keys one tuple the
    ticks that wrote the same keys share) and the event is built anew where it is read."""

    __slots__ = ("_event", "_run", "_written", "between", "branch")

    def __init__(self, branch: str, event: RuntimeEvent, between: bool = False):
        self.branch, self.between = branch, between
        self._event: RuntimeEvent | bytes = event
        self._run, self._written = None, None  # packed: the run, and (namespace, keys) of a state.changed
        written = _packable(event)
        if written is not False:
            self._event, self._run, self._written = _PACKED.pack(event.seq, event.time, event.tick), event.run_id, written

    @property
    def event(self) -> RuntimeEvent:
        event = self._event
        if type(event) is not bytes:
            return event
        seq, at, tick = _PACKED.unpack(event)
        if self._written is None:
            return RuntimeEvent(seq, TICK_STARTED, at, tick, None, self._run, {})
        namespace, keys = self._written
        return RuntimeEvent(seq, STATE_CHANGED, at, tick, None, self._run, {"namespace": namespace, "keys": list(keys)})

    @property
    def type(self) -> str:
        event = self._event
        if type(event) is not bytes:
            return event.type
        return TICK_STARTED if self._written is None else STATE_CHANGED

    @property
    def node(self) -> str | None:
        event = self._event
        return None if type(event) is bytes else event.node

    @property
    def seq(self) -> int:
        event = self._event
        return _PACKED.unpack_from(event)[0] if type(event) is bytes else event.seq

    @property
    def tick(self) -> int:
        event = self._event
        return _PACKED.unpack_from(event)[2] if type(event) is bytes else event.tick

    @property
    def run_id(self) -> str | None:
        event = self._event
        return self._run if type(event) is bytes else event.run_id

    @property
    def payload(self) -> dict[str, Any]:
        return self.event.payload

    def in_lineage(self, lineage: Lineage) -> bool:
        return self.run_id == lineage.run_id and lineage.holds(self.branch, self.seq, self.tick, self.type)

    def __eq__(self, other: object) -> bool:
        if type(other) is not StampedEvent:
            return NotImplemented
        return (self.branch, self.event, self.between) == (other.branch, other.event, other.between)

    __hash__ = None  # type: ignore[assignment]  # (its event is not hashable either)

    def __repr__(self) -> str:
        return f"StampedEvent(branch={self.branch!r}, event={self.event!r}, between={self.between!r})"


_PACKED = struct.Struct("qdq")  # a packed event's seq, time and tick (`StampedEvent`)


def _packable(event: RuntimeEvent) -> tuple[str | None, tuple[str, ...]] | None | bool:
    """What a `tick.started` (None) or `state.changed` ((namespace, keys), shared) is packed with; False:
    not packed (another type, or fields a packed one would not give back exactly as they were)."""
    kind, payload = event.type, event.payload
    if (kind != TICK_STARTED and kind != STATE_CHANGED) or event.node is not None or type(payload) is not dict \
            or type(event.time) is not float or type(event.seq) is not int or type(event.tick) is not int:
        return False
    if kind == TICK_STARTED:
        return False if payload else None
    if list(payload) != ["namespace", "keys"]:
        return False
    namespace, keys = payload["namespace"], payload["keys"]
    if not (namespace is None or type(namespace) is str) or type(keys) is not list \
            or not all(type(key) is str for key in keys):
        return False
    return _shared((namespace, tuple(keys)))


class TickEvents(Sequence[StampedEvent]):
    """A tick's `node.returned` events (its unseen returns, few), `node.status` events (one per changed
    node) and `tick.completed`, in that order, as the runner numbered them: kept as the tick's telemetry
    record's numbers and its changes (compactly, below), each event built when read (and not kept here).
    Its `type` and `seq` are those of its first event's place: `tick.completed` ends it, so it is what
    a view that redraws on a tick's end looks for."""

    __slots__ = ("branch", "data", "kinds", "paths", "returned", "run_id", "state_keys", "status", "tick")

    type = EventType.TICK_COMPLETED.value

    def __init__(self, branch: str, run_id: str | None, report: TickReport, record: dict[str, Any]):
        self.branch, self.run_id, self.tick, self.status = branch, run_id, report.tick, report.status._value_
        # The tick's changes, kept for the run's length: the report's mapping (~37 bytes a change; a step
        # at 100,000 nodes changes ~10,000) as the changed paths in order and a byte a change naming its
        # (old, new) pair in `kinds` (9 bytes a change), made in C. The runner shares a kind's pair.
        changes: Iterable[tuple[Status, Status]] = report.changed.values()
        kinds = dict(zip(map(id, changes), changes, strict=True))
        if len(kinds) > len(Status) ** 2:  # pairs not shared (a report made elsewhere): one per kind
            changes = list(map({pair: pair for pair in changes}.__getitem__, changes))
            kinds = dict(zip(map(id, changes), changes, strict=True))
        code = {key: number for number, key in enumerate(kinds)}
        self.paths: tuple[str, ...] = tuple(report.changed)
        # The record's numbers and the changes' codes in one bytes object (the record's dict and lists were
        # ~13 objects a tick, an array and a bytes two more): the first number and time of the returns, of
        # the changes, and of `tick.completed`, the tick's duration and its nodes ticked (numbers and counts
        # are whole: a double holds them exactly), then a byte a change. The kinds and the state keys are
        # the few a run has, shared by the ticks that have them (`_shared`), not a list and a tuple a tick.
        unseen, changed, completed = record.get("r") or (0, 0, ()), record.get("n") or (0, 0), record["c"]
        self.data = _NUMBERS.pack(*unseen[:2], *changed[:2], *completed[:4]) + bytes(
            map(code.__getitem__, map(id, changes)))
        self.kinds: tuple[tuple[Status, Status], ...] = _shared(tuple(kinds.values()))
        self.returned: Sequence[list[str]] = unseen[2] or ()  # [path, returned, end] of each unseen return
        self.state_keys: tuple[str, ...] = _shared(tuple(completed[4]))  # (none, most ticks: the empty tuple)

    @property
    def codes(self) -> memoryview:
        return memoryview(self.data)[_NUMBERS.size:]

    @classmethod
    def of(cls, branch: str, run_id: str | None, report: TickReport) -> TickEvents | None:
        """The tick's block; None when its telemetry was not numbered (nothing to stand for)."""
        record = telemetry_record(report, derived=True)
        return None if record is None else cls(branch, run_id, report, record)

    @property
    def seq(self) -> int:
        return self._seq(0)

    @property
    def last_seq(self) -> int:
        return int(_NUMBERS.unpack_from(self.data)[4])

    def __len__(self) -> int:
        return len(self.returned) + len(self.paths) + 1

    def __getitem__(self, index):  # type: ignore[override]
        """The event at `index`, built anew at each read and kept by the reader alone (the rows on
        screen, a node's history): a block kept an event it built for the run's length, its
        `tick.completed` naming each change again (~40 bytes a change)."""
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError(index)
        return StampedEvent(self.branch, self._event(index))

    def __iter__(self) -> Iterator[StampedEvent]:
        return map(self.__getitem__, range(len(self)))

    def parts(self) -> list[tuple[str, range]]:
        """(event type, its places): what a filter on types alone can pass over without building any."""
        unseen, changed = len(self.returned), len(self.paths)
        return [(EventType.NODE_RETURNED.value, range(unseen)), (EventType.NODE_STATUS.value, range(unseen, unseen + changed)),
                (EventType.TICK_COMPLETED.value, range(unseen + changed, unseen + changed + 1))]

    def _seq(self, index: int) -> int:
        unseen, numbers = len(self.returned), _NUMBERS.unpack_from(self.data)
        if index < unseen:
            return int(numbers[0]) + index
        if index < unseen + len(self.paths):
            return int(numbers[2]) + index - unseen
        return int(numbers[4])

    def _event(self, index: int) -> RuntimeEvent:
        """One event as `runtime.engine.record.telemetry_events` rebuilds it from the same record."""
        numbers, unseen, seq = _NUMBERS.unpack_from(self.data), self.returned, self._seq(index)
        if index < len(unseen):
            path, returned, end = unseen[index]
            return RuntimeEvent(seq, EventType.NODE_RETURNED.value, numbers[1], self.tick, path, self.run_id,
                                {"status": returned, "end": end})
        index -= len(unseen)
        if index < len(self.paths):
            path = self.paths[index]
            old, new = self.kinds[self.data[_NUMBERS.size + index]]
            return RuntimeEvent(seq, EventType.NODE_STATUS.value, numbers[3], self.tick, path, self.run_id,
                                {"old": old._value_, "new": new._value_})
        at, duration_ms, ticked = numbers[5:8]
        pairs = [[old._value_, new._value_] for old, new in self.kinds]  # a kind's list shared by its changes
        changed = dict(zip(self.paths, map(pairs.__getitem__, self.codes), strict=True))  # made in C
        return RuntimeEvent(seq, EventType.TICK_COMPLETED.value, at, self.tick, None, self.run_id,
                            tick_completed_payload(self.status, duration_ms, changed, list(self.state_keys), int(ticked)))

    def of_node(self, path: str) -> list[StampedEvent]:
        """The node's events in this tick: its unseen returns, then its change."""
        places = [i for i, (returned_path, _, _) in enumerate(self.returned) if returned_path == path]
        if path in self.paths:  # (a scan in C: ~0.1 ms a tick at 10,000 changes; `EventLog._touching` once a tick)
            places.append(len(self.returned) + self.paths.index(path))
        return [self[i] for i in places]

    def touches(self, path: str) -> bool:
        """Whether the tick has an event of the node (a change, an unseen return)."""
        return path in self.paths or any(returned_path == path for returned_path, _, _ in self.returned)

    def in_lineage(self, lineage: Lineage) -> bool:
        """Whole or not at all: a lineage is cut at a checkpoint, which comes after its tick's telemetry."""
        return self.run_id == lineage.run_id and lineage.holds(self.branch, self.seq, self.tick, self.type)


_NUMBERS = struct.Struct("8d")  # a tick's block's numbers (`TickEvents.data`)
_SHARED: dict[tuple, tuple] = {}  # the kinds and state keys ticks have had, one tuple each


def _shared(value: tuple) -> tuple:
    """The one tuple equal to `value` that blocks share (a run has few: a loop's rounds repeat them)."""
    return _SHARED.setdefault(value, value) if len(_SHARED) < SHARED_KEPT or value in _SHARED else value


Entry = StampedEvent | TickEvents  # what the log keeps: an event, or a tick's telemetry


class Events(Sequence[StampedEvent]):
    """Events in order, a tick's telemetry counted as its events and built only where read (the
    rows a pane draws): `entries` are what the log keeps, `plain()` the events that are no tick's
    telemetry (model and tool calls are looked for among those)."""

    __slots__ = ("_ends", "entries")

    def __init__(self, entries: Sequence[Entry] = ()):
        self.entries = entries
        self._ends: list[int] | None = None

    def _counted(self) -> list[int]:
        if self._ends is None:
            self._ends = list(accumulate(len(e) if type(e) is TickEvents else 1 for e in self.entries))
        return self._ends

    def __len__(self) -> int:
        ends = self._counted()
        return ends[-1] if ends else 0

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        ends = self._counted()
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        at = bisect_right(ends, index)
        entry = self.entries[at]
        return entry if type(entry) is StampedEvent else entry[index - (ends[at] - len(entry))]

    def __iter__(self) -> Iterator[StampedEvent]:
        for entry in self.entries:
            if type(entry) is StampedEvent:
                yield entry
            else:
                yield from entry

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def plain(self) -> list[StampedEvent]:
        return [entry for entry in self.entries if type(entry) is StampedEvent]


class _Branch:
    """One (run, branch)'s entries in the order logged, with what `EventLog.of` cuts them by."""

    __slots__ = ("ends", "events", "ordered", "positions")

    def __init__(self) -> None:
        self.events: list[Entry] = []
        self.positions = array("q")  # each entry's place in its run's log: branches merge in that order
        self.ends: list[tuple[int, StampedEvent]] = []  # the run's end events, which a lineage may hold past its limit
        self.ordered = True  # seq never went down: the events up to a limit are a prefix

    def add(self, stamped: Entry, position: int) -> int:
        """Log an entry; returns the position it takes. A tick's telemetry comes after the tick's
        checkpoint is saved, after what an asyncio store let publish meanwhile: it goes in at its
        numbers' place (with its neighbour's position), so the entries stay a prefix to cut."""
        events = self.events
        if events and stamped.seq < _last_seq(events[-1]):
            at = bisect_right(events, stamped.seq, key=_seq)
            if type(stamped) is TickEvents and (at == 0 or _last_seq(events[at - 1]) < stamped.seq) \
                    and events[at].seq > stamped.last_seq:
                position = self.positions[at - 1] if at else self.positions[0]
                events.insert(at, stamped)
                self.positions.insert(at, position)
                return position
            self.ordered = False
        events.append(stamped)
        self.positions.append(position)
        if stamped.type in RUN_END and type(stamped) is StampedEvent:
            self.ends.append((position, stamped))
        return position

    def held(self, lineage: Lineage, limit: int | None) -> tuple[list[Entry], Sequence[int]]:
        """The entries `lineage` holds and their positions: a prefix cut by bisection, not a test of each."""
        events, positions = self.events, self.positions
        if not self.ordered:
            kept = [i for i, stamped in enumerate(events) if stamped.in_lineage(lineage)]
            return [events[i] for i in kept], [positions[i] for i in kept]
        cut = len(events) if limit is None else bisect_right(events, limit, key=_seq)
        events, positions = events[:cut], positions[:cut]
        if limit is not None:
            for position, stamped in self.ends:
                if stamped.seq > limit and stamped.in_lineage(lineage):
                    events.append(stamped)
                    positions.append(position)
        return events, positions


def _seq(entry: Entry) -> int:
    return entry.seq


def _last_seq(entry: Entry) -> int:
    return entry.seq if type(entry) is StampedEvent else entry.last_seq


def _position(placed: tuple[int, Any]) -> int:
    return placed[0]


class _Writes:
    """One run's `state.changed` events and their ticks side by side, in the order logged (a dict key and a
    list a tick were kept for the run's length, its tick's int with them): a tick's found by the array in C."""

    __slots__ = ("events", "ticks")

    def __init__(self) -> None:
        self.ticks, self.events = array("q"), []

    def of(self, tick: int) -> list[StampedEvent]:
        ticks, found, at = self.ticks, [], 0
        while True:
            try:
                at = ticks.index(tick, at)
            except ValueError:
                return found
            found.append(self.events[at])
            at += 1


class EventLog:
    """Every event of the session's runs (live, or loaded from the store), per branch and per node.

    A frame's events are read per branch of its lineage, up to the branch's limit by bisection:
    proportional to what the frame shows, not to the run (esc at 10,000 nodes tested all ~10,000
    events one by one, ~16 ms)."""

    def __init__(self) -> None:
        self._branches: dict[tuple[str | None, str], _Branch] = {}
        self._logged: dict[str | None, int] = {}  # entries logged per run: the next one's position
        self._nodes: dict[tuple[str | None, str], list[tuple[int, StampedEvent]]] = {}  # (position, event)
        # per branch: its ticks' positions and blocks, side by side (a pair each held a tuple a tick)
        self._ticks: dict[tuple[str | None, str], tuple[array, list[TickEvents]]] = {}
        # (run, branch, path) -> (the branch's ticks looked at, the places among them of those that touch the
        # node): a node's history read each step (the node pane) looks at each tick once, not at every tick
        # of the run each time, and holds a number a tick that touches it
        self._touching: dict[tuple[str | None, str, str], tuple[int, array]] = {}
        self._writes: dict[str | None, _Writes] = {}  # state.changed, per run
        self._tokens: dict[tuple[str | None, str], list[tuple[int, int]]] = {}  # (seq, running total) per branch

    def _place(self, run_id: str | None, branch_name: str, entry: Entry) -> int:
        position = self._logged.get(run_id, 0)
        self._logged[run_id] = position + 1
        branch = self._branches.get((run_id, branch_name))
        if branch is None:
            branch = self._branches[(run_id, branch_name)] = _Branch()
        return branch.add(entry, position)

    def add(self, stamped: StampedEvent) -> None:
        event = stamped.event  # its fields read once, not through the properties
        run_id, kind = event.run_id, event.type
        position = self._place(run_id, stamped.branch, stamped)
        if event.node is not None and kind in NODE_EVENTS:
            self._nodes.setdefault((run_id, event.node), []).append((position, stamped))
        elif kind == EventType.STATE_CHANGED:
            writes = self._writes.get(run_id)
            if writes is None:
                writes = self._writes[run_id] = _Writes()
            writes.ticks.append(event.tick)
            writes.events.append(stamped)
        elif kind == EventType.MODEL_CALL_COMPLETED:
            totals = self._tokens.setdefault((run_id, stamped.branch), [])
            used = int((stamped.payload.get("usage") or {}).get("total_tokens", 0))
            totals.append((stamped.seq, (totals[-1][1] if totals else 0) + used))

    def add_tick(self, ticked: TickEvents) -> None:
        """A tick's telemetry as one entry (`TickEvents`): nothing done per changed node."""
        positions, blocks = self._ticks.setdefault((ticked.run_id, ticked.branch), (array("q"), []))
        positions.append(self._place(ticked.run_id, ticked.branch, ticked))
        blocks.append(ticked)

    def load(self, run_id: str, pairs: Iterable[tuple[str, RuntimeEvent]],
             saved: dict[tuple[str, int], int]) -> None:
        """A recorded run's events; `saved` gives each (branch, tick)'s checkpoint position."""
        self._keep(lambda run: run != run_id)
        self.extend(pairs, saved)

    def extend(self, pairs: Iterable[tuple[str, RuntimeEvent]],
               saved: dict[tuple[str, int], int]) -> None:
        """More of a recorded run's events, stored after those loaded (a followed run's landing)."""
        for branch, event in pairs:
            position = saved.get((branch, event.tick))
            self.add(StampedEvent(branch, event, position is not None and event.seq > position))

    def keep_only(self, run_id: str | None) -> None:
        """Forget every other run (a restart leaves the old run to the store)."""
        self._keep(lambda run: run == run_id)

    def _keep(self, wanted: Callable[[str | None], bool]) -> None:
        """Keep, in the log and in each index (all keyed by run first), only the runs `wanted`."""
        self._logged = {run: count for run, count in self._logged.items() if wanted(run)}
        self._writes = {run: ticks for run, ticks in self._writes.items() if wanted(run)}
        self._branches, self._nodes, self._ticks, self._tokens, self._touching = (
            {key: value for key, value in index.items() if wanted(key[0])}
            for index in (self._branches, self._nodes, self._ticks, self._tokens, self._touching))

    def of(self, lineage: Lineage) -> Events:
        """The lineage's events in the order logged (its branches' merged by position)."""
        parts = [branch.held(lineage, limit) for name, limit in lineage.limits.items()
                 if (branch := self._branches.get((lineage.run_id, name))) is not None]
        parts = [(events, positions) for events, positions in parts if events]
        if len(parts) <= 1:
            return Events(parts[0][0] if parts else [])
        return Events([entry for _, entry in heapq.merge(
            *(zip(positions, events, strict=True) for events, positions in parts), key=_position)])

    def of_node(self, lineage: Lineage, path: str) -> list[StampedEvent]:
        """The node's events in the lineage, in the order logged: its own, and its part of each tick's telemetry."""
        own = [(position, e) for position, e in self._nodes.get((lineage.run_id, path), ()) if e.in_lineage(lineage)]
        ticks = [(position, e) for branch in lineage.limits
                 for position, ticked in self._ticks_touching(lineage.run_id, branch, path)
                 if ticked.in_lineage(lineage) for e in ticked.of_node(path)]
        if not ticks:
            return [e for _, e in own]
        return [e for _, e in heapq.merge(own, sorted(ticks, key=_position), key=_position)]

    def _ticks_touching(self, run_id: str | None, branch: str, path: str) -> list[tuple[int, TickEvents]]:
        """The branch's ticks with an event of the node, those logged since the last look looked at now."""
        positions, blocks = self._ticks.get((run_id, branch), (array("q"), []))
        seen, found = self._touching.pop((run_id, branch, path), (0, array("q")))  # (back in last: the least recent go)
        found.extend(place for place in range(seen, len(blocks)) if blocks[place].touches(path))
        self._touching[(run_id, branch, path)] = (len(blocks), found)
        if len(self._touching) > TOUCHING_KEPT:
            del self._touching[next(iter(self._touching))]
        return [(positions[place], blocks[place]) for place in found]

    def tokens(self, lineage: Lineage) -> int:
        """Tokens of the lineage's model calls (`model.call.completed`): swarm agents' and skills'
        included, each branch counted up to where the lineage leaves it."""
        total = 0
        for branch, limit in lineage.limits.items():
            totals = self._tokens.get((lineage.run_id, branch))
            if totals:
                at = len(totals) if limit is None else bisect_right(totals, (limit, math.inf))
                total += totals[at - 1][1] if at else 0
        return total

    def writes(self, lineage: Lineage, tick: int) -> list[StampedEvent]:
        """The lineage's `state.changed` events stamped with `tick` (during it, or after its checkpoint)."""
        writes = self._writes.get(lineage.run_id)
        return [e for e in writes.of(tick) if e.in_lineage(lineage)] if writes is not None else []


def status_history(events: Iterable[StampedEvent]) -> list[tuple[int, str, str]]:
    """(tick, old, new) for every status one node took, in order, from its events: its ticks' end
    statuses (`node.status`) and the returns they did not show (`node.returned`). A loop round's
    `done` returning FAILURE in tick 3, reset to INVALID in the same tick, reads (3, INVALID,
    FAILURE), (3, FAILURE, INVALID). A node with no event yet has been INVALID."""
    history: list[tuple[int, str, str]] = []
    now = Status.INVALID.value  # where the events so far left the node
    ended: tuple[int, str] | None = None  # (tick, end status) of a node.returned: where that tick leaves it

    def move(tick: int, new: str) -> None:
        nonlocal now
        if new != now:
            history.append((tick, now, new))
            now = new

    for stamped in events:
        kind, tick, payload = stamped.type, stamped.tick, stamped.payload
        if kind not in (EventType.NODE_STATUS, EventType.NODE_RETURNED):
            continue
        if ended is not None and ended[0] != tick:  # no node.status of that tick followed: it ended as it began
            move(*ended)
            ended = None
        if kind == EventType.NODE_RETURNED:
            move(tick, payload.get("status"))
            ended = (tick, payload.get("end"))
        else:
            if ended is None:
                now = payload.get("old")  # (as it began: a lineage's events may start mid-run)
            ended = None
            move(tick, payload.get("new"))
    if ended is not None:
        move(*ended)
    return history


__all__ = ["NODE_EVENTS", "TICK_BLOCK", "EventLog", "Events", "StampedEvent", "TickEvents", "status_history"]
