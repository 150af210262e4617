"""Frames: what every pane shows, for one (run, branch, checkpoint).

The head frame reads the live runner; a past frame reads only its checkpoint in the store
(and the events logged for its lineage), so nothing later than the viewed tick can leak
into it. The tree of the live runner gives a past frame only what never changes with time:
names, classes, namespaces, declared ports; which nodes existed then comes from the
checkpoint (a subtree compiled later is not drawn). A swarm's agents are part of both: the
head's state holds their namespaces (`@agent`), a past frame draws the agents its
checkpoint holds (`runtime.debug.children.PastAgents`) under the nodes that spawned them.

Both read the record of a tick (`runtime.engine.record`), never a second copy of its logic: a
past frame its checkpoint's returns (what its tick returned, in order), the head frame, while a
tick is held inside (a step into, a breakpoint before a node), the runner's returns so far: a node
that returned shows what it returned, a node not reached yet is `pending` (not yet ticked). A
node's status history is its `node.status` and `node.returned` events (`status_history`), a tick's
telemetry as one block (`studio.event_log`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass, field, replace
from itertools import compress, repeat
from operator import is_
from typing import Any
from weakref import WeakKeyDictionary

from py_trees.common import Status

from runtime.debug.children import PastAgents, agents_state
from runtime.engine.behaviour import JianmuNodeMixin, binding_key
from runtime.engine.events import EventType
from runtime.engine.record import Returns
from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import Checkpoint, CheckpointInfo, StoreError
from runtime.node.composites import LoopUntilSuccess, loop_counter
from runtime.state import Deferred, StateManager

from .edits import EditError, StagedEdits
from .event_log import EventLog, Events, StampedEvent, status_history
from .failure import ToolFailure
from .node_views import NodeColumns, NodeView
from .timeline import Lineage, Mark, RunTimeline, State, diff

HISTORY = 200  # status changes shown per node
TOOL_FAILURES_KEPT = 20  # failed tool calls shown per node
STATUS = {status.value: status for status in Status}  # a saved status by value, without Status()'s lookup


@dataclass
class PortView:
    port: str
    key: str
    direction: str  # "in" / "out"
    value: Any


def port_views(node: JianmuNodeMixin, bindings: tuple[dict[str, str], dict[str, str]],
               read: Callable[[str, str | None], Any]) -> list[PortView]:
    """Each declared or bound port of a node: the state key it resolves to under `bindings`
    (inputs, outputs) and the value `read` finds there."""
    ports = []
    for direction, declared, bound in (("in", node.input_ports, bindings[0]), ("out", node.output_ports, bindings[1])):
        for port in dict.fromkeys([*declared, *bound]):
            key = binding_key(port, bound.get(port))
            ports.append(PortView(port, key, direction, read(key, node.namespace)))
    return ports


@dataclass
class NodeDetail:
    view: NodeView
    ports: list[PortView]
    history: list[tuple[int, str, str]]  # (tick, old, new), this branch, up to the frame's tick
    error: str | None  # the last error as of the frame's tick
    traceback: str | None
    failed_calls: list[ToolFailure] = field(default_factory=list)  # this branch's, up to the frame's tick


class Frame:
    """One moment of one branch of one run: the panes read it, never the runner behind it."""

    run_id: str | None
    branch: str
    tick: int
    root_status: Status
    checkpoint_id: int | None  # None: the head
    lineage: Lineage

    def __init__(self, runner: ReactiveRunner, timeline: RunTimeline, log: EventLog):
        self.runner = runner
        self.timeline = timeline
        self.log = log
        self._paths: Set[str] | None = None

    @property
    def key(self) -> tuple:
        """Equal for two frames that show the same shape (the tree pane rebuilds when it changes)."""
        return (self.run_id, self.branch, self.checkpoint_id)

    # what a subclass knows
    def paths(self) -> Iterable[str]: raise NotImplementedError
    def places(self) -> Mapping[str, int] | None: return None  # path -> its place in `paths()`, if one is kept
    def status(self, path: str) -> Status: raise NotImplementedError
    def statuses(self) -> dict[str, Status]: raise NotImplementedError  # every node's, named at once
    def running(self) -> list[str]: raise NotImplementedError  # the leaves running, in tree order
    def resume_data(self, path: str) -> Any: raise NotImplementedError
    def state(self) -> State: raise NotImplementedError
    def marks(self) -> dict[str, Mark]: raise NotImplementedError
    def _value_reader(self) -> Callable[[str, str | None], Any]: raise NotImplementedError

    def _bindings(self, path: str, node: JianmuNodeMixin) -> tuple[dict[str, str], dict[str, str]]:
        """The node's (input, output) port bindings in this frame."""
        return node.input_bindings, node.output_bindings

    def rebound(self) -> set[str]:
        """The nodes whose bindings in this frame differ from the tree file's (marked rebound)."""
        checkpoints = self.runner.checkpoints
        return checkpoints.rebound() if checkpoints is not None else set()

    def node(self, path: str) -> Any:
        """The node drawn at `path` (KeyError: none)."""
        return self.runner.nodes[path]

    def _ports(self, path: str, node: JianmuNodeMixin) -> list[PortView]:
        return port_views(node, self._bindings(path, node), self._value_reader())

    # what every frame answers the same way
    held_returns: Returns | None = None  # a tick held inside: what returned in it so far (the head frame's)
    pending: frozenset[str] = frozenset()  # ... and the nodes that have not returned in it yet

    @property
    def returns(self) -> Returns | None:
        """The record of the frame's tick: a past frame's checkpoint's; the head's while a tick is held
        inside, so far (else None: the session has the last tick's report)."""
        return self.held_returns

    @property
    def tokens(self) -> int:
        """Tokens used as of this frame: the model calls of its lineage, or the state's `llm.usage`
        (all namespaces added up) when larger: a replay serves recorded answers without calling
        the model, so only the state counts them."""
        total = 0
        for values in self.state().values():
            usage = values.get("llm.usage")
            total += int(usage.get("total_tokens", 0)) if isinstance(usage, dict) else 0
        return max(total, self.log.tokens(self.lineage))

    @property
    def shape(self) -> frozenset[str]:
        """The paths of the frame's tree: equal for two frames that draw the same nodes."""
        return frozenset(self._shown())

    def _shown(self) -> Set[str]:
        """The paths of the frame's tree, for membership tests (computed once per frame)."""
        if self._paths is None:
            self._paths = set(self.paths())
        return self._paths

    def events(self) -> Events:
        return self.log.of(self.lineage)

    def _checkpoint_marks(self, checkpoint: CheckpointInfo) -> dict[str, Mark]:
        """A checkpoint's marks; a key written only by work finishing between the previous tick and
        this one (not during this tick) is labelled with that tick."""
        marks = self.timeline.marks(checkpoint)
        if not marks or checkpoint.parent_id is None:
            return marks
        before = self.timeline.saved(checkpoint.parent_id).tick
        between, during = set(), set()
        for tick in {before, checkpoint.tick}:
            for stamped in self.log.writes(self.lineage, tick):
                if stamped.tick == before and stamped.between:
                    between.update(self._written(stamped))
                elif stamped.tick == checkpoint.tick and not stamped.between:
                    during.update(self._written(stamped))
        for key in between - during:
            if key in marks:
                marks[key] = Mark(marks[key].old, marks[key].new, between=before)
        return marks

    def _written(self, stamped: StampedEvent) -> list[str]:
        ns = stamped.payload.get("namespace")
        keys = stamped.payload.get("keys") or ()
        return [f"{ns}.{key}" for key in keys] if ns else [self.timeline.names.key(key) for key in keys]

    def node_views(self, breakpoints: set[str]) -> NodeColumns:
        """Every node of the frame as columns (a first frame at 100,000 nodes made a `NodeView` each,
        ~0.9 s): each column in a pass of its own, loops' counters and namespaces for the few that have
        them; a row's view is made when asked for (`node_view`)."""
        paths = list(self.paths())
        nodes = self._nodes(paths)
        statuses = self.status_column(paths)
        types = list(map(type, nodes))  # loops told by their (few) types: an isinstance a node, an ABC's, cost ~0.3 s
        kinds = {kind: kind.__name__ for kind in set(types)}
        loops = {kind for kind in kinds if issubclass(kind, LoopUntilSuccess)}
        rows = range(len(nodes))  # the few rows with a namespace or a loop picked in C (a pass in Python: ~25 ms)
        found = list(map(getattr, nodes, repeat("namespace"), repeat(None)))
        namespaces = {row: found[row] for row in compress(rows, found)}
        looped = compress(rows, map(loops.__contains__, types)) if loops else ()
        counters = {row: counter for row in looped
                    if (counter := _counter(nodes[row], statuses[row], self.resume_data(paths[row]))) is not None}
        return NodeColumns(paths, [node.name for node in nodes], list(map(kinds.__getitem__, types)), statuses,
                           self._parents(paths), namespaces, counters, breakpoints, self.pending,
                           functools.partial(self.node_view, breakpoints=breakpoints), self.places())

    def _nodes(self, paths: list[str]) -> list[Any]:
        """The node drawn at each of `paths`, in order."""
        return list(map(self.node, paths))

    def status_column(self, paths: list[str]) -> list[Any]:
        """The status of each of `paths`, in order."""
        return list(map(self.status, paths))

    def _parents(self, paths: list[str]) -> list[str | None]:
        """The parent of each of `paths`, in order (None: the root)."""
        return [path.rpartition("/")[0] or None for path in paths]

    def node_view(self, path: str, breakpoints: set[str]) -> NodeView:
        return self._view_of(path, self._shown(), breakpoints)

    def _view_of(self, path: str, shown: Set[str], breakpoints: set[str]) -> NodeView:
        """One node's line: built positionally, a leaf skips the walk over its (no) children and a node
        that is no loop the read of its resume data (what a counter is made from)."""
        node = self.runner.nodes[path]
        status = self.status(path)
        counter = _counter(node, status, self.resume_data(path)) if isinstance(node, LoopUntilSuccess) else None
        path_of = self.runner.path_of
        children = [p for child in node.children if (p := path_of(child)) in shown] if node.children else []
        return NodeView(path, node.name, type(node).__name__, path.count("/"), path.rpartition("/")[0] or None,
                        children, status, getattr(node, "namespace", None), counter, path in breakpoints,
                        path in self.pending)

    def node_detail(self, path: str, breakpoints: set[str]) -> NodeDetail:
        node = self.node(path)
        ports = self._ports(path, node) if isinstance(node, JianmuNodeMixin) else []
        error, traceback, failed = None, None, []
        arguments: dict[Any, Any] = {}  # call id -> the arguments of a tool call started
        events = self.log.of_node(self.lineage, path)
        for stamped in events:
            payload = stamped.payload
            if stamped.type in (EventType.NODE_STATUS, EventType.NODE_RETURNED):
                continue
            if stamped.type == EventType.NODE_ERROR:
                error, traceback = payload.get("error"), payload.get("traceback")
            elif stamped.type == EventType.TOOL_CALL_STARTED:
                arguments[payload.get("call_id")] = payload.get("arguments")
            else:
                failed.append(ToolFailure(stamped.run_id, stamped.tick, str(payload.get("tool")), payload.get("call_id"),
                                          arguments.pop(payload.get("call_id"), None), str(payload.get("error", ""))))
        return NodeDetail(self.node_view(path, breakpoints), ports, status_history(events)[-HISTORY:], error,
                          traceback, failed[-TOOL_FAILURES_KEPT:])


