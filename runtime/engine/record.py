"""The record of a tick: what each node returned, each time, in order, beside what the tick left.

py_trees' tick is a generator that yields each node once each time it returns, right after its
status is set (a composite after its children; a node ticked twice in one tick, twice). The runner
keeps the status of each node it is handed beside its path, so `TickReport.ticked[i]` returned
`TickReport.returned[i]`: the tick's truth. The statuses at the tick's end are a summary of it, and
they do not show every return: a ReAct round's `done` returns FAILURE and the loop resets it to
INVALID in the same tick, so it ends as it began. Such returns are the tick's *unseen* ones
(`Returns.unseen`): the runner publishes a `node.returned` event for each, the checkpoint store keeps
the whole record with the tick's checkpoint, and the studio's views are derived from it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from py_trees.common import Status

from .events import EventType, RuntimeEvent, tick_completed_payload

if TYPE_CHECKING:
    from .boundaries import NodeBoundary


@dataclass(frozen=True, slots=True)
class Returns:
    """What nodes returned in one tick (or in the part of it run so far), in order: `paths[i]`
    returned `statuses[i]`. Two lists side by side, not a pair per return (10,000 a tick)."""

    paths: Sequence[str] = ()
    statuses: Sequence[Status] = ()

    def __len__(self) -> int:
        return len(self.paths)

    def __iter__(self) -> Iterator[tuple[str, Status]]:
        return zip(self.paths, self.statuses, strict=True)

    def of(self, path: str) -> list[Status]:
        """Every status `path` returned, in order (none: it was not ticked)."""
        return [status for p, status in self if p == path]

    def last(self) -> dict[str, Status]:
        """Each node that returned -> what it returned last (what it shows mid-tick)."""
        return dict(zip(self.paths, self.statuses, strict=True))

    def not_reached(self, paths: Sequence[str], at: str) -> frozenset[str]:
        """Of a tree's `paths` (in its order), those a tick held before `at` has not reached yet: `at`, the
        nodes after it and its ancestors (ticking it), but any that returned already. A node before `at`
        that did not return was passed by (a memory sequence's finished child): it keeps its status."""
        ancestors, parent = [], at.rpartition("/")[0]
        while parent:
            ancestors.append(parent)
            parent = parent.rpartition("/")[0]
        place = paths.index(at) if at in paths else 0  # (a node not indexed yet: every one not returned)
        return frozenset(paths[place:]).union(ancestors).difference(self.paths)

    def unseen(self, ends: Sequence[Status]) -> list[int]:
        """The places of the returns the statuses at the tick's end do not show (`ends[i]`: the end
        status of `paths[i]`'s node): every return of a node but its last, and a last one the tree
        changed before the tick ended (a loop resetting the round it just ran)."""
        return unseen_places(self.paths, self.statuses, ends)

    def transient(self, ends: Mapping[str, str]) -> set[str]:
        """The nodes that returned a status they did not end the tick with (`ends`: path -> the
        status value it ended with, as a checkpoint stores them; INVALID when missing)."""
        return {path for path, status in self if status._value_ != ends.get(path, "INVALID")}


def unseen_places(paths: Sequence[str], statuses: Sequence[Status], ends: Sequence[Status]) -> list[int]:
    """`Returns.unseen` of the returns `paths[i]` -> `statuses[i]` (the runner's, without a `Returns` a tick).
    Compared list to list first: a tick where every node returned once and kept it costs no loop in Python."""
    if ends == statuses and len(set(paths)) == len(paths):
        return []
    last = dict(zip(paths, range(len(paths)), strict=True))
    return [i for i, (path, status, end) in enumerate(zip(paths, statuses, ends, strict=True))
            if status is not end or last[path] != i]


class TickTelemetry(NamedTuple):
    """(number, time) of a tick's telemetry events: `tick.started`, the first `node.returned` (one per
    unseen return, in order; None: none), the first `node.status` (one per changed node, numbered in
    `changed` order; None: nothing changed) and `tick.completed`. A runner with a checkpointer
    numbers them whether or not anybody wants them built: the checkpointer stores these few fields,
    not the events, and the store rebuilds them from its record. A tuple: made every tick."""

    started: tuple[int, float]
    statuses: tuple[int, float] | None
    completed: tuple[int, float]
    returned: tuple[int, float] | None = None


@dataclass
class TickReport:
    """What one tick did: what each node returned (`ticked` and `returned`, in order), the statuses
    that changed by its end, the state it wrote. A report of a tick held at a node boundary
    (`paused_at`) carries only where it is held: `ReactiveRunner.held_returns` has its record so far."""

    tick: int
    status: Status
    changed: dict[str, tuple[Status, Status]] = field(default_factory=dict)  # path -> (old, new)
    ticked: list[str] = field(default_factory=list)  # the path of each node as it returned, in order
    state_changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # "ns.key" -> (old, new)
    duration_ms: float = 0.0
    paused_at: NodeBoundary | None = None  # the tick is held before this node; changes come when it ends
    telemetry: TickTelemetry | None = None  # with a checkpointer: where its telemetry events are numbered
    returned: list[Status] = field(default_factory=list)  # returned[i]: what ticked[i] returned
    # the returns its end does not show (`Returns.unseen`): (place in `ticked`, that node's status at the end)
    unseen: list[tuple[int, Status]] = field(default_factory=list)

    @property
    def state_keys(self) -> list[str]:
        return list(self.state_changes)

    @property
    def completed(self) -> bool:
        """False when the tick is held at a node boundary (the report then carries only `paused_at`)."""
        return self.paused_at is None

    @property
    def returns(self) -> Returns:
        return Returns(self.ticked, self.returned)

    @property
    def transient(self) -> set[str]:
        """The nodes that returned a status they did not end the tick with (`done` returning FAILURE
        before its loop resets it): `Returns.transient`, from the few unseen returns."""
        return {self.ticked[i] for i, end in self.unseen if self.returned[i] is not end}

    def moved(self, path: str) -> bool:
        """The node's status changed in this tick: by its end (`changed`), or at a return its end
        does not show (`transient`)."""
        return path in self.changed or path in self.transient


def telemetry_record(tick: TickReport | None, *, derived: bool = False,
                     before: list | None = None) -> dict[str, Any] | None:
    """A tick's telemetry events in a few plain fields, from which `telemetry_events` rebuilds them: what a
    checkpoint stores of them, and what the debug server sends an attached studio instead of the events.
    `s` tick.started and `c` tick.completed [number, time, ...its payload], `r` the node.returned
    block [first number, time, [[path, returned, end], ...]] (the unseen returns: few), `n` the
    node.status block [first number, time, count]; `x` the changes [path, old, new] unless `derived`
    (a store whose record's status delta gives them); `o` (`before`: a full record's packed statuses)
    the runs that give the packing before it, which its changes are from. None for a tick whose
    telemetry was not numbered."""
    telemetry = None if tick is None else tick.telemetry
    if telemetry is None:
        return None
    out: dict[str, Any] = {"s": list(telemetry.started), "c": [
        *telemetry.completed, round(tick.duration_ms, 3), len(tick.ticked), tick.state_keys]}
    if telemetry.returned is not None:
        out["r"] = [*telemetry.returned, [[tick.ticked[i], tick.returned[i]._value_, end._value_]
                                          for i, end in tick.unseen]]
    if telemetry.statuses is not None:
        out["n"] = [*telemetry.statuses, len(tick.changed)]
        if not derived:
            out["x"] = [[p, old._value_, new._value_] for p, (old, new) in tick.changed.items()]
        elif before is not None:
            out["o"] = before
    return out


def telemetry_events(run_id: str | None, tick: int, status: str, t: Mapping[str, Any],
                     changes: Sequence[Sequence[str]] | None = None) -> list[RuntimeEvent]:
    """The events `telemetry_record` kept in `t`, as the runner numbered them (`changes`: [path, old, new]
    when `t` has no `x`)."""
    (started, started_at), (completed, completed_at, duration_ms, ticked, state_keys) = t["s"], t["c"]
    events = [RuntimeEvent(started, EventType.TICK_STARTED.value, started_at, tick, None, run_id, {})]
    if "r" in t:
        first, at, unseen = t["r"]
        events += [RuntimeEvent(seq, EventType.NODE_RETURNED.value, at, tick, path, run_id, {"status": returned, "end": end})
                   for seq, (path, returned, end) in enumerate(unseen, first)]
    changes = t.get("x", changes or ())
    if "n" in t:
        first, at, _ = t["n"]
        events += [RuntimeEvent(seq, EventType.NODE_STATUS.value, at, tick, path, run_id, {"old": old, "new": new})
                   for seq, (path, old, new) in enumerate(changes, first)]
    changed = {path: [old, new] for path, old, new in changes}
    events.append(RuntimeEvent(completed, EventType.TICK_COMPLETED.value, completed_at, tick, None, run_id,
                               tick_completed_payload(status, duration_ms, changed, state_keys, ticked)))
    return events


__all__ = ["Returns", "TickReport", "TickTelemetry", "telemetry_events", "telemetry_record",
           "unseen_places"]
