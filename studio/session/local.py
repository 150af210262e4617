"""`DebugSession`: a local studio session, the debugger (`runtime.debug.Debugger`) in this process.

The TUI, the headless CLI and the tests drive it through the session interface
(`studio.session.api.SessionAPI`), as they drive an attached one. Stepping, breakpoints,
edits, approvals, replay and fork are the debugger's, written once in the runtime for
every front end; what is the studio's stays here: the tree file and the store it opens,
the event log, the frames the panes show (the live head or a past checkpoint read from the
store only: `studio.frames`, `studio.timeline`), edits staged in the past for a fork,
breakpoints and bindings kept beside the store, and following a recording.

Listeners registered with `add_listener(fn)` are called as `fn(kind, data)` with kind:
- "event": a `StampedEvent`, or a tick's telemetry as one block (`TickEvents`, a sequence of them
  ending in its `tick.completed`; high rate: buffer it),
- "tick": a `TickReport` after every tick,
- "subtick": a swarm agent's `TickReport`,
- "changed": anything else the views should redraw (run state, selection, edits),
- "landed": a followed recording grew (`follow()`): its events are to be read again.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable, KeysView, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from py_trees.common import Status

from runtime import signals
from runtime.debug.breakpoints import Breakpoint, BreakpointError, marked_nodes
from runtime.debug.children import SwarmChildren, agents_state, child_path, split_child_path
from runtime.debug.debugger import MAX_BREAKPOINTS, Debugger
from runtime.debug.stops import RunState, Stop
from runtime.debug.whatif_notes import marked
from runtime.engine.behaviour import JianmuNodeMixin
from runtime.engine.events import RuntimeEvent, RuntimeEventBus
from runtime.engine.runner import ReactiveRunner, TickReport
from runtime.memory.checkpoint import (
    CheckpointError,
    CheckpointInfo,
    CheckpointStore,
    EventsRead,
    StoreError,
)
from runtime.memory.checkpoint import open_store as open_checkpoint_store
from runtime.memory.checkpoint.model import tick_positions
from runtime.memory.checkpoint.naming import is_postgres_url
from runtime.memory.checkpoint.waiting import resume_point, waiting_approvals
from runtime.memory.checkpoint.whatif_marks import CallRef, marks
from runtime.memory.checkpoint.whatif_marks import Mark as WhatIfMark
from runtime.node.composites import loop_counter

from ..edits import EditError, StagedEdits
from ..event_log import TICK_BLOCK, EventLog, Events, StampedEvent, TickEvents
from ..failure import Failure
from ..follow import FINAL, Landed, RunFollower, ending, following
from ..frames import Frame, HeadFrame, NodeDetail, NodeView, PastFrame, port_views
from ..loader import LoadedTree, TreeLoadError, load_tree
from ..model_calls import MODEL_EVENTS, ModelCall, collect, fill_from_store
from ..node_views import NodeColumns
from ..places import default_db_path, default_store
from ..timeline import Lineage, Mark, RunTimeline, Saved, StateNames, TakenStatuses
from ..whatifs import ToolCall, call_branches, tool_call
from .api import EVENT_BUFFER, TimelineRow
from .persist import read_json, tree_file, write_json
from .rows import CheckpointRows

if TYPE_CHECKING:  # runtime.debug.compare (and runtime.check under it) is imported by `compare`: no launch needs it
    from runtime.debug.compare import Comparison, Target

Listener = Callable[[str, Any], None]
RECORDING = "this is a recording: replay or fork (f) from a checkpoint to run it"
StopReason = Stop  # why a step or a continue ended (the debugger's `Stop`)


def open_store(name: str | Path) -> CheckpointStore:
    """The store a session records into: a file (created if missing, never overwritten) or a
    PostgreSQL URL."""
    if not is_postgres_url(str(name)):
        Path(name).parent.mkdir(parents=True, exist_ok=True)
    return open_checkpoint_store(name)



def restart_kept(breakpoints: int, rebound: list[str]) -> str:
    """What a restart keeps of the last run, in the words the status line says it."""
    kept = [f"{breakpoints} breakpoint{'s' * (breakpoints != 1)}"] if breakpoints else []
    if rebound:
        kept.append(f"rebound ports of {', '.join(rebound)}")
    return (f"kept {' and '.join(kept)}" if kept else "nothing edited to keep") + "; state edits are not kept"

class DebugSession:
    def __init__(self, loaded: LoadedTree, *, input_data: Mapping[str, Any] | None = None,
                 store: CheckpointStore | None = None, start: bool = True):
        """`start`: begin the run now, so its input is state at tick 0 (shown, editable and
        saved before the first step, as an attached studio sees it); a recording opens unstarted."""
        self.input_data = dict(input_data if input_data is not None else loaded.input_data)
        self.store = store if store is not None else open_store(default_store())
        self.log = EventLog()
        self._recent: deque[StampedEvent | TickEvents] = deque(maxlen=EVENT_BUFFER)  # a tick's telemetry counted once
        self.viewing: TimelineRow | None = None  # a past checkpoint shown read-only
        self.staged = StagedEdits()  # made while viewing a checkpoint, applied by a fork from it
        self.recorded_run: str | None = None  # set when the session opens a recorded run
        self._recorded_waiting: list[Any] = []  # the approvals it waits for (answering one resumes it here)
        self._events_read = EventsRead()  # where reading the recorded run's events stands (`follow` goes on)
        self._listeners: tuple[Listener, ...] = ()
        self._frame: Frame | None = None
        self._head_lineage: Lineage | None = None
        self._noted: tuple[str | None, int] = (None, 0)  # (run, how many of its headers have their row's summary noted)
        self._whatifs: tuple[str, list[WhatIfMark]] | None = None  # the what-if marks of one run, as read
        self._saved_at: tuple[str, int] | None = None  # (branch, tick) of the last checkpoint saved
        self._head_before: int | None = None  # the runner's last checkpoint as a tick began
        self._attach(loaded)
        self.breakpoint_warnings = self._load_breakpoints()
        if start:
            self._start_run()

    def _attach(self, loaded: LoadedTree, breakpoints: list[Breakpoint] | None = None) -> None:
        """Drive the agent a tree file built: a runner of its own, on a bus of its own, and the
        debugger on it (keeping `breakpoints`, a restarted run's)."""
        self.loaded = loaded
        self.agent = loaded.agent
        self.bus = RuntimeEventBus(history=0)
        self.runner: ReactiveRunner = self.agent.make_runner(event_bus=self.bus, checkpointer=self.store)
        self.runner.add_tick_hook(before=self._ticking, after=self._saved)
        self.timeline = RunTimeline(self.store, StateNames(self.runner.state_manager.schema))
        self.debugger = Debugger(self.runner, agent=self.agent, breakpoints=breakpoints)
        self.debugger.add_listener(self._from_debugger)
        self.debugger.watch()
        self.bus.subscribe(self._on_event, skip=TICK_BLOCK)  # those come as one block after the tick (`_saved`)
        self._failure: tuple[tuple, Failure | None] = ((), None)  # keyed by (runner, run, tick, status)
        self._index: tuple[Mapping | None, KeysView[str]] = (None, {}.keys())

    @classmethod
    def load(cls, target: str, *, input_data: Mapping[str, Any] | None = None,
             db: str | Path | None = None) -> DebugSession:
        """Open a tree file (`path.py` or `path.py:function`); raises `TreeLoadError` / `StoreError`."""
        loaded = load_tree(target)
        return cls(loaded, input_data=input_data, store=open_store(db) if db is not None else None)

    @classmethod
    def open_recorded(cls, db: str | Path | CheckpointStore, run_id: str | None = None, *,
                      tree: str | None = None) -> DebugSession:
        """A recorded run from a store, shown at its last checkpoint, read-only until a replay or fork.

        The store remembers which tree file each run came from; that file is loaded (built,
        not run) so the tree pane has its shape, else the tree text kept with the run (a run
        file opened elsewhere); `tree` names it for a run recorded without one. Raises
        `StoreError` / `TreeLoadError`. `db` may be the store itself, opened by the caller.
        """
        store = open_checkpoint_store(db, create=False) if isinstance(db, (str, Path)) else db
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
        damage = session._damage()
        if damage:
            session._say(damage)
        return session

    def _damage(self) -> str:
        """The event batches read since last asked that did not decode (their events skipped, the rest read),
        in one line naming the store, the run and each batch; "" when none."""
        damaged = self._events_read.damaged
        lines = damaged[:]
        del damaged[:len(lines)]  # (a follower's thread may add one meanwhile: said at its look)
        return "; ".join(lines)

    # -- what the debugger holds ---------------------------------------------------------
    @property
    def breakpoints(self) -> list[Breakpoint]:
        return self.debugger.breakpoints

    @property
    def run_state(self) -> RunState:
        return self.debugger.run_state

    @run_state.setter
    def run_state(self, state: RunState) -> None:
        self.debugger.run_state = state

    @property
    def message(self) -> str:
        """The last thing worth telling the user (an error, a stop reason)."""
        return self.debugger.message

    @message.setter
    def message(self, message: str) -> None:
        self.debugger.message = message

    @property
    def last_stop(self) -> Stop | None:
        return self.debugger.last_stop

    @property
    def last_report(self) -> TickReport | None:
        return self.debugger.last_report

    @property
    def children(self) -> SwarmChildren:
        """A swarm's agents, as the debugger watches them (their trees hang under the host's)."""
        return self.debugger.children

    @property
    def paused_at(self):
        """The runner's `NodeBoundary` when a tick is held before a node, else None."""
        return self.runner.paused_at

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

    def _from_debugger(self, kind: str, data: Any) -> None:
        """What the debugger tells: passed on to the views, and the studio's part of it done here."""
        if kind in ("changed", "tick", "subtick"):
            self._notify(kind, data)
        elif kind == "breakpoints":
            self._save_breakpoints()
            self._notify("changed")
        elif kind == "starting":
            self._saved_at = None
        elif kind == "started":
            self.recorded_run = None
            self.loaded.remember_run(self.store, self.runner.run_id)
            self._remember_head()
            self._saved_at = (self.branch, self.tick)

    @property
    def events(self) -> Events:
        """The recent events, oldest first (the newest EVENT_BUFFER entries, a tick's telemetry one)."""
        return Events(list(self._recent))

    def _on_event(self, event: RuntimeEvent) -> None:
        """Log, stamp and pass on one event (a tick's telemetry comes as one block: `_saved`)."""
        branch = self.runner.checkpoints.branch
        stamped = StampedEvent(branch, event, self._saved_at == (branch, event.tick))
        self.log.add(stamped)
        self._recent.append(stamped)
        self._notify("event", stamped)

    def _ticking(self, runner: ReactiveRunner, tick: int) -> None:
        self._head_before = runner.checkpoints.head

    def _saved(self, runner: ReactiveRunner, report: TickReport) -> None:
        """After a tick's checkpoint: its telemetry logged and passed on as one block, not an event per
        changed node (~10,000 a step at 100,000 nodes); what is published from now on happens between
        ticks. What it saved is remembered as the runner holds it, so the head's marks read nothing back."""
        checkpoints = runner.checkpoints
        ticked = TickEvents.of(checkpoints.branch, runner.run_id, report)
        if ticked is not None:
            self.log.add_tick(ticked)
            self._recent.append(ticked)
            self._notify("event", ticked)
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
            paths, statuses = runner.status_lists()
            agents = self.children.runners()
            if agents:  # the checkpoint holds its swarm's agents too
                paths = [*paths, *(child_path(a, path) for a, r in agents.items() for path in r.nodes)]
                statuses = [*statuses, *(node.status for r in agents.values() for node in r.nodes.values())]
            self.timeline.remember(head, Saved(
                runner.tick_count, {**{ns or "": sm.stored_view(ns) for ns in sm.namespaces()}, **agents_state(runner)},
                TakenStatuses(paths, statuses), frozenset(transient)))

    def _say(self, message: str) -> None:
        self.debugger.say(message)

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
        return marked_nodes(self.breakpoints)

    def rebound_paths(self) -> set[str]:
        """The nodes marked rebound in the frame shown: their bindings differ from the tree file's."""
        return self.frame.rebound()

    def node_views(self) -> NodeColumns:
        """The frame's tree; live, each swarm agent's tree too (under the node that spawned it)."""
        views = self.frame.node_views(self._breakpoint_paths())
        if self.viewing is None:
            views.add([self._child_view(child_path(agent_id, path))
                       for agent_id, runner in self.children.runners().items() for path in runner.nodes])
        return views

    @property
    def tree_shape(self) -> tuple:
        """Changes when the tree pane must be rebuilt: the frame's nodes, the swarm agents and their
        trees. Another frame of the same nodes (a past checkpoint) only restates their lines."""
        if self.viewing is not None:
            return self.frame.shape, ()
        return self._tree_paths(), self.children.shape

    def _tree_paths(self) -> KeysView[str]:
        """The host tree's paths: a view of the runner's `nodes`, one per mapping, so that a redraw
        finds the same tree by identity (a step at 100,000 nodes walked them all twice) and no copy
        of them is kept (a frozenset: ~42 B a node). The runner indexes a tree that changed shape
        into a new mapping (`refresh_tree`): its view compares with the last one as sets do."""
        nodes = self.runner.nodes
        if self._index[0] is not nodes:
            self._index = (nodes, nodes.keys())
        return self._index[1]

    def node_status(self, path: str) -> Status:
        """A node's status in the frame shown (a swarm agent's: live, or as the checkpoint viewed holds it)."""
        return self._child_view(path).status if self._live_agent(path) else self.frame.status(path)

    def _live_agent(self, path: str) -> bool:
        """A swarm agent's node shown live (in the past, the frame draws the agents it holds)."""
        return self.viewing is None and split_child_path(path) is not None

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
        if self._live_agent(path):
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
        return self.debugger.locate(path)

    def node_detail(self, path: str) -> NodeDetail:
        node = self._node(path)
        if self._live_agent(path):
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
        """Every namespace as JSON-able data, one name per value, as of the frame (staged edits in), a
        swarm agent's (`@agent`) included."""
        return self.frame.state()

    def marks(self) -> dict[str, Mark]:
        """Keys whose value differs from the previous checkpoint of the frame's branch."""
        return self.frame.marks()

    def frame_events(self) -> Events:
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
        return self.debugger.busy

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
            self._failure = (key, self.debugger.failure())
        return self._failure[1]

    def model_calls(self, node: str | None = None) -> list[ModelCall]:
        """The frame's model calls (of one node, or all): its branch's and those it forked from,
        up to the frame's tick; from the events, `model_call()` adds the I/O."""
        calls = collect([e for e in self.frame_events().plain() if e.type in MODEL_EVENTS])
        return [call for call in calls if node is None or call.node == node]

    def model_call(self, call: ModelCall) -> ModelCall:
        """The call with its recorded request (messages, tools, config) and response from the store,
        looked up along the frame's lineage."""
        return fill_from_store(call, self.store, self._io_branches(call.branch))

    def _io_branches(self, branch: str | None) -> list[str]:
        return call_branches(self.frame.lineage, branch)

    def tool_call(self, event: StampedEvent) -> ToolCall | None:
        """The recorded tool call a `tool.call.*` event of the frame belongs to (None: not one)."""
        return tool_call(self.frame_events().plain(), event, self.store, self._io_branches(event.branch))

    # -- what if: a fork with a recorded answer edited, a model call re-sent (runtime.debug.whatif) --
    def what_if(self, call: CallRef, answer: Any) -> str:
        """A new branch (`whatif-1`, ...) from just before a recorded model or tool call, serving
        `answer` in its place; the run is held there, as after a fork."""
        source = self.debugger.what_if(call, answer)
        self._whatifs = None
        self._restored(source)
        return self.branch

    async def resend(self, call: CallRef, **edits: Any) -> WhatIfMark:
        """Send a recorded model call again as edited (`messages`, `tools`, `parameters`) to the node's
        endpoint, else the one the environment configures; the run is not touched (`runtime.debug.resend`)."""
        mark = await self.debugger.resend(call, **edits)
        self._whatifs = None  # a row that landed the call says so now
        self._notify("changed")
        return mark

    def _marks_of(self, run_id: str) -> list[WhatIfMark]:
        if self._whatifs is None or self._whatifs[0] != run_id:
            try:
                self._whatifs = (run_id, marks(self.store, run_id))
            except StoreError:
                self._whatifs = (run_id, [])
        return self._whatifs[1]

    # -- comparing with another run or branch (runtime.debug.compare) ------------------------------
    def compare_targets(self) -> list[Target]:
        """The branches and runs the frame's branch can be compared with."""
        from runtime.debug.compare import targets

        run_id = self.recorded_run or self.run_id
        return targets(self.store, run_id, self.frame.branch) if run_id is not None else []

    def compare(self, target: Target) -> Comparison:
        """The frame's branch and `target` side by side (`EditError` when the store cannot tell)."""
        from runtime.debug.compare import compare

        run_id = self.recorded_run or self.run_id
        if run_id is None:
            raise EditError("no run yet: step first")
        try:
            return compare(self.store, run_id, self.frame.branch, target, self._summary)
        except (CheckpointError, StoreError) as exc:
            raise EditError(f"compare: {exc}") from None

    def waiting_on(self) -> list[str]:
        """Async nodes whose work is in flight (what the tree waits for)."""
        return self.debugger.waiting_on()

    def running_nodes(self) -> list[str]:
        """The leaves running in the frame shown (a past one's from its checkpoint), in tree order."""
        return self.frame.running()

    def _node(self, path: str):
        if self.viewing is not None:  # the past frame draws the nodes it holds (a swarm's agents then)
            try:
                return self.frame.node(path)
            except KeyError:
                raise EditError(f"no node at path {path!r}") from None
        return self.debugger.node_at(path)

    # -- running: the debugger's ------------------------------------------------------
    def _start_run(self) -> None:
        """A fresh run, remembered in the store with its tree file so it can be reopened; its
        `run.started` saves the tick-0 checkpoint (the input), which can be viewed and forked."""
        self.debugger.begin(self.input_data)

    def refusal(self) -> str | None:
        """Why the run cannot tick now (a recording, the past shown), or None."""
        if self.recorded_run is not None:
            return RECORDING
        if self.viewing is not None:
            return "viewing the past: back to live (esc), or replay/fork (f)"
        return None

    def _refused(self) -> bool:
        refusal = None if self.busy else self.refusal()
        if refusal is not None:
            self._say(refusal)
        return refusal is not None

    async def step(self) -> TickReport | None:
        """One tick (waiting for async work first if nothing can run). None if it cannot step."""
        return None if self._refused() else await self.debugger.step()

    async def step_into(self) -> TickReport | None:
        """To the next node boundary inside the tick (before that node runs), or to the tick's end."""
        return None if self._refused() else await self.debugger.step_into()

    async def continue_(self, max_ticks: int | None = None) -> Stop:
        """Tick until a breakpoint, a suspension, the end, `max_ticks` ticks, or `pause()`."""
        if self.busy:
            return Stop("error", "already running")
        if self._refused():
            return Stop("refused", self.message)
        return await self.debugger.continue_(max_ticks)

    def pause(self) -> None:
        self.debugger.pause()

    async def restart(self) -> None:
        """A fresh run: the tree file built again (a scripted model starts from its first answer),
        the input applied to a fresh state, a new run id; breakpoints and edited bindings are kept."""
        if self.recorded_run is not None:
            raise EditError(RECORDING)
        if self.busy:
            self.pause()
        rebound = self.runner.checkpoints.rebound() if self.runner.checkpoints is not None else set()
        edited = {path: ports for path, ports in self.bindings().items() if path in rebound}
        await self.agent.close()
        held = self.runner.stop()  # (a node's terminate() that never returns is cut: runtime/signals.py)
        if self.run_id is not None:
            self.store.release(self.run_id)  # left unfinished: abandoned, not "running" while this studio lives
        try:
            loaded = load_tree(self.loaded.target)
        except TreeLoadError as exc:
            raise EditError(f"restart: {exc}") from None
        breakpoints = self.breakpoints
        self.debugger.unwatch()
        self._attach(loaded, breakpoints)
        self._start_run()
        rebound = self._rebind(edited)
        self.log.keep_only(self.runner.run_id)
        self.viewing, self.staged = None, StagedEdits()
        cut = "" if held is None else f"{held}: terminate() did not return within {signals.GRACE:g} s, cut; "
        self._say(f"{cut}restarted: run {self.runner.run_id}; {restart_kept(len(breakpoints), rebound)}")

    def _rebind(self, edited: Mapping[str, Mapping[str, Mapping[str, str]]]) -> list[str]:
        """The last run's rebound ports on the new run, as edits (recorded, so marked rebound): the
        nodes still there whose ports still fit, returned."""
        kept = []
        for path, ports in sorted(edited.items()):
            try:
                for field, direction in (("inputs", "in"), ("outputs", "out")):
                    for port, key in ports[field].items():
                        self.debugger.edit_binding(path, direction, port, key)
            except EditError:
                continue
            kept.append(path)
        return kept

    # -- timeline: checkpoints, the past, replay and fork -------------------------------
    @property
    def branch(self) -> str:
        return self.runner.checkpoints.branch

    def checkpoints(self) -> CheckpointRows:
        """Every checkpoint of the current run, all branches, oldest first: rows built when read, each
        new checkpoint's summary noted beside its header now (its parent is remembered now)."""
        run_id = self.recorded_run or self.run_id
        if run_id is None:
            return CheckpointRows((), self._summary, 0)
        noted_run, noted = self._noted
        noted = noted if noted_run == run_id else 0
        infos = self.timeline.infos(run_id)
        for info in infos[noted:]:
            self.timeline.summary(info)
        self._noted = (run_id, len(infos))
        return CheckpointRows(infos, self._summary, len(infos))

    def _row(self, info: CheckpointInfo) -> TimelineRow:
        return TimelineRow(info.id, info.tick, info.status, info.branch, info.parent_id, self._summary(info))

    def _summary(self, info: CheckpointInfo) -> str:
        """What a checkpoint changed, with the what-ifs made there."""
        return marked(self.timeline.summary(info), info, self._marks_of(info.run_id))

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
        self._say(message)

    def select_live(self) -> None:
        if self.recorded_run is not None:
            self._say(RECORDING)
            return
        self.viewing, self.staged = None, StagedEdits()
        self._say("live")

    async def replay_from(self, checkpoint_id: int) -> str:
        """Re-run from a checkpoint on a new branch (`replay-1`, ...) serving the recorded model and
        tool answers (deterministic, offline); the branch replayed is never appended to. Edits
        staged there are not applied (a fork applies them)."""
        source = self._checkpoint_info(checkpoint_id)
        self.debugger.replay(source)
        self._restored(source)
        return self.branch

    async def fork_from(self, checkpoint_id: int) -> str:
        """A new branch from a checkpoint, with the state and binding edits staged while viewing it."""
        source = self._checkpoint_info(checkpoint_id)
        staged = self.staged if self.viewing is not None and self.viewing.id == source.id else StagedEdits()
        self.debugger.fork(source, staged.updates(), staged.binding_changes())
        self._restored(source)
        return self.branch

    def _checkpoint_info(self, checkpoint_id: int) -> CheckpointInfo:
        try:
            return self.timeline.get(int(checkpoint_id))[0].info
        except (CheckpointError, StoreError, ValueError) as exc:
            raise EditError(str(exc)) from None

    def _restored(self, source: CheckpointInfo) -> None:
        self._remember_head()  # the new branch's first checkpoint, saved by the restore
        self.recorded_run = None  # the restored run is live now
        self._saved_at = (self.branch, source.tick)
        self.viewing, self.staged = None, StagedEdits()
        self._notify("changed")

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
        self._say(following(follower.liveness))  # short: the status line's end
        return follower.stop

    def _landed(self, landed: Landed) -> bool:
        """What the followed run's writer added; False (stop following) once this session no
        longer shows that recording (a replay or fork runs here now) or following failed."""
        run_id = landed.run_id
        if self.recorded_run != run_id:
            return False
        if landed.error is not None:
            self._say(f"stopped following: {landed.error}")
            return False
        newest = landed.checkpoints[-1] if landed.checkpoints else self.store.latest(run_id)
        if not landed.grew:  # only how it stands changed (its writer died; its end, read after its events)
            self._say(following(landed.liveness, newest.tick if newest is not None else None))
            return landed.ended not in FINAL
        self.log.extend(landed.events, landed.saved)
        if landed.checkpoints and self.viewing is not None and self.viewing.id == landed.before \
                and not self.staged:  # it showed the newest (and nothing was edited there): it still does
            self.select_checkpoint(newest.id)
        self._notify("landed")
        damage = self._damage()
        self._say(f"{damage}; {following(landed.liveness, newest.tick)}" if damage else
                  following(landed.liveness, newest.tick))
        return landed.ended not in FINAL

    # -- breakpoints: the debugger's, kept beside the store ------------------------------
    @property
    def breakpoints_file(self) -> Path:
        """Where this tree's breakpoints are kept: beside the store, never in the source tree."""
        return tree_file(self.store, self.loaded.path, self.loaded.function, "breakpoints")

    @property
    def breakpoints_kept(self) -> str:
        """Where the breakpoints live, as the breakpoints screen says it."""
        return (f"kept beside the store, in {self.breakpoints_file.parent.name}/ (never in the source tree); "
                "they come back when this tree is opened again")

    def _load_breakpoints(self) -> list[str]:
        """The breakpoints saved for this tree; one warning per entry (or file) that cannot be used."""
        try:
            saved = read_json(self.breakpoints_file) or []
        except ValueError as exc:
            return [f"{exc}; breakpoints not loaded"]
        if not isinstance(saved, list):
            return [f"{self.breakpoints_file}: not a list of breakpoints ({type(saved).__name__}); breakpoints "
                    "not loaded"]
        warnings, self._loading = [], True
        if len(saved) > MAX_BREAKPOINTS:  # said once, not once per entry past the bound
            warnings.append(f"{self.breakpoints_file.name}: {len(saved) - MAX_BREAKPOINTS:,} breakpoints past the "
                            f"first {MAX_BREAKPOINTS:,} (the most a run takes) skipped")
        try:
            for data in saved[:MAX_BREAKPOINTS]:
                try:
                    self.debugger.add_breakpoint(Breakpoint.from_json(data))
                except (BreakpointError, EditError) as exc:
                    warnings.append(f"{self.breakpoints_file.name}: not a breakpoint here ({exc}); skipped")
        finally:
            self._loading = False
        return warnings

    _loading = False  # reading the breakpoints file: nothing to write back

    def _save_breakpoints(self) -> None:
        if self._loading:
            return
        try:
            write_json(self.breakpoints_file, [bp.to_json() for bp in self.breakpoints])
        except OSError as exc:
            self.message = f"breakpoints not saved: {self.breakpoints_file}: {exc.strerror}"

    def toggle_node_breakpoint(self, path: str, on: str = "before") -> bool:
        """Add or remove a node breakpoint; True when one is now set."""
        return self.debugger.toggle_node_breakpoint(path, on)

    def add_node_breakpoint(self, path: str, on: str = "before") -> Breakpoint:
        """Stop before the node runs (`before`, the default) or after its status changes (`after`)."""
        return self.debugger.add_node_breakpoint(path, on)

    def add_event_breakpoint(self, event_type: str) -> Breakpoint:
        return self.debugger.add_event_breakpoint(event_type)

    def add_condition_breakpoint(self, expression: str) -> Breakpoint:
        """A condition over state; its names must be state fields, keys or namespaces of the tree."""
        return self.debugger.add_condition_breakpoint(expression)

    def set_breakpoint(self, bp: Breakpoint, *, enabled: bool | None = None, on: str | None = None) -> None:
        """Enable or disable a breakpoint, or switch a node breakpoint between before and after."""
        self.debugger.set_breakpoint(bp, enabled=enabled, on=on)

    def remove_breakpoint(self, bp: Breakpoint) -> None:
        self.debugger.remove_breakpoint(bp)

    # -- edits: the debugger's checks; staged while the past is shown ----------------------
    def validate_binding(self, path: str, direction: str, port: str, key: str) -> str:
        """The normalised state key, or `EditError` saying why the port cannot be bound to it."""
        return self.debugger.checked_binding(path, direction, port, key)[1]

    def edit_binding(self, path: str, direction: str, port: str, key: str) -> None:
        """Rebind one port; it takes effect at the next tick and is recorded as an event.
        While a past checkpoint is shown the edit is staged for a fork from there."""
        key = self.validate_binding(path, direction, port, key)
        if self.viewing is not None:
            self.staged.bindings[(path, direction, port)] = key
            self._show(f"binding staged: fork (f) from checkpoint {self.viewing.id} applies it")
            return
        if self.recorded_run is not None:
            raise EditError("this is a recording: fork (f) from a checkpoint to edit it")
        self.debugger.edit_binding(path, direction, port, key)

    def bindings(self) -> dict[str, dict[str, dict[str, str]]]:
        """Every explicit binding of the tree, by node path."""
        return self.debugger.bindings()

    @property
    def bindings_file(self) -> Path:
        """Where "apply and save" keeps this tree's bindings: beside the store, never in the source tree."""
        return tree_file(self.store, self.loaded.path, self.loaded.function, "bindings")

    def save_bindings(self) -> Path:
        return write_json(self.bindings_file, self.bindings())

    def apply_bindings_file(self, path: Path | None = None) -> list[str]:
        """Apply a saved bindings file (this tree's by default); one line per entry that does not fit (not
        applied: the caller says whether the rest goes on)."""
        path = path or self.bindings_file
        try:
            data = read_json(path)
        except ValueError as exc:
            return [str(exc)]
        if data is None and not path.is_file():  # (none saved; a file holding JSON null is said below)
            return []
        if not isinstance(data, dict):
            return [f"{path}: not an object of node paths ({'null' if data is None else type(data).__name__})"]
        warnings = []
        for node_path, ports in data.items():
            if not isinstance(ports, dict):
                warnings.append(f"{path.name}: {node_path}: not an object of inputs/outputs")
                continue
            for direction, field_name in (("in", "inputs"), ("out", "outputs")):
                entries = ports.get(field_name) or {}
                if not isinstance(entries, dict):
                    warnings.append(f"{path.name}: {node_path} {field_name}: not an object")
                    continue
                for port, key in entries.items():
                    try:
                        self.edit_binding(node_path, direction, port, key)
                    except EditError as exc:
                        warnings.append(f"{path.name}: {node_path} {port}: {exc}")
        return warnings

    def edit_state(self, namespace: str | None, key: str, value: Any) -> None:
        """Set one state value (validated by the schema); recorded as a `state.edited` event.
        While a past checkpoint is shown the edit is staged for a fork from there."""
        namespace, value = self.debugger.checked_state_edit(namespace, key, value)
        if self.viewing is not None:
            self.staged.values[(namespace or "", key)] = value
            self._show(f"edit staged: fork (f) from checkpoint {self.viewing.id} applies it")
            return
        if self.recorded_run is not None:
            raise EditError("this is a recording: fork (f) from a checkpoint to edit it")
        self.debugger.edit_state(namespace, key, value)

    # -- approvals: the debugger's ----------------------------------------------------
    def pending_approvals(self) -> list[Any]:
        if self.recorded_run is not None:
            return list(self._recorded_waiting)
        return self.debugger.pending_approvals()

    def approve(self, approval_id: str, arguments: dict[str, Any] | None = None) -> None:
        """Approve a pending call; with `arguments` (checked against the tool's schema) it runs with those."""
        self._resume_recorded()
        self.debugger.approve(approval_id, arguments)

    def check_arguments(self, request: Any, arguments: Any) -> None:
        """`EditError` naming the argument when `arguments` do not fit the waiting tool's schema."""
        self.debugger.check_arguments(request, arguments)

    def deny(self, approval_id: str, reason: str) -> None:
        self._resume_recorded()
        self.debugger.deny(approval_id, reason or "denied in the studio")

    def _resume_recorded(self) -> None:
        """A recorded run that waits for an approval is answered live: it goes on here from its last
        checkpoint, recording into its store (`Agent.resume` does the same in code)."""
        if self.recorded_run is None or not self._recorded_waiting:
            return
        try:
            point = resume_point(self.store, self.recorded_run)
        except (CheckpointError, StoreError) as exc:
            raise EditError(str(exc)) from None
        self.debugger.take_over(point)
        self._restored(point.checkpoint)
        self._recorded_waiting = []


__all__ = ["RECORDING", "DebugSession", "StopReason", "default_db_path", "open_store"]