_RUNNING: WeakKeyDictionary[ReactiveRunner, tuple[list[Status], list[str]]] = WeakKeyDictionary()
"""A runner's running leaves, kept with the status list they came from: the runner replaces its
reported list at each tick (and with a new tree) and never changes one, so an event between ticks (a
step at 100,000 nodes redraws again when its async stage writes) picks them out again only when a
tick reported. Nothing of the tree is kept: a restart's old tree goes."""


class HeadFrame(Frame):
    """The live runner, now; markers against the last checkpoint of its branch."""

    checkpoint_id = None

    def __init__(self, runner: ReactiveRunner, timeline: RunTimeline, log: EventLog, lineage: Lineage):
        super().__init__(runner, timeline, log)
        self.run_id, self.branch, self.lineage = runner.run_id, lineage.branch, lineage
        self.tick, self.root_status = runner.tick_count, runner.root.status
        self._state: State | None = None
        self.held_returns = runner.held_returns
        self._returned = self.held_returns.last() if self.held_returns is not None else {}  # path -> its last return
        if self.held_returns is not None and runner.paused_at is not None:
            self.pending = self.held_returns.not_reached(list(runner.nodes), runner.paused_at.path)

    def paths(self) -> Iterable[str]:
        return self.runner.nodes

    def places(self) -> Mapping[str, int]:
        return self.runner.places

    def _shown(self) -> Set[str]:
        """The runner's paths as they are (a frame a step: a set of 100,000 paths made anew cost ~10 ms)."""
        return self.runner.nodes.keys()

    def status(self, path: str) -> Status:
        """The node's status now; in a tick held inside, what it returned last in it, if it did."""
        return self._returned.get(path) or self.runner.nodes[path].status

    def _nodes(self, paths: list[str]) -> list[Any]:
        return list(self.runner.nodes.values())  # (`paths`: its paths, in its order)

    def status_column(self, paths: list[str]) -> list[Any]:
        """The runner's statuses as it lists them (`paths`: its nodes, in its order), overlaid with what
        returned so far in a tick held inside."""
        statuses = self.runner.status_lists()[1]
        returned = self._returned
        return [returned.get(path) or status for path, status in zip(paths, statuses, strict=True)] if returned \
            else list(statuses)

    def statuses(self) -> dict[str, Status]:
        """Every node's, from the runner's lists (esc back to live at 10,000 nodes: ~0.5 ms when the
        runner reported them, reading every node ~2-4 ms); in a tick held inside, overlaid with what
        the nodes returned in it so far."""
        statuses = dict(zip(*self.runner.status_lists(), strict=True))
        statuses.update(self._returned)
        return statuses

    def running(self) -> list[str]:
        """The leaves running now, in tree order: from the statuses the runner reported when they are
        the nodes' now, two lists side by side rather than every leaf read (each redraw, at 10,000
        nodes scattered in memory: ~2 ms), the running ones picked out in C (a step at 100,000 nodes
        tested each in Python, ~5 ms), or after a tick from those kept and the places it moved (its
        10,000 changes, not the 100,000 statuses: ~3 ms less); in a tick held inside, as the tree shows them."""
        runner = self.runner
        nodes, reported = runner.nodes, None if self._returned else runner.reported_statuses()
        kept = _RUNNING.get(runner)
        if reported is not None and kept is not None and kept[0] is reported[1]:
            return list(kept[1])
        paths, statuses = reported or runner.status_lists()
        moved = None if reported is None or kept is None else runner.moved_between(kept[0], statuses)
        if moved is not None:  # those kept, less the places the tick moved, and those it made running
            places, gone = runner.places, set(moved)
            now = compress(moved, map(is_, map(statuses.__getitem__, moved), repeat(Status.RUNNING)))  # (in C)
            running = sorted([path for path in kept[1] if places[path] not in gone] + [
                paths[i] for i in now if not nodes[paths[i]].children], key=places.__getitem__)
        else:
            if self._returned:
                returned = self._returned
                statuses = [returned.get(path) or status for path, status in zip(paths, statuses, strict=True)]
            running = [path for path in compress(paths, map(is_, statuses, repeat(Status.RUNNING)))
                       if not nodes[path].children]
        if reported is not None:
            _RUNNING[runner] = (statuses, running)
        return list(running)

    def resume_data(self, path: str) -> Any:
        node = self.runner.nodes[path]
        return node.dump_resume_state() if hasattr(node, "dump_resume_state") else None

    def state(self) -> State:
        """The runner's state, and its swarm's agents' namespaces (`@agent`), as its checkpoints hold them."""
        if self._state is None:
            self._state = self.timeline.names.state({**self.runner.state_manager.snapshot(), **agents_state(self.runner)})
        return self._state

    def marks(self) -> dict[str, Mark]:
        """The head checkpoint's marks, and (labelled) whatever was written after it was saved."""
        checkpoints = self.runner.checkpoints
        if checkpoints is None or checkpoints.head is None:
            return {}
        head = self.timeline.info(self.run_id, checkpoints.head)
        marks = self._checkpoint_marks(head)
        for key, mark in diff(self.timeline.saved(head.id).state, self.state()).items():
            marks[key] = Mark(mark.old, mark.new, between=head.tick)
        return marks

    def _value_reader(self) -> Callable[[str, str | None], Any]:
        return self.runner.state_manager.get


