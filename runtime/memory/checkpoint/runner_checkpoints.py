"""`RunnerCheckpoints`: saves a checkpoint after every tick of a runner, restores and forks.

Saving costs what the tick changed: the state keys it wrote (`take_dirty()`), the statuses
and positions of the nodes it changed (and their parents) that differ from the previous
save, resume data, and the events published since, all in one store transaction. The
tick's own telemetry is not taken as events (a large tree changes thousands of statuses
a tick): the record says how the runner numbered it and the store rebuilds it from the
status delta. A large tree's statuses (one with its paths stored once, `TreePaths`) are saved
packed instead (`statuses.py`): one letter a node, from the runner's status lists, and the runs
that differ from the previous save's, with the positions of the changed nodes' parents (every
composite's when many changed): a tick that changes each of 110,000 nodes saves in tens of
milliseconds, not a mapping of every path. The first save after a fresh start, a restore or a
fork captures the whole runner; the record is a full one again (the picture the deltas kept, not the tree walked
again) once the deltas since the last full one add up to `CHAIN_SIZE` times its size, and at
the latest every `full_every` saves: a restore parses a few full records' worth at most (a
ReAct run's chains are about ten records long; a large tree whose ticks change little goes
`full_every` saves between its big full records).

A run that suspends (`run.suspended`: it waits for an approval) gets a checkpoint of its own
(`suspend`), holding what it waits for and every event it published: a node may ask between
two ticks (a debugger steps tick by tick), after the tick's checkpoint, and another process
resumes the run from this one (`runtime.memory.checkpoint.waiting`).

A run stopped from outside (a signal, a cancelled task: `run.failed` with status INTERRUPTED)
gets a last checkpoint too (`interrupt`, status INTERRUPTED): it reads as interrupted, not as
RUNNING, and its statuses show where it stood.

Restoring stops the tree (cancelling tasks in flight), loads the state raw (no reducers,
run-scoped fields as saved), puts back statuses, composite positions and resume data, and
rewinds tick count and event position. An async node that was RUNNING starts its work
again: its task is started afresh just before the next tick, and if that tick had waited
for work in the original run it waits again, so a restored run retraces the original
tick for tick (same final state, same events).

A swarm's agents (the runner's `RunContext.runtime`) are recorded with it and restored with
it: `runtime.memory.checkpoint.agents`.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import itertools
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Set
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from pydantic_core import PydanticSerializationError

from ...engine.behaviour import JianmuNodeMixin
from ...engine.capture import RunnerState
from ...engine.events import INTERRUPTED, TICK_TELEMETRY, EventType, RuntimeEvent
from ...engine.loop_share import take_turn
from ...engine.record import telemetry_record
from ...state import GLOBAL, Deferred, StateManager
from .agents import AgentCheckpoints, host_part, is_agent_path, recorded_namespace
from .deferred import compile_deferred
from .model import Checkpoint, CheckpointRecord, ListTracker, Source, Step, TreePaths, dumpb, jsonable
from .positions import resumable_models
from .returns import ReturnsWriter
from .statuses import PackedWriter
from .store import CheckpointError, CheckpointStore, StoreError

if TYPE_CHECKING:
    from ...engine.runner import ReactiveRunner, TickReport

LIST_MIN = 8  # lists at least this long are stored as chunks (appends cost only the new items)
CHAIN_SIZE = 4  # a full record again once the deltas since the last one are this many times its size
DECODED_LISTS = 16  # stored lists kept decoded and validated, for restores that read them again
_FLUSH_ON = frozenset({EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_SUSPENDED})
TREE_PATHS_FROM = 1_000  # nodes: a tree this large has its paths stored once, its full records leave INVALID out
IN_FLIGHT = 2  # writes an asyncio store has on the wire before the runner awaits the oldest
SPILL_EVENTS = 2_000  # events held before they are written ahead of their tick's checkpoint (memory stays bounded)
_UNWRITTEN = 0  # the base id of a line whose full record is taken but not yet written (an asyncio store's)
T = TypeVar("T")


class _Line:
    """A line of checkpoints: the id of its full record, once written (an asyncio store's deltas
    may be taken before it is)."""

    __slots__ = ("id",)

    def __init__(self) -> None:
        self.id: int | None = None


def _in_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class RunnerCheckpoints:
    def __init__(self, runner: ReactiveRunner, store: CheckpointStore, full_every: int = 20):
        self.runner = runner
        self.store = store
        self.full_every = full_every
        self.branch = "main"
        self.head: int | None = None  # the last checkpoint of this runner's timeline
        self._run_id: str | None = None
        self._base_id: int | None = None
        self._line = _Line()  # the line the next delta builds on
        self._since_full = 0
        self._full_bytes = 0  # the size of the last full record, and of the deltas since
        self._chain_bytes = 0
        self._lists = ListTracker()
        self._returns = ReturnsWriter()  # each tick's returns, against the previous record's
        self._values: dict[tuple[str, str], Any] = {}
        self._statuses: dict[str, str] = {}  # path -> status, as saved
        self._resume: dict[str, Any] = {}  # path -> {"child": index, "data": resume data}, as saved
        self._touched: dict[str, None] = {}  # nodes changed (first, in tree order) or visited since the last save
        self._bindings: dict[str, dict[str, dict[str, str]]] = {}  # edited by a fork
        self._baseline: dict[str, tuple[dict[str, str], dict[str, str]]] = {}
        self._indexed: dict | None = None
        self._tree: TreePaths | None = None  # the indexed tree's paths, when it is large (`TreePaths`)
        self._packed: PackedWriter | None = None  # its statuses, packed (`statuses.py`)
        self._composites: frozenset[str] = frozenset()  # its composites' paths (a packed save captures their positions)
        self._events: list[tuple[str, RuntimeEvent]] = []
        self._taken: list[tuple[StateManager, set[tuple[str, str]]]] = []  # the dirty keys the record being taken took
        self._refused: set[tuple[str, str]] = set()  # record slots refused and not written since (`_put_state`)
        self._restoring = False
        self._decoded: dict[tuple[str, str, str], list] = {}  # (namespace, key, list id) -> validated items
        self._unwritten = False  # a write of events failed: the next save() tries again, and raises
        self._suspended_at: int | None = None  # the checkpoint that records the run's suspension, while it is the head
        self._agents = AgentCheckpoints(runner)  # its swarm's agents, recorded with it
        self._awaited = callable(getattr(store, "save_async", None))  # an asyncio store: a runner awaits its writes
        self._flying: deque[asyncio.Future] = deque()  # its writes in flight, oldest first: each starts after the last
        self._failures = 0  # writes that failed: a record taken before one failed, written after, is void (it builds on it)
        self._failed: StoreError | None = None  # why the last write failed, for the run to stop on
        runner.event_bus.subscribe(self._on_event, skip=TICK_TELEMETRY)  # rebuilt from the records
        if runner.context.io_recorder is None:
            from .io import IORecorder

            runner.context.io_recorder = IORecorder(store)
        attach = getattr(runner.context.io_recorder, "attach", None)
        if attach is not None:
            attach(self)
        self._index()  # now, not in the run's first save (a large tree: 30-60 ms of the first step)

    # -- events ----------------------------------------------------------------------
    def _on_event(self, event: RuntimeEvent) -> None:
        if self._restoring:
            return
        try:
            if event.type == EventType.RUN_STARTED and event.payload.get("fresh"):
                self._events.append(("main", event))
                self._write(Source.INPUT)
                return
            self._events.append((self.branch, event))
            if event.type == EventType.BINDING_CHANGED and event.node is not None:
                self._binding_changed(event.node)
            if event.type == EventType.RUN_SUSPENDED and self._suspended_at != self.head:
                self._write(Source.SUSPEND)
                return
            if event.type == EventType.RUN_FAILED and event.payload.get("status") == INTERRUPTED:
                self._write(Source.INTERRUPT, status=INTERRUPTED)
                return
            if event.type in _FLUSH_ON or (len(self._events) >= SPILL_EVENTS and not self._unwritten):
                if self._awaited and _in_loop():
                    self._flush_later()
                else:
                    self.flush()
        except StoreError:  # kept: the next save() writes them, or raises why it cannot and stops the run
            self._unwritten = True

    def _binding_changed(self, path: str) -> None:
        """A port rebound between ticks (by a debugger, say) is saved with the next checkpoint, so a
        restore or a view of the past sees the bindings the run had then."""
        node = self.runner.nodes.get(path)
        if isinstance(node, JianmuNodeMixin):  # copied: the dict may be a restored checkpoint's
            self._bindings = {**self._bindings, path: {"inputs": node.input_bindings,
                                                       "outputs": node.output_bindings}}

    def bindings_at(self, checkpoint: Checkpoint, path: str) -> tuple[dict[str, str], dict[str, str]]:
        """A node's (input, output) bindings as they were at `checkpoint`: those edited by then,
        else the tree's own."""
        self._index()
        inputs, outputs = self._baseline.get(path, ({}, {}))
        edited = checkpoint.bindings.get(path) or {}
        return dict(edited.get("inputs", inputs)), dict(edited.get("outputs", outputs))

    def rebound(self, checkpoint: Checkpoint | None = None) -> set[str]:
        """The nodes whose bindings differ from the tree's own: now, or as `checkpoint` recorded them
        (a debugger's rebinding is saved with the checkpoints, so the past says what was rebound then)."""
        self._index()
        edited = self._bindings if checkpoint is None else checkpoint.bindings
        baseline = self._baseline
        return {path for path, ports in edited.items() if path in baseline and (
            dict(ports.get("inputs", baseline[path][0])), dict(ports.get("outputs", baseline[path][1])))
            != baseline[path]}

    def node(self, path: str) -> Any:
        """The node at `path`: the host's, or a swarm agent's (`@agent/path`)."""
        node = self.runner.nodes.get(path)
        return node if node is not None else self._agents.node(path)

    def flush(self) -> None:
        """Write the events not written yet (what ends a run); `StoreError` if the store refuses."""
        if self._events:
            events, self._events = self._events, []
            try:
                self.store.add_events(events)
            except StoreError:
                self._events[:0] = events
                raise

    # -- saving ----------------------------------------------------------------------
    def after_tick(self, report: TickReport) -> Awaitable[None] | None:
        """Save the tick. Into an asyncio store the write goes on the wire behind those in flight and
        the next tick comes at once, as after a synchronous save, while at most `IN_FLIGHT` writes are;
        beyond that, returns the oldest for the runner to await (it yields the loop meanwhile)."""
        if self.runner.run_id == self._run_id:  # (an earlier run's failure is not this one's: `_mark` drops it)
            self._raise_failed()  # (a record written between ticks that failed: the run's input)
        if self._packed is None:  # (a packed save finds what changed in the runner's statuses)
            self._touched.update(_touched(report.changed))
        if self._awaited and _in_loop():
            self._save_later(Source.LOOP, None, report)
            self._check_divergence()
            return self._oldest() if len(self._flying) > IN_FLIGHT else None
        self.save(Source.LOOP, tick=report)
        self._check_divergence()
        return None

    async def _oldest(self) -> None:
        with contextlib.suppress(StoreError):  # (raised below, once)
            await asyncio.shield(self._flying[0])  # (a run cancelled meanwhile leaves the write going: `_settled`)
        self._raise_failed()

    def _raise_failed(self) -> None:
        """A write that failed stops the run, as a synchronous save that raised would have."""
        failed, self._failed = self._failed, None
        if failed is not None:
            raise failed

    def _check_divergence(self) -> None:
        take = getattr(self.runner.context.io_recorder, "take_divergence", None)
        divergence = take() if take is not None else None
        if divergence is not None:  # a strict replay met a request it never recorded: stop the run
            raise divergence

    def _write(self, source: str, status: str | None = None) -> None:
        """Save now, or (an asyncio store, in its event loop) start the save after the write in flight. The
        run's input that could not be written (a store locked for longer than its wait) stops the run at
        its next tick (`after_tick`), as a tick's does: it cannot be taken again later."""
        try:
            if self._awaited and _in_loop():
                self._save_later(source, status, None)
            else:
                self.save(source, status)
        except StoreError as exc:
            if source == Source.INPUT:
                self._failed = self._failed or exc
            raise

    def _save_later(self, source: str, status: str | None, tick: TickReport | None) -> asyncio.Future[int]:
        """The record taken now (the runner as it is after this tick), written once the write in
        flight before it is done (its id is this one's parent)."""
        events, mark = None, self._mark()
        try:
            with self._storable() as taken:
                record, events = taken[:] = self._record(source, status, tick)
                line, saving = self._line, self.store.save_async(record, events)  # (encoded now)
        except _Unstorable as exc:
            raise self._unstored(mark, events, exc) from exc

        async def write() -> int:
            record.parent_id = self.head
            if record.base_id == _UNWRITTEN:  # its full record was written since
                record.base_id = line.id
            try:
                checkpoint_id = await saving
            except StoreError as exc:
                raise self._unsaved(record.tick, exc) from exc
            self._saved(record, checkpoint_id, line)
            return checkpoint_id

        return self._later(events, write, saving.close)

    def _flush_later(self) -> None:
        if self._events:
            events, self._events = self._events, []
            self._later(events, lambda: self.store.add_events_async(events))

    def _later(self, events: list[tuple[str, RuntimeEvent]], write: Callable[[], Awaitable[T]],
               void: Callable[[], None] | None = None) -> asyncio.Future[T]:
        """Start `write` once the write in flight before it is done; if this one fails, `events` (what
        it was to write of the run's events) are kept for the next save, and the run stops at its next
        tick (`_failed`). A checkpoint's write (`void` given: drops it) taken before an earlier write
        failed is not written (its deltas build on that one) and raises, its events kept."""
        previous, failures = (self._flying[-1] if self._flying else None), self._failures

        async def follow() -> T:
            if previous is not None:
                with contextlib.suppress(StoreError):
                    await previous
            if void is not None and failures != self._failures:
                void()
                self._events[:0] = events
                raise StoreError("not written: an earlier checkpoint of the run was not")
            if (turn := take_turn(self.runner.context)) is not None:  # writes come due together: what each builds before it
                await turn  # sends (its statements, its events encoded) takes its turn in the loop's share
            try:
                return await write()
            except StoreError as exc:
                self._events[:0] = events
                self._unwritten, self._failed = True, self._failed or exc  # (the first says why)
                raise

        task = asyncio.ensure_future(follow())
        self._flying.append(task)
        task.add_done_callback(self._flying.remove)
        return task

    def settle(self) -> Awaitable[None] | None:
        """What waits for the writes in flight (the last ticks' checkpoints, and those a run ends with),
        or None when there are none (a synchronous store's: a tick awaits nothing); `StoreError` if
        one failed."""
        if not self._flying:
            self._raise_failed()
            return None
        return self._settled()

    async def _settled(self) -> None:
        """(A cancellation that meets the run awaiting a write never cancels the write, whose record the
        later ones are deltas of, and which the run's last checkpoint, interrupted, follows.)"""
        while writing := [write for write in self._flying if not write.done()]:  # (a done one leaves soon after)
            await asyncio.wait(writing)  # (never cancels them; their failures: `_failed`)
        self._raise_failed()

    def _start_session(self, run_id: str | None, branch: str, parent: int | None) -> None:
        """A new line of checkpoints: the next save is full and lists get fresh ids."""
        self._run_id, self.branch, self.head = run_id, branch, parent
        self._base_id = None
        self._lists = ListTracker()
        self._values.clear()
        self._touched = {}
        self._agents.reset()

    def save(self, source: str = Source.UPDATE, status: str | None = None, *, tick: TickReport | None = None) -> int:
        """Write a checkpoint of the runner as it is now (its status: the root's, or `status`);
        returns its id. A store that cannot write it raises `StoreError`: the run must stop.
        After a tick (`tick`: its report) the record also says how its telemetry was numbered."""
        record = events = None
        mark = self._mark()
        try:
            with self._storable() as taken:
                record, events = taken[:] = self._record(source, status, tick)
                checkpoint_id = self.store.save(record, events)
        except _Unstorable as exc:
            raise self._unstored(mark, events, exc) from exc
        except StoreError as exc:  # (`_record` may have failed reading the store: nothing taken yet)
            if events is not None:
                self._events[:0] = events
            raise self._unsaved(self.runner.tick_count if record is None else record.tick, exc) from exc
        self._saved(record, checkpoint_id, self._line)
        return checkpoint_id

    def _unsaved(self, tick: int, exc: StoreError) -> StoreError:
        """The deltas just taken were never stored: the next save starts afresh, full."""
        self._failures += 1
        self._start_session(self._run_id, self.branch, self.head)
        return StoreError(f"checkpoint of tick {tick} not written: {exc}")

    def _unstored(self, mark: _Baseline, events: list | None, exc: _Unstorable) -> StoreError:
        """A record `_storable` refused, never stored: its events are kept for the next save, and the writer
        goes back to `mark`, what the store holds, for the next record to be taken against (a delta of one
        never written reads back wrong: a list's chunk past a gap, the tick's statuses lost). The keys it
        took as written stay written but the refused one: the run stops and its end is recorded without
        that value (its last stored stays); a value written there later (an edit fixing it) is stored."""
        if events is not None:
            self._events[:0] = events
        (self._line, self._base_id, self._since_full, self._chain_bytes, self._values, self._lists,
         self._statuses, self._resume, self._touched, self._returns, self._packed, agents) = mark
        self._agents.back(agents)
        for sm, written in self._taken:
            sm.put_back_dirty(written - {slot for holder, slot, _ in exc.refused if holder is sm})
        self._refused |= {recorded for _, _, recorded in exc.refused}
        return StoreError(f"checkpoint of tick {self.runner.tick_count} not written: {exc}")

    @contextlib.contextmanager
    def _storable(self) -> Iterator[list[Any]]:
        """A record that cannot be encoded (a text no store can keep: a lone surrogate, from a decoded
        hostile input) is a failed save (`_Unstorable`) naming what in the record holds it, not the
        encoder's words. The caller puts the record and its events into the list it is given."""
        taken: list[Any] = []
        try:
            yield taken
        except PydanticSerializationError as exc:
            raise self._unstorable(taken[0] if taken else None) from exc

    def _unstorable(self, record: CheckpointRecord | None) -> _Unstorable:
        """What `record` carries that no store can keep (None: refused while taken, a list's items: what
        it would carry), the first named: the state keys (the host's, or an agent's in a swarm; the nodes
        that wrote the first in the tick), else a node's or an agent's resume entry. Every such key is
        refused at once, so the run's end is recorded without them."""
        holders = [(None, _own, self.runner.state_manager), *(
            (agent_id, functools.partial(recorded_namespace, agent_id), sm) for agent_id, sm in self._agents.state_managers())]
        refused, first = [], ""
        for agent_id, named, sm in holders:
            for ns in sm.namespaces():
                if record is None:
                    carried = ((key, value) for key, value in sm.stored_view(ns).items()
                               if (named(ns or GLOBAL), key) not in self._refused)
                else:  # (a list: its chunks, of the value)
                    carried = ((key, entry if entry[0] != "l" else sm.stored(key, ns or None))
                               for key, entry in record.state.get(named(ns or GLOBAL), {}).items())
                for key, value in carried:
                    if _encodes(value):
                        continue
                    refused.append((sm, (ns or GLOBAL, key), (named(ns or GLOBAL), key)))
                    if not first:
                        first = f"state key {key!r}" + (f" of namespace {ns!r}" if ns else "") + \
                            (f" of agent {agent_id!r}" if agent_id else "")
                        writers = sm.writers(key, ns)
                        if writers:
                            first += f" written by node{'s' if len(writers) > 1 else ''} " + ", ".join(map(repr, writers))
        if not first:
            path = next((path for path, entry in (record.resume if record else {}).items() if not _encodes(entry)), None)
            first = "the run's record" if path is None else \
                f"the record of {'agent ' + path[1:] if path.startswith('@') and '/' not in path else 'node ' + repr(path)}"
        more = f" (and {len(refused) - 1} more state key{'s' if len(refused) > 2 else ''})" if len(refused) > 1 else ""
        return _Unstorable(f"{first} {_REFUSED}{more}", refused)

    def _saved(self, record: CheckpointRecord, checkpoint_id: int, line: _Line) -> None:
        self._unwritten = False
        self.head = checkpoint_id
        if record.source == Source.SUSPEND:
            self._suspended_at = checkpoint_id
        if record.full:
            line.id = checkpoint_id
            if line is self._line and self._base_id == _UNWRITTEN:  # (not replaced since, nor a full one asked for)
                self._base_id, self._full_bytes = checkpoint_id, record.size
        else:
            self._chain_bytes += record.size

    def _mark(self) -> _Baseline:
        """The line the next record goes on, readied (a new run's; another tree's), and what the writer
        tracks of it now, for a record `_storable` refuses to go back to: copies of what taking a
        record changes in place, the rest as it is (taking a record replaces it)."""
        if self.runner.run_id != self._run_id:  # (what an earlier run's writes failed with is not this one's)
            self._start_session(self.runner.run_id, "main", None)
            self._failed, self._unwritten, self._refused = None, False, set()
        self._index()
        self._taken = []
        return _Baseline(self._line, self._base_id, self._since_full, self._chain_bytes, dict(self._values),
                         self._lists.copy(), dict(self._statuses), dict(self._resume), self._touched,
                         copy.copy(self._returns), copy.copy(self._packed), self._agents.mark())

    def _record(self, source: str, status: str | None,
                tick: TickReport | None) -> tuple[CheckpointRecord, list[tuple[str, RuntimeEvent]]]:
        """The record of the runner as it is now (on the line `_mark` readied), and the events it takes along."""
        runner = self.runner
        fresh = self._base_id is None  # a new line: capture the whole runner
        full = fresh or self._since_full >= self.full_every or 0 < CHAIN_SIZE * self._full_bytes <= self._chain_bytes
        changed = tick.changed if tick is not None else {}
        packing = self._packed.encode(runner.status_lists()[1], fresh, full, changed,
                                      runner.moved_between) if self._packed else None
        every = packing is not None and (packing.places is None or len(packing.places) * 4 > len(self._tree.paths))
        if every:  # a new line, or many changed: every composite's position (not each changed path's parent)
            captured = runner.capture(statuses=False)
        elif packing is not None:  # the few nodes changed since the last save, and their parents
            captured = runner.capture(places=packing.places)
        else:
            captured = runner.capture(None if fresh else self._touched)
        self._touched = {}
        host = len(captured.statuses)
        agents = self._agents.capture(captured)  # their statuses after the host's
        touched = captured.statuses.keys() | (self._composites if every else captured.touched)
        if packing is not None:
            others = dict(itertools.islice(captured.statuses.items(), host, None))
            statuses, derived = self._others_delta(others, fresh), packing.derived
        else:
            statuses, derived = self._status_delta(captured, fresh, changed)
        resume = self._resume_delta(captured, fresh, agents, touched)
        step = None
        if full and not fresh:  # bounds the chain: the picture the deltas kept, not the tree walked again
            step = Step(statuses, resume, packing and packing.step)  # (and the delta, for the row after it)
            statuses, resume, derived = self._statuses, dict(self._resume), derived and packing is not None
        record = CheckpointRecord(
            run_id=runner.run_id or "", branch=self.branch, parent_id=self.head,
            base_id=None if full else self._base_id, tick=runner.tick_count, time=time.time(),
            status=status or runner.root.status.value, source=str(source), event_position=runner.event_bus.position,
            wake=captured.wake, statuses=statuses, resume=resume,
            state={}, bindings=self._bindings, tree=self._tree,
            telemetry=telemetry_record(tick, derived=derived, before=packing and packing.before),
            returns=self._returns.encode(tick.returns if tick is not None else None, self._tree, full),
            packed=packing and packing.runs, step=step)
        record.state = self._state_delta(full, record.chunks, step)
        if full:  # a new line (its id once written: a record taken meanwhile is a delta of it)
            self._line, self._base_id, self._since_full, self._chain_bytes = _Line(), _UNWRITTEN, 0, 0
        else:
            self._since_full += 1
        events, self._events = self._events, []
        return record, events

    def _index(self) -> None:
        nodes = self.runner.nodes
        if self._indexed is nodes:
            return
        if self._indexed is not None and not self._indexed.keys() <= nodes.keys():
            self._base_id = None  # nodes vanished (a placeholder replaced by its compiled subtree): save in full
        self._indexed = nodes
        self._tree = TreePaths.of(nodes.keys(), self.runner.places) if len(nodes) >= TREE_PATHS_FROM else None
        self._packed = PackedWriter(self._tree.paths) if self._tree is not None else None
        if self._packed is not None:  # (a packing is of one tree's nodes: another tree starts a line, full)
            self._base_id = None
            self._composites = frozenset(self.runner.composites)  # (the runner's index: no isinstance a node)
        save_tree = getattr(self.store, "save_tree", None)  # (the SQL stores)
        if self._tree is not None and save_tree is not None:
            with contextlib.suppress(StoreError):  # (a store that cannot write now: the first full save tries again)
                save_tree(self._tree)  # now, not in the run's first save
        if self._base_id is not None:  # (the next save is fresh otherwise: it captures every node)
            self._touched.update(dict.fromkeys(nodes.keys() - self._statuses.keys()))  # nodes new since the last save
        injected = {node.path: node for node in self.runner.injected}  # (model clients and bindings are theirs)
        self._models = dict(resumable_models(injected))
        baseline = self._baseline  # the tree's own bindings (the properties give copies: `bind()` edits in place)
        for path, node in injected.items():
            if path not in baseline:
                baseline[path] = (node.input_bindings, node.output_bindings)

    def _status_delta(self, captured: RunnerState, full: bool,
                      changed: Mapping[str, tuple[Any, Any]]) -> tuple[dict[str, str], bool]:
        """Every status (full), or those of the touched nodes that differ from the last save;
        and whether the tick's `changed` are the delta's first entries, each changed from its
        status as saved (then its `node.status` events are rebuilt from the delta alone)."""
        if full:
            self._statuses = dict(captured.statuses)
            return captured.statuses, not changed
        saved = self._statuses
        delta = {p: s for p, s in captured.statuses.items() if saved.get(p) != s}
        derived = len(delta) >= len(changed) and all(
            p == q and s == new._value_ and saved.get(p, "INVALID") == old._value_
            for (p, s), (q, (old, new)) in zip(delta.items(), changed.items(), strict=False))
        saved.update(delta)
        return delta, derived

    def _others_delta(self, others: dict[str, str], full: bool) -> dict[str, str]:
        """The statuses of nodes outside a packed tree (a swarm agent's): all (full), or those that
        differ from the last save."""
        if full:
            self._statuses = others
            return dict(others)
        saved = self._statuses
        delta = {p: s for p, s in others.items() if saved.get(p) != s}
        saved.update(delta)
        return delta

    def _resume_delta(self, captured: RunnerState, full: bool, agents: Mapping[str, Any],
                      touched: Set[str]) -> dict[str, Any]:
        """Composite positions, resume data and model positions: all (full), or the entries that
        changed among the `touched` composites and the nodes with resume data (None: entry gone);
        the swarm's agents' entries (`agents`) likewise."""
        old = self._resume
        entries: dict[str, Any] = {}
        paths = captured.positions.keys() | captured.resume.keys() | self._models.keys()
        if not full:  # a touched composite with no current child now loses its saved position
            paths |= touched & old.keys()
        positions, resumed, models = captured.positions, captured.resume, self._models
        for path in paths:
            if not full and path not in resumed and path not in models and path in positions:
                saved = old.get(path)  # a position as saved: no entry made (a large tree's composites, each save)
                if saved is not None and len(saved) == 1 and saved.get("child") == positions[path]:
                    continue
            entry = {}
            if path in captured.positions:
                entry["child"] = captured.positions[path]
            elif path not in touched and "child" in (old.get(path) or {}):
                entry["child"] = old[path]["child"]  # not touched: its position is as saved
            if path in captured.resume:
                entry["data"] = jsonable(captured.resume[path])
            if path in self._models:
                entry["model"] = jsonable(self._models[path].dump_resume_state())
            entries[path] = entry or None
        entries.update(agents)  # (an agent's paths are among the statuses captured: its entries are its own)
        if full:
            self._resume = {p: e for p, e in entries.items() if e is not None}
            return dict(self._resume)
        delta = {p: e for p, e in entries.items() if old.get(p) != e}
        for path, entry in delta.items():
            if entry is None:
                old.pop(path, None)
            else:
                old[path] = entry
        return delta

    def _state_delta(self, full: bool, chunks: list, step: Step | None = None) -> dict[str, dict[str, list]]:
        """The keys written since the last save (every key, `full`): the host's, then its agents';
        those written since into `step.state` too (a full record's own delta)."""
        delta: dict[str, dict[str, list]] = {}
        self._put_state(self.runner.state_manager, _own, full, delta, chunks, step)
        for named, sm, whole in self._agents.states(full):
            self._put_state(sm, named, whole, delta, chunks, step)
        return delta

    def _put_state(self, sm: StateManager, named: Callable[[str], str], whole: bool,
                   delta: dict[str, dict[str, list]], chunks: list, step: Step | None = None) -> None:
        """Into `delta`, the keys of `sm` written since the last save (every key, `whole`), each
        namespace as `named` names it in the record; into `step.state`, those written since (and
        not as saved) only."""
        written = sm.take_dirty()
        self._taken.append((sm, written))  # (given back if the record is refused)
        dirty = {(ns or GLOBAL, key) for ns in sm.namespaces() for key in sm.view(ns)} if whole else written
        if whole:  # (the keys deleted since: none of every key)
            dirty |= {(ns, key) for ns, key in written if not sm.contains(key, ns or None)}
        values = self._values
        for ns, key in dirty:
            saved_ns = named(ns)
            slot = (saved_ns, key)
            if not sm.contains(key, ns or None):
                values.pop(slot, None)
                self._lists.forget(slot)
                if not whole:
                    delta.setdefault(saved_ns, {})[key] = ["d"]
                if step is not None:
                    step.state.setdefault(saved_ns, {})[key] = ["d"]
                continue
            value = sm.stored(key, ns or None)
            if slot in self._refused:  # a whole record carries its last stored value (none: not the key)
                if (ns, key) in written:  # written since (an edit fixing it): tried again
                    self._refused.discard(slot)
                elif slot not in values:
                    continue
                else:
                    value = values[slot]
            same = slot in values and values[slot] is value
            if not whole and same:
                continue
            values[slot] = value
            if isinstance(value, list) and len(value) >= LIST_MIN:
                entry = self._lists.encode(slot, value, chunks)
            else:
                self._lists.forget(slot)
                entry = ["v", jsonable(value)]
            delta.setdefault(saved_ns, {})[key] = entry
            if step is not None and not same:
                step.state.setdefault(saved_ns, {})[key] = entry

    # -- restoring -------------------------------------------------------------------
    def _load(self, checkpoint_id: int, lazy: bool = False) -> Checkpoint:
        checkpoint = self._decode_lists(self.store.get(checkpoint_id, read_lists=False), lazy)
        compiled_since = self.compile_deferred(checkpoint)
        unknown = [path for path in checkpoint.statuses if path not in self.runner.nodes
                   and not path.startswith(compiled_since) and not is_agent_path(path)]
        if unknown:
            raise CheckpointError(f"checkpoint {checkpoint_id} does not fit this tree: it has no node {unknown[0]!r}")
        return checkpoint

    def compile_deferred(self, checkpoint: Checkpoint) -> tuple[str, ...]:
        """The runner's deferred subtrees the checkpoint had compiled, compiled (`deferred.compile_deferred`)."""
        return compile_deferred(self.runner, checkpoint.id, checkpoint.resume, checkpoint.state, checkpoint.lists)

    def _decode_lists(self, cp: Checkpoint, lazy: bool) -> Checkpoint:
        """Put the checkpoint's stored lists into its state, validated: from a list decoded for an
        earlier restore when it holds them, else (`lazy`) as a `Deferred` that reads and validates
        the list when something first reads it, so a restore does not decode a long history."""
        for ns, lists in cp.lists.items():
            for key, (list_id, length) in lists.items():
                read = functools.partial(self._read_list, ns, key, list_id, length)
                decoded = self._decoded.get((ns, key, list_id))
                known = decoded is not None and len(decoded) >= length
                cp.state.setdefault(ns, {})[key] = Deferred(read) if lazy and not known else read()
        return cp

    def _read_list(self, ns: str, key: str, list_id: str, length: int) -> list:
        """A stored list's first `length` items, validated; a stored list's items never change, so
        a prefix of a list decoded before is that list at an earlier checkpoint of its line."""
        slot = (ns, key, list_id)
        decoded = self._decoded.pop(slot, None)
        if decoded is None or len(decoded) < length:
            sm, local = self._agents.state_manager(ns) or (self.runner.state_manager, ns or None)  # an agent's: its own
            decoded = sm.validate_json(key, self.store.read_list_json(list_id, length), local)
        self._decoded[slot] = decoded  # the most recently used last
        if len(self._decoded) > DECODED_LISTS:
            del self._decoded[next(iter(self._decoded))]
        return decoded[:length]

    def restore(self, checkpoint_id: int) -> None:
        """Continue the checkpoint's run and branch from that checkpoint. Its stored lists are read
        when first read (`Deferred`): a damaged history is a `StoreError` then, and a run stops on it
        at the latest when it saves its next checkpoint."""
        checkpoint = self._load(checkpoint_id, lazy=True)
        self._apply(checkpoint)
        self._bindings = checkpoint.bindings
        self._start_session(checkpoint.run_id, checkpoint.branch, checkpoint.id)

    def _apply(self, cp: Checkpoint) -> None:
        runner = self.runner
        self.flush()
        self._agents.restore(cp)  # first: nothing changes when an agent cannot be built
        state, lists = host_part(cp)
        state = self._agents.live(state, runner.state_manager)  # a saved swarm handle: the live one (its agents now)
        self._restoring = True
        try:
            runner.stop()  # cancels tasks in flight; their late writes are dropped (pitfall 6)
            runner.state_manager.restore(state, trusted=lists)
        finally:
            self._restoring = False
        self._apply_bindings(cp.bindings)
        runner.load(RunnerState(
            cp.tick, cp.run_id, cp.event_position, cp.wake, statuses=cp.statuses,
            positions={p: r["child"] for p, r in cp.resume.items() if "child" in r},
            resume={p: r["data"] for p, r in cp.resume.items() if "data" in r}))
        for path, provider in resumable_models(runner.nodes):
            position = (cp.resume.get(path) or {}).get("model")
            if position is not None:
                provider.restore_resume_state(position)

    def _apply_bindings(self, overrides: Mapping[str, Mapping[str, Mapping[str, str]]]) -> None:
        for path, (inputs, outputs) in self._baseline.items():
            node = self.runner.nodes.get(path)
            if node is not None:
                override = overrides.get(path, {})
                node._input_bindings = dict(override.get("inputs", inputs))
                node._output_bindings = dict(override.get("outputs", outputs))

    # -- forking ---------------------------------------------------------------------
    def fork(self, checkpoint_id: int, *, state_updates: Mapping[str, Any] | None = None,
             binding_changes: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None,
             prefix: str = "fork") -> str:
        """Restore a checkpoint, apply edits, and save them as the first checkpoint of a new branch
        (`fork-1`, `fork-2`, ...; a replay passes `prefix="replay"`, so it never appends to the
        branch it replays).

        `state_updates` maps qualified keys to values: `"key"` (global) or `"ns.key"` (the
        namespace `ns` of the checkpoint). `binding_changes` maps node paths to
        `{"inputs": {port: key}, "outputs": {port: key}}`. Everything is validated before
        anything changes, so a bad edit loses nothing.
        """
        checkpoint = self._load(checkpoint_id)
        updates = self._validate_updates(checkpoint, state_updates or {})
        bindings = self._validate_bindings(binding_changes or {})
        self._apply(checkpoint)
        self._bindings = dict(checkpoint.bindings)
        sm, bus = self.runner.state_manager, self.runner.event_bus
        branch = self._next_branch(checkpoint.run_id, prefix)
        self._start_session(checkpoint.run_id, branch, checkpoint.id)
        for ns, values in updates.items():
            owner, local = self._agents.state_manager(ns) or (sm, ns or None)  # an agent's: its own
            owner.load(values, local)
            bus.publish(EventType.STATE_EDITED, {"namespace": ns or None, "keys": list(values)})
        for path, change in bindings.items():
            node = self.runner.nodes[path]
            node.bind(change.get("inputs"), change.get("outputs"))
            self._bindings[path] = {"inputs": node.input_bindings, "outputs": node.output_bindings}
            bus.publish(EventType.BINDING_CHANGED, {k: dict(v) for k, v in change.items()}, node=path)
        self.save(Source.REPLAY if prefix == "replay" else Source.FORK)
        return branch

    def _next_branch(self, run_id: str, prefix: str) -> str:
        pattern = re.escape(prefix) + r"-(\d+)"
        numbers = [int(m.group(1)) for b in self.store.branches(run_id) if (m := re.fullmatch(pattern, b))]
        return f"{prefix}-{max(numbers, default=0) + 1}"

    def _validate_updates(self, cp: Checkpoint, updates: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        sm = self.runner.state_manager
        namespaces = sorted((ns for ns in cp.state if ns), key=len, reverse=True)
        out: dict[str, dict[str, Any]] = {}
        for qualified, value in updates.items():
            ns, key = GLOBAL, qualified
            if qualified not in cp.state.get(GLOBAL, {}) and not sm.has_field(qualified):
                for candidate in namespaces:
                    if qualified.startswith(candidate + "."):
                        ns, key = candidate, qualified[len(candidate) + 1:]
                        break
            owner, local = self._agents.state_manager(ns, cp) or (sm, ns or None)  # an agent's: its own schema
            out.setdefault(ns, {})[key] = owner.validate(key, value, local)  # StateValidationError
        return out

    def _validate_bindings(self, changes: Mapping[str, Any]) -> dict[str, Mapping[str, Mapping[str, str]]]:
        for path, change in changes.items():
            node = self.runner.nodes.get(path)
            if node is None:
                raise CheckpointError(f"binding change for an unknown node {path!r}")
            if not isinstance(node, JianmuNodeMixin):
                raise CheckpointError(f"node {path!r} has no ports to bind")
            if not isinstance(change, Mapping) or set(change) - {"inputs", "outputs"}:
                raise CheckpointError(f"binding change for {path!r} must be {{'inputs': {{...}}, 'outputs': {{...}}}}")
            for side, declared in (("inputs", node.input_ports), ("outputs", node.output_ports)):
                for port in change.get(side) or {}:
                    if declared and port not in declared:
                        raise CheckpointError(f"node {path!r} has no {side[:-1]} port {port!r} "
                                              f"(it has {', '.join(declared)})")
        return dict(changes)


_REFUSED = "holds a text that is not valid Unicode (a lone surrogate): a store cannot keep it"


class _Unstorable(StoreError):
    """A record holding values no store can keep (`RunnerCheckpoints._storable`): `refused`, each
    (its state manager, the runner's or an agent's; (namespace, key) in it; as the record names it)."""

    def __init__(self, message: str, refused: list[tuple[StateManager, tuple[str, str], tuple[str, str]]]):
        super().__init__(message)
        self.refused = refused


def _encodes(value: Any) -> bool:
    try:
        dumpb(value)
    except PydanticSerializationError:
        return False
    return True


class _Baseline(NamedTuple):
    """What a writer tracks of what its store holds (the line a record goes on, and what its next delta
    is taken against), as `RunnerCheckpoints._mark` found it before taking a record."""

    line: _Line
    base_id: int | None
    since_full: int
    chain_bytes: int
    values: dict[tuple[str, str], Any]
    lists: ListTracker
    statuses: dict[str, str]
    resume: dict[str, Any]
    touched: dict[str, None]
    returns: ReturnsWriter
    packed: PackedWriter | None
    agents: tuple[dict, dict]


def _touched(changed: Iterable[str]) -> dict[str, None]:
    """The nodes whose status or position may have changed: those whose status did, and their
    parents. A composite's current child follows from its children's statuses: it can move only
    when one of them changed, so a save costs what changed, not what the tick visited."""
    changed = dict.fromkeys(changed)
    return {**changed, **dict.fromkeys(path.rpartition("/")[0] for path in changed)}


def _own(namespace: str) -> str:
    """The host's namespaces keep their names in the record."""
    return namespace


class RecordsRuns:
    """For a store: `ReactiveRunner(..., checkpointer=store)` records the runner into it."""

    def attach(self, runner: ReactiveRunner) -> RunnerCheckpoints:
        return RunnerCheckpoints(runner, self)


__all__ = ["LIST_MIN", "TREE_PATHS_FROM", "RecordsRuns", "RunnerCheckpoints"]
