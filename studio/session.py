"""`DebugSession`: the UI-free controller of one debugged run.

The TUI, the headless CLI and the tests all drive this class. It owns the runner, the
event subscription and the checkpoint store, and it sees the run only through the
runtime's public seams: tick reports and hooks, the event bus, state snapshots and the
checkpoint store. Views (widgets) read from it and send it intents; it never imports
Textual.

What the views show is one `Frame` (`session.frame`): the head of the live run, or a past
checkpoint read from the store only (`studio.frames`); the past as the store holds it is
`studio.timeline`, edits are `studio.edits`, breakpoints `studio.breakpoints`.

Listeners registered with `add_listener(fn)` are called as `fn(kind, data)` with kind:
- "event": a `StampedEvent` (high rate: buffer it),
- "tick": a `TickReport` after every tick,
- "changed": anything else the views should redraw (run state, selection, edits),
- "landed": a followed recording grew (`follow()`): its events are to be read again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from py_trees.common import Status

from runtime.debug.edits import check_tool_arguments
from runtime.debug.stepped import stepped
from runtime.debug.waiting import in_flight
from runtime.engine.behaviour import JianmuNodeMixin
from runtime.engine.events import EventType, RuntimeEvent, RuntimeEventBus
from runtime.engine.runner import ReactiveRunner, TickReport
from runtime.guard.approval import ApprovalError
from runtime.memory.checkpoint import (
    CheckpointError,
    CheckpointInfo,
    CheckpointStore,
    EventsRead,
    IOReplayer,
    StoreError,
)
from runtime.memory.checkpoint import open_store as open_checkpoint_store
from runtime.memory.checkpoint.model import tick_positions
from runtime.memory.checkpoint.naming import is_postgres_url
from runtime.memory.checkpoint.waiting import resume_point, waiting_approvals
from runtime.node.composites import loop_counter
from runtime.state import InteractionKeys, StateValidationError

from .breakpoint_list import BreakpointListMixin
from .breakpoints import Breakpoint, BreakpointError
from .children import SwarmChildren, child_path, split_child_path
from .edits import EditError, EditsMixin, StagedEdits
from .failure import Failure, failure_of
from .follow import FINAL, Landed, RunFollower, ending, following
from .frames import (
    EventLog,
    Frame,
    HeadFrame,
    NodeDetail,
    NodeView,
    PastFrame,
    PortView,
    StampedEvent,
    port_views,
)
from .loader import LoadedTree, TreeLoadError, load_tree
from .model_calls import MODEL_EVENTS, ModelCall, collect, fill_from_store
from .places import default_db_path, default_store
from .timeline import Lineage, Mark, RunTimeline, Saved, StateNames, TakenStatuses

Listener = Callable[[str, Any], None]
EVENT_BUFFER = 50_000
_WATCHED = frozenset({EventType.SWARM_AGENT_SPAWNED, EventType.NODE_ERROR,  # events the session acts on itself
                      EventType.STATE_CHANGED})
RECORDING = "this is a recording: replay or fork (f) from a checkpoint to run it"


def _waited_for(request: Mapping[str, Any]) -> str:
    """One pending request as an attached studio names it: `approval of calculator at Calc/tools`."""
    tool = (request.get("payload") or {}).get("tool")
    return f"{request.get('kind')}{f' of {tool}' if tool else ''} at {request.get('node')}"


class RunState(StrEnum):
    READY = "ready"  # loaded, not ticked yet
    PAUSED = "paused"
    RUNNING = "running"
    WAITING = "waiting"  # continuing, but the tree waits for async work
    SUSPENDED = "suspended"  # waiting for an approval or other input
    FINISHED = "finished"
    RECORDED = "recorded"  # a recorded run, shown read-only until a replay or fork

    @property
    def busy(self) -> bool:
        """Continuing: ticking, or waiting for async work between ticks."""
        return self in (RunState.RUNNING, RunState.WAITING)


@dataclass(frozen=True)
class TimelineRow:
    """One checkpoint on the timeline."""

    id: int
    tick: int
    status: str
    branch: str
    parent_id: int | None
    summary: str


@dataclass
class StopReason:
    kind: str  # "breakpoint" | "paused" | "suspended" | "finished" | "divergence" | "error" | "step" | "refused"
    message: str = ""


def open_store(name: str | Path) -> CheckpointStore:
    """The store a session records into: a file (created if missing, never overwritten) or a
    PostgreSQL URL."""
    if not is_postgres_url(str(name)):
        Path(name).parent.mkdir(parents=True, exist_ok=True)
    return open_checkpoint_store(name)


class DebugSession(EditsMixin, BreakpointListMixin):
    def __init__(self, loaded: LoadedTree, *, input_data: Mapping[str, Any] | None = None,
                 store: CheckpointStore | None = None, start: bool = True):
        """`start`: begin the run now, so its input is state at tick 0 (shown, editable and
        saved before the first step, as an attached studio sees it); a recording opens unstarted."""
        self.input_data = dict(input_data if input_data is not None else loaded.input_data)
        self.store = store if store is not None else open_store(default_store())
        self.log = EventLog()
        self.events: deque[StampedEvent] = deque(maxlen=EVENT_BUFFER)
        self.viewing: TimelineRow | None = None  # a past checkpoint shown read-only
        self.staged = StagedEdits()  # made while viewing a checkpoint, applied by a fork from it
        self.recorded_run: str | None = None  # set when the session opens a recorded run
        self._recorded_waiting: list[Any] = []  # the approvals it waits for (answering one resumes it here)
        self._events_read = EventsRead()  # where reading the recorded run's events stands (`follow` goes on)
        self.breakpoints: list[Breakpoint] = []
        self.last_report: TickReport | None = None
        self.last_stop: StopReason | None = None
        self.run_state = RunState.READY
        self.message = ""  # the last thing worth telling the user (an error, a stop reason)
        self._listeners: tuple[Listener, ...] = ()
        self._pause = asyncio.Event()
        self._event_hits: list[Breakpoint] = []
        self._divergence: str | None = None
        self._frame: Frame | None = None
        self._head_lineage: Lineage | None = None
        self._rows: tuple[str | None, list[TimelineRow]] = (None, [])  # the timeline rows of one run, as listed
        self._saved_at: tuple[str, int] | None = None  # (branch, tick) of the last checkpoint saved
        self._head_before: int | None = None  # the runner's last checkpoint as a tick began
        self._child_hit: StopReason | None = None
        self._moving = False  # a step or a continue is under way: the swarm's agents run too
        self._attach(loaded)
        self.breakpoint_warnings = self._load_breakpoints()
        if start:
            self._start_run()

    def _attach(self, loaded: LoadedTree) -> None:
        """Drive the agent a tree file built: a runner of its own, on a bus of its own."""
        self.loaded = loaded
        self.agent = loaded.agent
        self.bus = RuntimeEventBus(history=0)
        self.runner: ReactiveRunner = self.agent.make_runner(event_bus=self.bus, checkpointer=self.store)
        self.runner.add_tick_hook(before=self._ticking, after=self._saved)
        self.timeline = RunTimeline(self.store, StateNames(self.runner.state_manager.schema))
        self.children = SwarmChildren(self.runner, self._on_child_tick)
        self.bus.subscribe(self._on_event)
        self._failure: tuple[tuple, Failure | None] = ((), None)  # keyed by (runner, run, tick, status)
        self._index: tuple[Mapping | None, frozenset[str]] = (None, frozenset())

    @classmethod
    def load(cls, target: str, *, input_data: Mapping[str, Any] | None = None,
             db: str | Path | None = None) -> DebugSession:
        """Open a tree file (`path.py` or `path.py:function`); raises `TreeLoadError` / `StoreError`."""
        loaded = load_tree(target)
        return cls(loaded, input_data=input_data, store=open_store(db) if db is not None else None)

    @classmethod
    def open_recorded(cls, db: str | Path, run_id: str | None = None, *, tree: str | None = None) -> DebugSession:
        """A recorded run from a store, shown at its last checkpoint, read-only until a replay or fork.

        The store remembers which tree file each run came from; that file is loaded (built,
        not run) so the tree pane has its shape, else the tree text kept with the run (a run
        file opened elsewhere); `tree` names it for a run recorded without one. Raises
        `StoreError` / `TreeLoadError`.
        """
        store = open_checkpoint_store(db, create=False)
        runs = [run.run_id for run in store.runs()]
        if not runs:
            raise StoreError(f"{store.location}: holds no runs")
        run_id = run_id or runs[-1]
        if run_id not in runs:
            raise StoreError(f"{store.location}: no run {run_id!r} (runs: {', '.join(runs[-5:])})")
        from runtime.check.recording import tree_for_run  # the file, else the text kept with the run

        session = cls(tree_for_run(store, run_id, tree).load(), store=store, start=False)
        session.recorded_run, session.run_state = run_id, RunState.RECORDED
        session._recorded_waiting = waiting_approvals(store, run_id)
        infos = store.list(run_id)
        session.log.load(run_id, store.events(run_id, session._events_read), tick_positions(infos))
        session.select_checkpoint(infos[-1].id)
        return session

    # -- listeners -----------------------------------------------------------------
    def add_listener(self, listener: Listener) -> Callable[[], None]:
        self._listeners = (*self._listeners, listener)
        return lambda: self._remove_listener(listener)

    def _remove_listener(self, listener: Listener) -> None:
        listeners = list(self._listeners)
        if listener in listeners:
            listeners.remove(listener)
            self._listeners = tuple(listeners)

    def _notify(self, kind: str, data: Any = None) -> None:
        if kind != "event" or self.viewing is None:
            self._frame = None  # the head moved (a past frame does not)
        for listener in self._listeners:  # a tuple, replaced when one comes or goes: no copy per event
            listener(kind, data)

    def _on_event(self, event: RuntimeEvent) -> None:
        """Log, stamp and pass on one event (~1,000 a tick at 10,000 nodes): the few the session acts
        on itself (a swarm agent, a divergence) are found by one set lookup."""
        branch = self.runner.checkpoints.branch
        stamped = StampedEvent(branch, event, self._saved_at == (branch, event.tick))
        self.log.add(stamped)
        self.events.append(stamped)
        if event.type in _WATCHED:
            self._watch(event)
        for bp in self.breakpoints:
            if bp.enabled and bp.hit_by_event(event):
                self._event_hits.append(bp)
        self._notify("event", stamped)

    def _watch(self, event: RuntimeEvent) -> None:
        if event.type == EventType.STATE_CHANGED:
            if InteractionKeys.PENDING in event.payload.get("keys", ()):  # asked between two steps, say so then
                with contextlib.suppress(RuntimeError):  # (no loop runs: nothing is asked between steps)
                    asyncio.get_running_loop().call_soon(self._noticed_interaction)
        elif event.type == EventType.SWARM_AGENT_SPAWNED:
            self.children.on_event(event)
        elif event.payload.get("error", "").startswith("ReplayDivergence"):  # a node.error
            self._divergence = event.payload["error"]

    def _ticking(self, runner: ReactiveRunner, tick: int) -> None:
        self._head_before = runner.checkpoints.head

    def _saved(self, runner: ReactiveRunner, report: TickReport) -> None:
        """After a tick's checkpoint: what is published from now on happens between ticks. What it
        saved is remembered as the runner holds it, so the head's marks read nothing back."""
        checkpoints = runner.checkpoints
        self._saved_at = (checkpoints.branch, report.tick)
        if checkpoints.head != self._head_before:
            self._remember_head(report.transient)

    def _remember_head(self, transient: Iterable[str] = ()) -> None:
        """The checkpoint the runner has just saved (a tick's, a run's input, a fork's first), as the
        runner holds it: the next tick's marks and timeline row then decode nothing from the store
        (its parent's 100,000 statuses: ~60 ms, named path by path ~50 ms more). Call only right
        after that save, before anything moves the nodes or the state (after a tick, its statuses
        are the runner's reported lists: no pass over the nodes)."""
        runner = self.runner
        head, sm = runner.checkpoints.head, runner.state_manager
        if head is not None:
            self.timeline.remember(head, Saved(
                runner.tick_count, {ns or "": sm.stored_view(ns) for ns in sm.namespaces()},
                TakenStatuses(*runner.status_lists()), frozenset(transient)))

    def _set_state(self, state: RunState, message: str | None = None) -> None:
        if state == RunState.SUSPENDED and self.run_state != RunState.SUSPENDED:  # as `runner.run()` says it: the
            self.bus.publish(EventType.RUN_SUSPENDED, {"pending": self.runner.interaction.pending()})  # store keeps it
        self.run_state = state
        if message is not None:
            self.message = message
        self._notify("changed")

    # -- what the views read: one frame ---------------------------------------------
    @property
    def frame(self) -> Frame:
        """What every pane shows: the viewed checkpoint, or the head of the live run."""
        if self._frame is None:
            if self.viewing is not None:
                checkpoint, _ = self.timeline.get(self.viewing.id)
                self._frame = PastFrame(self.runner, self.timeline, self.log, checkpoint, self.staged)
            else:
                self._frame = HeadFrame(self.runner, self.timeline, self.log, self._lineage_of_head())
        return self._frame

    def _lineage_of_head(self) -> Lineage:
        run_id, branch = self.runner.run_id, self.branch
        cached = self._head_lineage
        if cached is None or (cached.run_id, cached.branch) != (run_id, branch):
            cached = self._head_lineage = self.timeline.lineage(None, run_id, branch)
        return cached

    def _breakpoint_paths(self) -> set[str]:
        return {bp.node for bp in self.breakpoints if bp.kind == "node" and bp.node}

    def node_views(self) -> list[NodeView]:
        """The frame's tree; live, each swarm agent's tree too (under the node that spawned it)."""
        views = self.frame.node_views(self._breakpoint_paths())
        if self.viewing is None:
            views += [self._child_view(child_path(agent_id, path))
                      for agent_id, runner in self.children.runners().items() for path in runner.nodes]
        return views

    @property
    def tree_shape(self) -> tuple:
        """Changes when the tree pane must be rebuilt: the frame's nodes, the swarm agents and their
        trees. Another frame of the same nodes (a past checkpoint) only restates their lines."""
        if self.viewing is not None:
            return self.frame.shape, ()
        return self._tree_paths(), self.children.shape

    def _tree_paths(self) -> frozenset[str]:
        """The host tree's paths, worked out once per tree rather than at every redraw (a step at
        100,000 nodes walked them all twice): the runner indexes a tree that changed shape into a
        new `nodes` mapping (`refresh_tree`), so the mapping is the key."""
        nodes = self.runner.nodes
        if self._index[0] is not nodes:
            self._index = (nodes, frozenset(nodes))
        return self._index[1]

    def node_status(self, path: str) -> Status:
        """A node's status in the frame shown (a swarm agent's: live)."""
        return self._child_view(path).status if split_child_path(path) is not None else self.frame.status(path)

    def node_statuses(self) -> dict[str, Status]:
        """Every node's status in the frame shown, at once: restating 10,000 tree lines a
        `node_status()` call each cost ~20 ms of esc."""
        statuses = self.frame.statuses()
        if self.viewing is None:
            statuses.update((child_path(agent_id, path), node.status)
                            for agent_id, runner in self.children.runners().items() for path, node in runner.nodes.items())
        return statuses

    def node_view(self, path: str) -> NodeView:
        self._node(path)
        if split_child_path(path) is not None:
            return self._child_view(path)
        view = self.frame.node_view(path, self._breakpoint_paths())
        if self.viewing is None:  # the agents this node spawned hang under it
            view.children += [child_path(a, next(iter(r.nodes))) for a, r in self.children.runners().items()
                              if self.children.parent_of(a) == path and r.nodes]
        return view

    def _child_view(self, path: str) -> NodeView:
        """A swarm agent's node: always live (agents' runners keep no checkpoints)."""
        runner, inner = self._locate(path)
        node = runner.nodes[inner]
        agent_id = split_child_path(path)[0]
        parent = (child_path(agent_id, inner.rpartition("/")[0]) if "/" in inner
                  else self.children.parent_of(agent_id))
        return NodeView(
            path=path, name=node.name, class_name=type(node).__name__, depth=path.count("/"), parent=parent,
            children=[child_path(agent_id, runner.path_of(child)) for child in node.children],
            status=node.status, namespace=getattr(node, "namespace", None),
            counter=loop_counter(node, node.status), breakpoint=path in self._breakpoint_paths())

    def _locate(self, path: str) -> tuple[ReactiveRunner, str]:
        """The runner a node path belongs to (the host's, or a swarm agent's) and its path there."""
        if split_child_path(path) is None:
            return self.runner, path
        found = self.children.resolve(path)
        if found is None:
            raise EditError(f"no node at path {path!r}")
        return found

    def node_detail(self, path: str) -> NodeDetail:
        node = self._node(path)
        if split_child_path(path) is not None:
            return self._child_detail(path, node)
        detail = self.frame.node_detail(path, self._breakpoint_paths())
        failure = self.failure
        if detail.error is None and failure is not None and failure.node == path:
            detail.error = failure.headline
        return detail

    def _child_detail(self, path: str, node) -> NodeDetail:
        ports = (port_views(node, (node.input_bindings, node.output_bindings), self._locate(path)[0].state_manager.get)
                 if isinstance(node, JianmuNodeMixin) else [])
        error = getattr(node, "last_error", None)
        view = self._child_view(path)
        agent = f"@{split_child_path(path)[0]}"  # its namespace as the state pane names it, not "(global)"
        view = replace(view, namespace=f"{agent}.{view.namespace}" if view.namespace else agent)
        return NodeDetail(view, ports, [], error.error if error else None, error.traceback if error else None)

    def state_snapshot(self) -> dict[str, dict[str, Any]]:
        """Every namespace as JSON-able data, one name per value, as of the frame (staged edits in);
        live, each swarm agent's namespaces too."""
        state = self.frame.state()
        return {**state, **self.children.snapshot()} if self.viewing is None else state

    def marks(self) -> dict[str, Mark]:
        """Keys whose value differs from the previous checkpoint of the frame's branch."""
        return self.frame.marks()

    def frame_events(self) -> list[StampedEvent]:
        """The events of the frame's lineage: its branch (and the ones it forked from) up to its tick."""
        return self.frame.events()

    def branches(self) -> list[str]:
        """The run's branches, oldest first, from the timeline's headers (read anyway, newest only):
        not a query of the store at every frame."""
        run_id = self.recorded_run or self.run_id
        return list(dict.fromkeys(info.branch for info in self.timeline.infos(run_id))) if run_id else []

    # -- the live run ----------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self.run_state.busy

    @property
    def tick(self) -> int:
        return self.runner.tick_count

    @property
    def root_status(self) -> Status:
        return self.runner.root.status

    @property
    def run_id(self) -> str | None:
        return self.runner.run_id

    @property
    def tokens(self) -> int:
        """Tokens used as of the frame shown: its lineage's model calls (the host's, its skills'
        and its swarm agents'; a skill namespace cleared when it ends keeps its share)."""
        return self.frame.tokens

    @property
    def failure(self) -> Failure | None:
        """Why the run failed (node, first error line, termination reason); None unless it did."""
        if self.viewing is not None:
            return None
        key = (id(self.runner), self.run_id, self.tick, self.root_status)
        if self._failure[0] != key:
            self._failure = (key, failure_of(self.agent, self.runner))
        return self._failure[1]

    def model_calls(self, node: str | None = None) -> list[ModelCall]:
        """The frame's model calls (of one node, or all): its branch's and those it forked from,
        up to the frame's tick; from the events, `model_call()` adds the I/O."""
        calls = collect([e for e in self.frame_events() if e.type in MODEL_EVENTS])
        return [call for call in calls if node is None or call.node == node]

    def model_call(self, call: ModelCall) -> ModelCall:
        """The call with its recorded request (messages, tools, config) and response from the store,
        looked up along the frame's lineage."""
        return fill_from_store(call, self.store, self._io_branches(call))

    def _io_branches(self, call: ModelCall) -> list[str]:
        """Where a call's I/O may be recorded: its branch, then the branches it forked from (a fork
        served a recorded answer from there without recording it again)."""
        lineage = list(self.frame.lineage.limits)
        return lineage[lineage.index(call.branch):] if call.branch in lineage else lineage

    def waiting_on(self) -> list[str]:
        """Async nodes whose work is in flight (what the tree waits for)."""
        return in_flight(self.runner.nodes)

    def running_nodes(self) -> list[str]:
        """The leaves running in the frame shown (a past one's from its checkpoint), in tree order."""
        return self.frame.running()

    def _node(self, path: str):
        runner, inner = self._locate(path)
        try:
            return runner.nodes[inner]
        except KeyError:
            raise EditError(f"no node at path {path!r}") from None

    def _on_child_tick(self, agent_id: str, report: TickReport) -> bool:
        """A swarm agent ticked: redraw its nodes. True holds the agent until the host moves again:
        while the host is held (paused, between steps) so are its agents, as a debugger stops every
        thread; while it moves (a step, a continue) they run with it, and a continuing host stops
        for a breakpoint of their nodes."""
        self._notify("subtick", report)
        if not self._moving:
            return True
        if not self.busy:  # a step: a breakpoint waits for c
            return False
        hits = [bp for bp in self.breakpoints if bp.enabled and bp.kind == "node" and bp.node in report.changed]
        if not hits:
            return False
        self._child_hit = self._hit(hits[0])
        self._pause.set()
        return True

    # -- running -------------------------------------------------------------------
    @contextlib.contextmanager
    def _host_moving(self) -> Iterator[None]:
        """While the host runs (a step, a continue) its agents run, the held ones released; they are
        held again at the end of their next tick once it stops (`_on_child_tick`)."""
        self._moving = True
        self.children.release()
        try:
            yield
        finally:
            self._moving = False

    def _ensure_started(self) -> None:
        """Before the run moves: a fresh run if none yet, stops matching the enabled breakpoints."""
        if self.runner.run_id is None:
            self._start_run()
        self._sync_stops()

    def _start_run(self) -> None:
        """A fresh run, remembered in the store with its tree file so it can be reopened; its
        `run.started` saves the tick-0 checkpoint (the input), which can be viewed and forked."""
        self.runner.start_fresh(self.input_data)
        self.recorded_run = None
        self.loaded.remember_run(self.store, self.runner.run_id)
        self._saved_at = None
        self.bus.publish(EventType.RUN_STARTED, {"fresh": True, "tick": 0})
        self._remember_head()
        self._saved_at = ("main", 0)

    def refusal(self) -> str | None:
        """Why the run cannot tick now (a recording, the past shown, the end), or None."""
        if self.recorded_run is not None:
            return RECORDING
        if self.viewing is not None:
            return "viewing the past: back to live (esc), or replay/fork (f)"
        return None

    async def step(self) -> TickReport | None:
        """One tick (waiting for async work first if nothing can run). None if it cannot step."""
        if self.busy:
            return None
        refusal = self.refusal()
        if refusal is not None:
            self._set_state(self.run_state, refusal)
            return None
        if self.runner.finished:
            self._set_state(RunState.FINISHED, "the run has finished: restart (r) to run it again")
            return None
        if self.runner.suspended:
            self._set_state(RunState.SUSPENDED, self._suspension_message())
            return None
        self._ensure_started()
        self._pause.clear()
        with self._host_moving():
            if not await self._wait_until_ready():
                self._set_state(RunState.PAUSED, "paused")
                return None
            report = await self.runner.step()
        self._settle(self._after_tick(report) or StopReason("step", stepped(report)))
        return report

    async def step_into(self) -> TickReport | None:
        """To the next node boundary inside the tick (before that node runs), or to the tick's end."""
        if self.busy or self.viewing is not None \
                or self.runner.finished or self.runner.suspended:
            return await self.step()  # says why it cannot step
        self._ensure_started()
        self._pause.clear()
        with self._host_moving():
            if not await self._wait_until_ready():
                self._set_state(RunState.PAUSED, "paused")
                return None
            report = await self.runner.step_into()
        hit = self._after_tick(report)
        where = report.paused_at
        self._settle(hit or StopReason("step", f"before {where.path} (tick {where.tick}, not run yet)" if where
                                       else stepped(report)))
        return report

    @property
    def paused_at(self):
        """The runner's `NodeBoundary` when a tick is held before a node, else None."""
        return self.runner.paused_at

    async def continue_(self, max_ticks: int | None = None) -> StopReason:
        """Tick until a breakpoint, a suspension, the end, `max_ticks` ticks, or `pause()`."""
        if self.busy:
            return StopReason("error", "already running")
        refusal = self.refusal()
        if refusal is not None:
            self._set_state(self.run_state, refusal)
            return StopReason("refused", refusal)
        self._ensure_started()
        self._pause.clear()
        self._set_state(RunState.RUNNING, "running")
        reason = StopReason("paused", "paused")
        ticks = 0
        try:
            with self._host_moving():
                while True:
                    if max_ticks is not None and ticks >= max_ticks:
                        reason = StopReason("paused", f"stopped after --max-ticks {max_ticks}")
                        break
                    if self.runner.finished:
                        reason = StopReason("finished", f"finished: {self.root_status.value}")
                        break
                    if self.runner.suspended:
                        reason = StopReason("suspended", self._suspension_message())
                        break
                    if not await self._wait_until_ready():
                        break
                    hit = self._hit_between_ticks()
                    if hit is not None:  # work that finished after the last tick caused it: stop there
                        reason = hit
                        break
                    report = await self.runner.step()
                    ticks += 1
                    hit = self._after_tick(report)
                    if hit is not None:
                        reason = hit
                        break
                    await asyncio.sleep(0)  # let the views draw between ticks
        except Exception as exc:
            reason = StopReason("error", f"{type(exc).__name__}: {exc}")
        if self._child_hit is not None:  # a swarm agent is held at a breakpoint
            reason, self._child_hit = self._child_hit, None
        self._settle(reason)
        return reason

    async def _wait_until_ready(self) -> bool:
        """Wait for the runner's wake, unless paused first. False when paused."""
        if self.runner.can_tick_now:
            return not self._pause.is_set()
        if self.run_state == RunState.RUNNING:
            self._set_state(RunState.WAITING, f"waiting for {', '.join(self.waiting_on()) or 'a wake'}")
        woken = asyncio.ensure_future(self.runner.wait_until_ready())
        paused = asyncio.ensure_future(self._pause.wait())
        try:
            await asyncio.wait((woken, paused), return_when=asyncio.FIRST_COMPLETED)
        finally:
            woken.cancel()
            paused.cancel()
        if self.run_state == RunState.WAITING:
            self._set_state(RunState.RUNNING)
        return not self._pause.is_set()

    def pause(self) -> None:
        self._pause.set()

    def _after_tick(self, report: TickReport) -> StopReason | None:
        self.children.runners()  # agents spawned by this tick are watched from now on
        if not report.completed:  # held before a node: its changes come when the tick ends
            self._notify("changed")
            hits = [bp for bp in self.breakpoints if bp.stops_before(report.paused_at.path)]
            return self._hit(hits[0]) if hits else None
        self.last_report = report
        self._notify("tick", report)
        if self._divergence is not None:
            message, self._divergence = self._divergence, None
            self._event_hits.clear()
            return StopReason("divergence", message)
        hit = self._event_hit()
        if hit is not None:
            return hit
        for bp in self.breakpoints:
            if bp.enabled and bp.hit_by_tick(report):
                return self._hit(bp)
        return self._condition_hit()

    def _hit_between_ticks(self) -> StopReason | None:
        """An event or condition breakpoint whose cause happened after the last tick's end (async work
        finishing while the tree waited): the run stops before ticking again, at the tick it belongs to."""
        return self._event_hit() or self._condition_hit()

    def _event_hit(self) -> StopReason | None:
        if not self._event_hits:
            return None
        bp = self._event_hits[0]
        self._event_hits.clear()
        return self._hit(bp)

    def _condition_hit(self) -> StopReason | None:
        conditions = [bp for bp in self.breakpoints if bp.enabled and bp.kind == "condition"]
        if conditions:
            snapshot = {ns or "": self.runner.state_manager.view(ns) for ns in self.runner.state_manager.namespaces()}
            for bp in conditions:
                try:
                    if bp.hit_by_state(snapshot):
                        return self._hit(bp)
                except BreakpointError as exc:
                    bp.enabled = False
                    return StopReason("error", f"{exc} (breakpoint disabled)")
        return None

    def _hit(self, bp: Breakpoint) -> StopReason:
        bp.hits += 1
        return StopReason("breakpoint", f"breakpoint: {bp.label}")

    def _settle(self, reason: StopReason) -> None:
        self.last_stop = reason
        if self.runner.finished:
            state = RunState.FINISHED
        elif self.runner.suspended:
            state = RunState.SUSPENDED
        else:
            state = RunState.PAUSED
        self._set_state(state, reason.message)

    def _noticed_interaction(self) -> None:
        """A request made after the step that led to it (a tool's approval, asked while its node runs
        on): paused, the run is now suspended, which the status line and the approval dialog show at
        once, not at the next key. Continuing, the loop stops on it itself."""
        if self.run_state == RunState.PAUSED and self.viewing is None and self.runner.suspended:
            self._set_state(RunState.SUSPENDED, self._suspension_message())

    def _suspension_message(self) -> str:
        kinds = ", ".join(map(_waited_for, self.runner.interaction.pending().values()))
        return f"suspended: waiting for {kinds or 'input'}"

    async def restart(self) -> None:
        """A fresh run: the tree file built again (a scripted model starts from its first answer),
        the input applied to a fresh state, a new run id; breakpoints and edited bindings are kept."""
        if self.recorded_run is not None:
            raise EditError(RECORDING)
        if self.busy:
            self.pause()
        bindings = self.bindings()
        await self.agent.close()
        self.runner.stop()
        if self.run_id is not None:
            self.store.release(self.run_id)  # left unfinished: abandoned, not "running" while this studio lives
        try:
            loaded = load_tree(self.loaded.target)
        except TreeLoadError as exc:
            raise EditError(f"restart: {exc}") from None
        self._attach(loaded)
        for path, ports in bindings.items():
            node = self.runner.nodes.get(path)
            if isinstance(node, JianmuNodeMixin):
                node.bind(ports["inputs"], ports["outputs"])
        self._start_run()
        self.log.keep_only(self.runner.run_id)
        self.viewing, self.staged = None, StagedEdits()
        self.last_report = None
        self._set_state(RunState.READY, f"restarted: run {self.runner.run_id}")

    # -- timeline: checkpoints, the past, replay and fork -------------------------------
    @property
    def branch(self) -> str:
        return self.runner.checkpoints.branch

    def checkpoints(self) -> list[TimelineRow]:
        """Every checkpoint of the current run, all branches, oldest first."""
        run_id = self.recorded_run or self.run_id
        if run_id is None:
            return []
        cached_run, rows = self._rows
        rows = rows if cached_run == run_id else []
        infos = self.timeline.infos(run_id)
        if len(infos) > len(rows):
            rows = rows + [self._row(info) for info in infos[len(rows):]]
        self._rows = (run_id, rows)
        return rows

    def _row(self, info: CheckpointInfo) -> TimelineRow:
        return TimelineRow(info.id, info.tick, info.status, info.branch, info.parent_id, self.timeline.summary(info))

    def select_checkpoint(self, checkpoint_id: int) -> None:
        """Show the tree and state as they were at a checkpoint (read-only)."""
        if self.busy:
            raise EditError("pause the run before looking at the past")
        try:
            checkpoint, _ = self.timeline.get(int(checkpoint_id))
            if any(path not in self.runner.nodes for path in checkpoint.statuses):
                self.runner.checkpoints.compile_deferred(checkpoint)  # a recorded run's subtrees, to draw them
        except (CheckpointError, StoreError, ValueError) as exc:
            raise EditError(str(exc)) from None
        self.viewing = self._row(checkpoint.info)
        self.staged = StagedEdits()
        self._show(f"viewing checkpoint {checkpoint.id} (tick {checkpoint.tick}, {checkpoint.branch})"
                   + (f" · {RECORDING}" if self.recorded_run is not None else ""))

    def _show(self, message: str) -> None:
        self._frame = None
        self._set_state(self.run_state, message)

    def select_live(self) -> None:
        if self.recorded_run is not None:
            self._set_state(self.run_state, RECORDING)
            return
        self.viewing, self.staged = None, StagedEdits()
        self._set_state(self.run_state, "live")

    async def replay_from(self, checkpoint_id: int) -> str:
        """Re-run from a checkpoint on a new branch (`replay-1`, ...) serving the recorded model and
        tool answers (deterministic, offline); the branch replayed is never appended to. Edits
        staged there are not applied (a fork applies them)."""
        source = self._checkpoint_info(checkpoint_id)
        replayer = IOReplayer(self.store, source.run_id, strict=True, source_branch=source.branch)
        self._restore(source, lambda: self.runner.checkpoints.fork(source.id, prefix="replay"), replayer)
        self._set_state(RunState.PAUSED, f"replaying checkpoint {source.id} on {self.branch}: recorded I/O, strict")
        return self.branch

    async def fork_from(self, checkpoint_id: int) -> str:
        """A new branch from a checkpoint, with the state and binding edits staged while viewing it."""
        source = self._checkpoint_info(checkpoint_id)
        staged = self.staged if self.viewing is not None and self.viewing.id == source.id else StagedEdits()
        count = len(staged)
        self._restore(source, lambda: self.runner.fork(source.id, state_updates=staged.updates(),
                                                       binding_changes=staged.binding_changes()),
                      IOReplayer(self.store, source.run_id, strict=False, source_branch=source.branch))
        self._set_state(RunState.PAUSED, f"forked {self.branch} from checkpoint {source.id}"
                        + (f" with {count} edit{'s' if count > 1 else ''}" if count else ""))
        return self.branch

    def _checkpoint_info(self, checkpoint_id: int) -> CheckpointInfo:
        try:
            return self.timeline.get(int(checkpoint_id))[0].info
        except (CheckpointError, StoreError, ValueError) as exc:
            raise EditError(str(exc)) from None

    def _restore(self, source: CheckpointInfo, action: Callable[[], Any], replayer: IOReplayer | None) -> None:
        """`action` restores `source` live; with a `replayer` the run is served the recorded I/O."""
        if self.busy:
            raise EditError("pause the run before replaying or forking")
        try:
            action()
        except (CheckpointError, StoreError, StateValidationError, ValueError) as exc:
            raise EditError(str(exc)) from None
        self._remember_head()  # the new branch's first checkpoint, saved by `action`
        if replayer is not None:
            replayer.attach(self.runner.checkpoints)
            self.runner.context.io_recorder = replayer
        self.recorded_run = None  # the restored run is live now
        self._saved_at = (self.branch, source.tick)
        self.viewing, self.staged = None, StagedEdits()
        self.last_report = None

    # -- following a recording its writer is still adding to (studio.follow) ----------
    def follow(self) -> Callable[[], None]:
        """Follow the recorded run while another process still writes it: its checkpoints and
        events show as they land, and the view moves on with them while it shows the newest.
        Call on the running loop, after `open_recorded`; returns the stop (call it before the
        store closes). Nothing to follow (not a recording, or one that has ended): a no-op."""
        run_id = self.recorded_run
        if run_id is None or self.viewing is None or ending(self.store, run_id) in FINAL:
            return lambda: None
        seen = [info for info in self.store.list(run_id) if info.id <= self.viewing.id]
        follower = RunFollower(self.store, run_id, seen, self._events_read, self._landed)
        follower.start(asyncio.get_running_loop())
        self._set_state(self.run_state, following(follower.liveness))  # short: the status line's end
        return follower.stop

    def _landed(self, landed: Landed) -> bool:
        """What the followed run's writer added; False (stop following) once this session no
        longer shows that recording (a replay or fork runs here now) or following failed."""
        run_id = landed.run_id
        if self.recorded_run != run_id:
            return False
        if landed.error is not None:
            self._set_state(self.run_state, f"stopped following: {landed.error}")
            return False
        if not landed.grew:  # only its writer's liveness changed (it died, say)
            self._set_state(self.run_state, following(landed.liveness))
            return True
        self.log.extend(landed.events, landed.saved)
        newest = landed.checkpoints[-1] if landed.checkpoints else self.store.latest(run_id)
        if landed.checkpoints and self.viewing is not None and self.viewing.id == landed.before \
                and not self.staged:  # it showed the newest (and nothing was edited there): it still does
            self.select_checkpoint(newest.id)
        self._notify("landed")
        self._set_state(self.run_state, following(landed.liveness, newest.tick))
        return landed.ended not in FINAL

    # -- approvals -----------------------------------------------------------------
    @property
    def approvals(self):
        return self.runner.context.approval_manager

    def pending_approvals(self) -> list[Any]:
        if self.recorded_run is not None:
            return list(self._recorded_waiting)
        return list(self.approvals.pending()) if self.approvals is not None else []

    def approve(self, approval_id: str, arguments: dict[str, Any] | None = None) -> None:
        """Approve a pending call; with `arguments` (checked against the tool's schema) it runs with those."""
        approvals = self._require_approvals()
        try:
            if arguments is not None:
                self.check_arguments(approvals.get(approval_id), arguments)
            approvals.approve(approval_id, arguments=arguments)
        except ApprovalError as exc:
            raise EditError(str(exc)) from None
        self._after_approval()

    def check_arguments(self, request: Any, arguments: Any) -> None:
        """`EditError` naming the argument when `arguments` do not fit the waiting tool's schema."""
        check_tool_arguments(self.runner, request, arguments)

    def deny(self, approval_id: str, reason: str) -> None:
        try:
            self._require_approvals().deny(approval_id, reason or "denied in the studio")
        except ApprovalError as exc:
            raise EditError(str(exc)) from None
        self._after_approval()

    def _require_approvals(self):
        if self.recorded_run is not None and self._recorded_waiting:
            self._resume_recorded()
        elif self.run_id is not None and self.store.written_elsewhere(self.run_id):  # answered twice, run twice
            raise EditError(f"run {self.run_id} was resumed by another process meanwhile: see it with replay")
        if self.approvals is None:
            raise EditError("this tree has no approval manager")
        return self.approvals

    def _resume_recorded(self) -> None:
        """A recorded run that waits for an approval is answered live: it goes on here from its last
        checkpoint, recording into its store (`Agent.resume` does the same in code)."""
        try:
            point = resume_point(self.store, self.recorded_run)
        except (CheckpointError, StoreError) as exc:
            raise EditError(str(exc)) from None
        self._restore(point.checkpoint, lambda: (self.runner.restore(point.checkpoint.id), point.take(self.store)), None)
        self._recorded_waiting = []

    def _after_approval(self) -> None:
        if not self.runner.suspended:
            self._set_state(RunState.PAUSED, "approval resolved: continue (c) or step (n)")
        else:
            self._notify("changed")


__all__ = ["RECORDING", "DebugSession", "EditError", "NodeDetail", "NodeView", "PortView", "RunState",
           "StampedEvent", "StopReason", "TimelineRow", "default_db_path", "open_store"]