class PastFrame(Frame):
    """A checkpoint from the store: statuses, resume data, state and bindings as they were then."""

    def __init__(self, runner: ReactiveRunner, timeline: RunTimeline, log: EventLog, checkpoint: Checkpoint,
                 staged: StagedEdits):
        super().__init__(runner, timeline, log)
        self.checkpoint = checkpoint
        self.checkpoint_id = checkpoint.id
        self.run_id, self.branch, self.tick = checkpoint.run_id, checkpoint.branch, checkpoint.tick
        self.root_status = checkpoint.root_status  # a recorded end (ERROR) or damage is no py_trees status
        self.lineage = timeline.lineage(checkpoint.info, checkpoint.run_id, checkpoint.branch)
        self.staged = staged  # edits made while viewing it, applied by a fork
        self._view: StateManager | None = None
        self._state: State | None = None
        self._agents: PastAgents | None = None
        self._agent_views: dict[str, StateManager] = {}

    @property
    def agents(self) -> PastAgents:
        """The swarm's agents the checkpoint holds (none for a run without one)."""
        if self._agents is None:
            self._agents = PastAgents(self.runner, self.checkpoint)
        return self._agents

    def paths(self) -> Iterator[str]:
        statuses = self.checkpoint.statuses
        yield from (path for path in self.runner.nodes if path in statuses)
        yield from self.agents.nodes

    def status(self, path: str) -> Status:
        return Status(self.checkpoint.statuses.get(path, Status.INVALID.value))

    def status_column(self, paths: list[str]) -> list[Any]:
        saved = self.checkpoint.statuses
        return [STATUS.get(value) or Status(value) for value in [saved.get(path, "INVALID") for path in paths]]

    def _parents(self, paths: list[str]) -> list[str | None]:
        """An agent's root hangs under the node that spawned it."""
        parents = super()._parents(paths)
        agents = self.agents
        if agents.nodes:
            parents = [agents.parent(path) if path in agents.nodes else parent
                       for path, parent in zip(paths, parents, strict=True)]
        return parents

    def statuses(self) -> dict[str, Status]:
        nodes, agents = self.runner.nodes, self.agents.nodes
        return {path: STATUS[value] for path, value in self.checkpoint.statuses.items()
                if path in nodes or path in agents}

    def node(self, path: str) -> Any:
        return self.agents.nodes[path] if path in self.agents.nodes else self.runner.nodes[path]

    def _view_of(self, path: str, shown: Set[str], breakpoints: set[str]) -> NodeView:
        """A host node's line (with the roots of the agents it spawned), or an agent's as it was then."""
        agents = self.agents
        node = agents.nodes.get(path)
        if node is None:
            view = super()._view_of(path, shown, breakpoints)
            if agents.roots:
                view.children += agents.children(path)
            return view
        status = self.status(path)
        return NodeView(path, node.name, type(node).__name__, path.count("/"), agents.parent(path),
                        agents.children(path), status, getattr(node, "namespace", None),
                        _counter(node, status, self.resume_data(path)), path in breakpoints)

    def node_detail(self, path: str, breakpoints: set[str]) -> NodeDetail:
        """A node's detail; an agent's names its namespace as the state pane does (`@agent[.ns]`)."""
        detail = super().node_detail(path, breakpoints)
        if path in self.agents.nodes:
            scope, own = self.agents.state_of(path)[2], detail.view.namespace
            detail.view = replace(detail.view, namespace=f"{scope}.{own}" if own else scope)
        return detail

    def running(self) -> list[str]:
        """The leaves the checkpoint has running, in tree order (the store's, not the live run's)."""
        statuses = self.checkpoint.statuses
        return [path for path in self.paths() if statuses[path] == "RUNNING" and not self.node(path).children]

    @property
    def returns(self) -> Returns | None:
        """What the checkpoint's tick returned, in order (None: no tick's, or recorded without)."""
        return self.checkpoint.returns

    def resume_data(self, path: str) -> Any:
        return (self.checkpoint.resume.get(path) or {}).get("data")

    def state(self) -> State:
        """The checkpoint's state as the timeline named it (stored lists not read), with the staged
        edits in: only they are converted, then all put in order again."""
        if self._state is None:
            names = self.timeline.names
            state = {ns: dict(values) for ns, values in self.timeline.get(self.checkpoint.id)[1].items()}
            staged: State = {}
            for (ns, key), value in self.staged.values.items():
                staged.setdefault(ns, {})[key] = value
            for ns, values in names.state(staged).items():
                state.setdefault(ns, {}).update(values)
            self._state = names.state(state, parsed=True) if staged else state
        return self._state

    def marks(self) -> dict[str, Mark]:
        return self._checkpoint_marks(self.checkpoint.info)

    def _value_reader(self) -> Callable[[str, str | None], Any]:
        """The checkpoint's values as the schema validates them; a stored list is read and validated
        only when a port reads it (`EditError` saying why, if the store cannot read it)."""
        if self._view is None:
            self._view = _state_view(self.runner.state_manager.schema, self.checkpoint.state, self.checkpoint.lists)
        return functools.partial(_read, self._view)

    def _ports(self, path: str, node: JianmuNodeMixin) -> list[PortView]:
        """An agent's node reads its ports in the agent's state of then, with its own bindings."""
        if path not in self.agents.nodes:
            return super()._ports(path, node)
        agent_id = path[1:].partition("/")[0]
        view = self._agent_views.get(agent_id)
        if view is None:
            state, lists, _ = self.agents.state_of(path)
            view = self._agent_views[agent_id] = _state_view(self.agents.runners[agent_id].state_manager.schema,
                                                             state, lists)
        return port_views(node, (node.input_bindings, node.output_bindings), functools.partial(_read, view))

    def _bindings(self, path: str, node: JianmuNodeMixin) -> tuple[dict[str, str], dict[str, str]]:
        return self.staged.over(path, self.runner.checkpoints.bindings_at(self.checkpoint, path))

    def rebound(self) -> set[str]:
        return self.runner.checkpoints.rebound(self.checkpoint) | {path for path, _, _ in self.staged.bindings}


def _counter(node: Any, status: Status, data: Any) -> str | None:
    """A loop's "iter 2/10" from its resume data in the frame (None: not a loop)."""
    return loop_counter(node, status, data["iteration_count"]) if isinstance(data, dict) and "iteration_count" in data \
        else None


def _state_view(schema: type, state: State, lists: dict[str, Any]) -> StateManager:
    """A checkpoint's state in a `StateManager` of `schema`: its stored lists read and validated when
    first read."""
    view = StateManager(schema)
    view.restore({ns: {key: _validated(view, ns, key, value) if key in lists.get(ns, ()) else value
                       for key, value in values.items()}
                  for ns, values in state.items()}, trusted=lists)
    return view


def _read(view: StateManager, key: str, namespace: str | None) -> Any:
    try:
        return view.get(key, namespace)
    except StoreError as exc:
        raise EditError(str(exc)) from None


def _validated(view: StateManager, ns: str, key: str, raw: Deferred) -> Deferred:
    """A stored list as `view` validates it, when first read (`raw`: the list as the store holds it)."""
    return Deferred(lambda: view.validate(key, raw.load(), ns or None))


__all__ = ["Frame", "HeadFrame", "NodeDetail", "NodeView", "PastFrame", "PortView", "port_views"]
