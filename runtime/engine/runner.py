"""`ReactiveRunner`: ticks a tree only when something happened.

A tick is one traversal from the root. Between ticks the runner sleeps on a wake event,
set by a state write with `signal=True`, an async node's task finishing, or an approval
arriving; it never polls. Before a tick it takes its turn in its event loop's share
(`runtime.engine.loop_share`): runs side by side never hold the loop long together. `step()` performs exactly one tick and reports what changed:
the debugger's seam, together with the before/after tick hooks that can hold a tick.

Node boundaries make a tick interruptible between nodes (see `runtime.engine.boundaries`):
`stop_before` names nodes the runner stops before (their `initialise()`/`update()`/async
work not started yet; an async node whose work is in flight is passed: the tick only asks
after it), `step_into()` runs to the next boundary of any node. A held tick
is resumed from that exact point by the next `step()`, `step_into()` or `run()`.

Work a tick does only for observers (the record of what each node returned, the per-node
status diff, events) is done only when someone observes: a step report, a hook, a checkpointer,
or a subscriber to the event type; a tick held at a boundary always keeps its record so far. A runner on a
large tree freezes what is alive when it first goes live, so the garbage collector's full
collections stop walking the tree (`runtime.engine.long_lived` says what that means).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
import time
import traceback
import uuid
from array import array
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, compress
from operator import attrgetter, is_not
from types import TracebackType
from typing import Any

import py_trees
from py_trees.common import Status
from pydantic import BaseModel

from ..signals import run_user_code, stopping_code
from ..state import InteractionKeys, StateChange, StateManager
from ..telemetry.otel import trace_runs
from .behaviour import (
    TICKING,
    AsyncBehaviour,
    JianmuNodeMixin,
    guard_leaf_class,
    guarded_leaf_tick,
    report_node_error,
)
from .boundaries import BoundaryWraps, Marker, NodeBoundary
from .capture import Checkpointer, RunnerState, TickRecorder
from .deps import InjectPayload, RunContext
from .events import (
    NODE_RETURNED,
    NODE_STATUS,
    STATE_CHANGED,
    TICK_COMPLETED,
    TICK_PAUSED,
    TICK_STARTED,
    EventType,
    RuntimeEventBus,
    tick_completed_payload,
)
from .interaction import InteractionController
from .lean_nodes import drop_iterators
from .long_lived import freezes, keep_out_of_collections
from .loop_share import runs_as, share_of, take_turn
from .record import Returns, TickReport, TickTelemetry, unseen_places
from .shape import TreeIndex, check_shape, index_tree
from .user_code import FAILURES, PASSED_ON, failure

Hook = Callable[..., Any | Awaitable[Any]]
_FINISHED = (Status.SUCCESS, Status.FAILURE)
_RUNNING = Status.RUNNING  # (a module constant: reading an Enum member is a Python call's worth)
# One (old, new) tuple per change of status, shared by every report of that change, and one
# `node.status` payload and one `tick.completed` [old, new] pair, shared by every event of it: a
# tick of a 100,000-node tree changes 100,000 statuses and a session keeps every event (~2.5 MB a
# run of sample_trees/large_tree.py). A GC-tracked object made per changed node, even one gone
# at the tick's end, brings the collector's walks sooner (runtime.engine.long_lived); so does a
# tuple per event handed to the bus. Payloads are looked up by the shared tuple's id: hashing a
# tuple of `Status` runs Enum.__hash__ in Python for each member. Events are never changed once
# published.
_CHANGES = {(old._value_, new._value_): (old, new) for old in Status for new in Status}
_STATUS_PAYLOADS = {id(change): {"old": change[0]._value_, "new": change[1]._value_} for change in _CHANGES.values()}
_STATUS_PAIRS = {id(change): [change[0]._value_, change[1]._value_] for change in _CHANGES.values()}
_RETURN_PAYLOADS = {(returned, end): {"status": returned._value_, "end": end._value_} for returned in Status for end in Status}
_CHANGE_OF = {old._value_: {new._value_: _CHANGES[old._value_, new._value_] for new in Status} for old in Status}  # (no tuple
# made to look one up: a tick changes 10,000)
_STATUS_OF = attrgetter("status")
_CHILDREN_OF = attrgetter("children")
_PARENT_OF = attrgetter("parent")
_BUILT_AT_CLOSE = frozenset({NODE_RETURNED, NODE_STATUS, TICK_COMPLETED})  # the events a tick's end may build
_new_telemetry = partial(tuple.__new__, TickTelemetry)  # made in C: its class's __new__ is a Python call (~0.3 us a tick)


@dataclass
class _HeldTick:
    """A tick whose generator is driven step by step, so it can stop at node boundaries."""

    generator: Any
    detailed: bool
    nodes: list[py_trees.behaviour.Behaviour] = field(default_factory=list)  # each node as it returned, in order
    returned: list[Status] = field(default_factory=list)  # what each returned (kept whether detailed or not)
    elapsed: float = 0.0  # seconds spent traversing, pauses excluded
    paused_at: NodeBoundary | None = None


def _qualified(namespace: str | None, key: str) -> str:
    return f"{namespace}.{key}" if namespace else key


def _starts_work(node: py_trees.behaviour.Behaviour) -> bool:
    """A stop before `node` is due: not an async node whose work is already in flight."""
    starts_work = getattr(node, "starts_work", None)
    return starts_work is None or starts_work()


def _hashed_by_identity(cls: type) -> bool:
    """Nodes of `cls` can key a dict themselves: hashed and compared as `object` does (else by `id`)."""
    return cls.__hash__ is object.__hash__ and cls.__eq__ is object.__eq__


_LEAF_TICKS = (py_trees.behaviour.Behaviour.tick, guarded_leaf_tick)  # py_trees' own, or ours put on the class


def _plain_leaf(node: py_trees.behaviour.Behaviour) -> bool:
    return type(node).tick in _LEAF_TICKS and not node.children


def _guard(node: py_trees.behaviour.Behaviour, fail: Callable[[py_trees.behaviour.Behaviour, Exception], Status]) -> None:
    """Catch exceptions of a plain py_trees node per node (pitfall 3): `fail(node, exc)` reports them.

    A plain leaf's class gets the Jianmu leaf tick (`guard_leaf_class`: one guarded generator, ~3x
    cheaper than py_trees' own tick, which formats debug lines nobody prints), py_trees' own leaves
    too: nothing is added to the leaf, and its failure goes to the runner ticking it (`TICKING`). A
    user's node with its own tick has its `initialise`/`update` guarded instead.
    """
    if _plain_leaf(node):
        guard_leaf_class(type(node))
        return
    for method_name in ("initialise", "update"):
        original = getattr(node, method_name)

        def guarded(original=original, method_name=method_name):
            try:
                return original()
            except PASSED_ON:
                raise
            except FAILURES as exc:  # sys.exit() in a node is its failure (runtime.engine.user_code)
                status = fail(node, failure(exc))
                return status if method_name == "update" else None

        setattr(node, method_name, guarded)
    node._jianmu_guarded = True


def _guarded(node: py_trees.behaviour.Behaviour) -> bool:
    """Guarded already (by this runner or an earlier one), or a py_trees composite or decorator
    (py_trees' own code: its children are guarded)."""
    if _plain_leaf(node):
        return type(node).tick is guarded_leaf_tick
    return getattr(node, "_jianmu_guarded", False) or type(node).__module__.startswith("py_trees.")


class ReactiveRunner:
    settle_within = 10.0  # seconds a run stopped from outside waits for its writes in flight (a hung store: forever)
    _diffed: list | None = None  # the index (`_order`) whose statuses were last read whole (`_status_changes`)
    _kin_of: list | None = None  # the index (`_order`) `_kin` was made of
    _moved: tuple[list, list, list[int]] = ([], [], [])  # the last tick's statuses before, after, the places moved
    _cut = False  # `cut_steps()` was called since the last step began

    def __init__(self, root: py_trees.behaviour.Behaviour, state: BaseModel | type[BaseModel] | StateManager,
                 context: RunContext | None = None, event_bus: RuntimeEventBus | None = None,
                 checkpointer: Checkpointer | None = None, *, index: TreeIndex | None = None):
        """`index`: the tree's, from `check_shape` just now (an Agent's): the tree is not walked again."""
        index = index or check_shape(root)
        self.root = root
        self.state_manager = state if isinstance(state, StateManager) else StateManager(state)
        self.context = context or RunContext()
        self.event_bus = event_bus or self.context.runtime_event_bus or RuntimeEventBus()
        self.context.runtime_event_bus = self.event_bus
        self.interaction = InteractionController(self.state_manager)
        self.tick_count = 0
        self.run_id: str | None = None
        self._restored = False  # a checkpoint was put back and nothing ran since: run() continues it
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._live = False
        self._before_hooks: list[Hook] = []
        self._after_hooks: list[Hook] = []
        self._finish_hooks: list[Hook] = []
        self._state_changes: dict[str, tuple[Any, Any]] = {}
        self.input_namespace: str | None = None  # where `input_data` is written (an agent's namespace)
        self._stop_before: frozenset[str] = frozenset()
        self._into = False  # step_into() asked: every node is a boundary until the tick ends
        self._wraps = BoundaryWraps()
        self._held: _HeldTick | None = None
        self.state_manager.add_wake_listener(self._on_wake_signal)
        self.state_manager.subscribe(self._on_state_change)
        self._drop_restart: Callable[[], None] = lambda: None  # removes the restart hook of a load not run yet
        self._unreported = False  # ticks ended, not detailed, since the statuses were last reported
        self.refresh_tree(index)
        self._inject(None)
        self.checkpoints: TickRecorder | None = None
        self._sinks: tuple[Callable[[str | None, TickReport], None], ...] = ()  # `number_telemetry`'s
        self.in_tick = False  # a tick is under way (held at a boundary too) and its checkpoint not saved yet
        if checkpointer is not None:
            self.checkpoints = checkpointer.attach(self)
        self._built_at_freeze = freezes()  # see _go_live
        trace_runs(self.event_bus, agent=root.name)  # OpenTelemetry, when the environment asks for it

    # -- the tree ------------------------------------------------------------------
    def refresh_tree(self, index: TreeIndex | None = None) -> None:
        """Re-index the tree (call after its shape changed) and inject any new nodes; `index`: the tree's
        as `check_shape` made it just now (else it is walked here).

        Nodes already indexed keep their last reported status, so a re-index in the middle
        of a tick (a deferred subtree compiling) loses none of that tick's status changes.
        A node's kind (injected, guarded, a composite, resumable) is its class's, asked once a class:
        100,000 nodes are a few dozen classes.
        """
        reported = dict(zip(map(id, self._order), self._statuses, strict=True)) if hasattr(self, "_order") else {}
        order, order_paths, kinds, parents, _ = index or index_tree(self.root)
        self.nodes: dict[str, py_trees.behaviour.Behaviour] = dict(zip(order_paths, order, strict=True))
        classes = set(kinds)
        jianmu = {cls for cls in classes if issubclass(cls, JianmuNodeMixin)}
        self._jianmu: list[JianmuNodeMixin] = []  # the nodes that take injections (a large tree: few of them)
        for place in compress(range(len(order)), map(jianmu.__contains__, kinds)) if jianmu else ():
            order[place].path = order_paths[place]
            self._jianmu.append(order[place])
        self._guard_all(order, kinds, parents, classes - jianmu)
        self._order = order
        drop_iterators(order)
        self._order_paths = order_paths
        self._places: dict[str, int] | None = None  # made when asked for (`places`)
        self._by_node = all(map(_hashed_by_identity, classes))
        self._paths: dict[Any, str] = dict(zip(order if self._by_node else map(id, order), order_paths, strict=True))
        self._async = [node for node in self._jianmu if isinstance(node, AsyncBehaviour)]  # (`_quiet`)
        self._composites = self._of_classes(kinds, {cls for cls in classes if issubclass(cls, py_trees.composites.Composite)})
        self._resumable = self._of_classes(kinds, {cls for cls in classes if hasattr(cls, "dump_resume_state")})
        self._statuses = ([reported.get(id(node), node.status) for node in order] if reported
                          else list(map(attrgetter("status"), order)))
        self._statuses_now = False  # a tree that grew (its new nodes' statuses may move before a tick reports them)
        if hasattr(self, "_payload"):
            self._inject(self._payload.wake_up)
            self._sync_boundaries()

    def _guard_all(self, order: list[py_trees.behaviour.Behaviour], kinds: list[type],
                   parents: list[py_trees.behaviour.Behaviour], classes: set[type]) -> None:
        """Guard the nodes of `classes` not guarded yet (`_guarded`), a class at a time where it can be: a class
        of plain leaves (`_plain_leaf`: py_trees' leaf tick, no children) gets its tick once, py_trees' own
        composites and decorators need nothing, and only the rest are asked a node at a time."""
        classes = {cls for cls in classes if cls.tick in _LEAF_TICKS or not cls.__module__.startswith("py_trees.")}
        leafy = {cls for cls in classes if cls.tick in _LEAF_TICKS}
        for cls in leafy:
            if not order[kinds.index(cls)].children or any(
                    not node.children for node, kind in zip(order, kinds, strict=True) if kind is cls):
                guard_leaf_class(cls)  # (a plain leaf of it is in the tree)
        fail = self._node_failed  # one bound method for every guarded node
        others = classes - leafy
        asked = chain(compress(order, map(others.__contains__, kinds)) if others else (),
                      (node for node in parents if type(node) in leafy))
        for node in asked:
            if not _guarded(node):
                _guard(node, fail)

    def _of_classes(self, kinds: list[type], classes: set[type]) -> dict[str, py_trees.behaviour.Behaviour]:
        """path -> node of the nodes whose class is one of `classes`, in tree order."""
        if not classes:
            return {}
        picked = list(map(classes.__contains__, kinds))
        return dict(zip(compress(self._order_paths, picked), compress(self._order, picked), strict=True))

    def _node_failed(self, node: py_trees.behaviour.Behaviour, exc: Exception) -> Status:
        return report_node_error(node, self.path_of(node), exc, self.event_bus)

    def _leaf_failed(self, node: py_trees.behaviour.Behaviour, exc: Exception) -> Status | None:
        """A plain leaf's failure in this runner's tick (`TICKING`); None for a node it does not index
        (not guarded by it: it raises, as a leaf no runner guarded did)."""
        path = self._paths.get(node if self._by_node else id(node))
        return None if path is None else report_node_error(node, path, exc, self.event_bus)

    @property
    def places(self) -> Mapping[str, int]:
        """Each node's path -> its place in the tree's order (`nodes`), made once a shape: the one index by
        place that the checkpoint writer's returns and the studio's tree rows share (~70 bytes a node each)."""
        if self._places is None:
            paths = self._order_paths
            self._places = dict(zip(paths, range(len(paths)), strict=True))
        return self._places

    @property
    def composites(self) -> Mapping[str, py_trees.composites.Composite]:
        """path -> node of the tree's composites, in tree order (kept by the index: no walk to ask)."""
        return self._composites

    @property
    def injected(self) -> list[JianmuNodeMixin]:
        """The nodes that take injections (the jianmu nodes, each with its `path`), in tree order."""
        return self._jianmu

    def path_of(self, node: py_trees.behaviour.Behaviour) -> str:
        path = self._paths.get(node if self._by_node else id(node))
        if path is None:  # a node added since the last index (a subtree compiled mid-tick)
            self.refresh_tree()
            path = self._paths.get(node if self._by_node else id(node), node.name)
        return path

    def statuses(self) -> dict[str, Status]:
        return {path: node.status for path, node in self.nodes.items()}

    def reported_statuses(self) -> tuple[list[str], list[Status]] | None:
        """Every node's (path, status) now, as two lists in `nodes` order, without a pass over the
        nodes (at 10,000 nodes, scattered in memory, ~2 ms): those the runner last reported, at a
        detailed tick's end (what its `changed` was worked out from; so in an after-tick hook), a
        fresh start, a stop or a load. None while they may not be the nodes' now: a tick held at a
        boundary or in flight, one that raised, one not detailed, a re-index. The runner replaces the lists,
        never changes them: nor may the caller. (A node's status set by hand, outside the runner,
        is not seen.)"""
        return (self._order_paths, self._statuses) if self._statuses_now else None

    def status_lists(self) -> tuple[list[str], list[Status]]:
        """Every node's (path, status) now, as two lists in `nodes` order: the reported ones while
        they are the nodes' now (`reported_statuses`), else read from the nodes."""
        return self.reported_statuses() or (self._order_paths, [node.status for node in self._order])

    # -- injection and waking ------------------------------------------------------
    def _inject(self, wake_up: Callable[[], None] | None) -> None:
        self._payload = InjectPayload(context=self.context, state_manager=self.state_manager, wake_up=wake_up,
                                      tree_changed=self.refresh_tree)
        for node in self._jianmu:  # plain py_trees nodes receive nothing (`inject_runtime_deps`)
            node.inject(self._payload)

    def _go_live(self) -> None:
        """Bind to the running loop and hand nodes the live wake-up callback."""
        if self._live:
            return
        if freezes() == self._built_at_freeze:  # not frozen since it was built: a large tree goes out of
            keep_out_of_collections(len(self.nodes))  # the collector's walks now, once (runtime.engine.long_lived)
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._live = True
        share_of(self._loop).join(self)  # (runs side by side take turns in it: `loop_share`)
        self._inject(self._on_wake_signal)
        self._wake.set()  # a task may have finished while nobody listened

    def _quiet(self) -> bool:
        """No async node's work of this run is in flight: nothing of it moves while it waits its turn."""
        return not any(node.async_task is not None and not node.async_task.done() for node in self._async)

    def _go_idle(self) -> None:
        self._live = False
        share_of(self._loop).leave(self)
        self._inject(None)

    def _on_wake_signal(self) -> None:
        loop = self._loop
        if loop is not None and self._loop_thread != threading.get_ident():
            loop.call_soon_threadsafe(self._wake.set)
        else:
            self._wake.set()

    def signal(self) -> None:
        """Request another tick (what a node's state write with signal=True does)."""
        self._on_wake_signal()

    def _on_state_change(self, change: StateChange) -> None:
        pending = self._state_changes
        for key, (old, new) in change.changes.items():
            qualified = _qualified(change.namespace, key)
            first = pending.get(qualified)
            pending[qualified] = (old if first is None else first[0], new)
        bus = self.event_bus
        if bus.wants(STATE_CHANGED):
            bus.publish(STATE_CHANGED, {"namespace": change.namespace, "keys": change.keys})

    # -- node boundaries -----------------------------------------------------------
    @property
    def stop_before(self) -> frozenset[str]:
        """Paths of the nodes the runner stops before, inside a tick (node breakpoints).

        Assign any iterable of paths (an empty one clears them). `step()`, `step_into()` and
        `run()` return as soon as the traversal reaches one of these nodes, before its
        `initialise()`/`update()`/async work starts, with `paused_at` saying where; the tick
        resumes from that point on the next call. A path not in the tree yet (a deferred
        subtree) takes effect once the node exists. No path, no cost: the tick is unchanged.
        """
        return self._stop_before

    @stop_before.setter
    def stop_before(self, paths: Iterable[str]) -> None:
        self._stop_before = frozenset(paths)
        self._sync_boundaries()

    @property
    def paused_at(self) -> NodeBoundary | None:
        """Where the current tick is held, or None between ticks."""
        held = self._held
        return held.paused_at if held is not None else None

    async def step_into(self) -> TickReport:
        """Run to the next node boundary (any node) or to the end of the tick.

        Between ticks this starts a tick (waiting for a wake like `step()`) and stops before
        the root; while a tick is held, it resumes it and stops before the next node the
        traversal reaches. The report's `paused_at` names that node; when the traversal ran
        out first, the report is the whole tick's, as `step()` gives it.
        """
        self._into = True
        self._sync_boundaries()
        return await self._drive(into=True)

    def _sync_boundaries(self) -> None:
        if self._into:
            self._wraps.sync(self._order)
        elif self._stop_before or self._wraps:
            self._wraps.sync(self.nodes[path] for path in self._stop_before if path in self.nodes)

    def _drop_held(self) -> None:
        """Abandon a held tick (a restore, a fresh run or a stop resets the tree anyway)."""
        held, self._held = self._held, None
        if held is None:
            return
        self.in_tick = False
        held.generator.close()
        self._state_changes.clear()
        if self._into:
            self._into = False
            self._sync_boundaries()

    # -- hooks ---------------------------------------------------------------------
    def add_tick_hook(self, before: Hook | None = None, after: Hook | None = None) -> Callable[[], None]:
        """`before(runner, tick)` / `after(runner, report)`, sync or async; awaiting holds the tick."""
        if before is not None:
            self._before_hooks.append(before)
        if after is not None:
            self._after_hooks.append(after)

        def remove() -> None:
            if before in self._before_hooks:
                self._before_hooks.remove(before)
            if after in self._after_hooks:
                self._after_hooks.remove(after)

        return remove

    def number_telemetry(self, sink: Callable[[str | None, TickReport], None]) -> Callable[[], None]:
        """Number each tick's telemetry events (`TickReport.telemetry`) whether or not anybody has them
        built, and hand each completed tick's report to `sink(run_id, report)` as the tick ends: a caller
        that wants them all (the debug server) keeps a few numbers of each tick and rebuilds the events
        later (`runtime.engine.record.telemetry_record`), which costs a tick a few numbers, not an event
        per changed node. A sink is told, not awaited, before the tick is saved and its hooks run: none of
        their machinery a tick (a small tree's tick is 30 us). Returns a function that stops it (a
        checkpointer numbers them anyway)."""
        self._sinks = (*self._sinks, sink)

        def stop() -> None:
            self._sinks = tuple(known for known in self._sinks if known is not sink)

        return stop

    def add_finish_hook(self, hook: Hook) -> Callable[[], None]:
        """`hook(runner, status)`, sync or async, once a tick ends the run (SUCCESS or FAILURE).

        For work done once per run (closing tool providers): unlike an after-tick hook it
        costs a tick nothing, and it runs however the run is driven (`run()` or `step()`).
        Returns a function that removes the hook.
        """
        self._finish_hooks.append(hook)
        return lambda: self._finish_hooks.remove(hook) if hook in self._finish_hooks else None

    @staticmethod
    def _call_hooks(hooks: list[Hook], *args: Any) -> Awaitable[None] | None:
        """Call the hooks in turn; None when every one was sync (no coroutine made for a tick's hooks),
        else what awaits the first awaitable one and then calls the rest, in order."""
        hooks = tuple(hooks)
        for i, hook in enumerate(hooks):
            result = hook(*args)
            if result is not None and inspect.isawaitable(result):
                return ReactiveRunner._rest_of_hooks(result, hooks[i + 1:], args)
        return None

    @staticmethod
    async def _rest_of_hooks(result: Awaitable[Any], hooks: tuple[Hook, ...], args: tuple) -> None:
        await result
        for hook in hooks:
            result = hook(*args)
            if result is not None and inspect.isawaitable(result):
                await result

    # -- status of the run ---------------------------------------------------------
    @property
    def status(self) -> Status:
        return self.root.status

    @property
    def finished(self) -> bool:
        return self.root.status in _FINISHED

    @property
    def suspended(self) -> bool:
        """RUNNING, but waiting for input from outside (an approval, an answer)."""
        return self.root.status == Status.RUNNING and self.interaction.suspended

    def resume(self, request_id: str, response: Any = None) -> None:
        """Answer a pending interaction; the next `run()` or `step()` carries on."""
        self.interaction.resolve(request_id, response)

    @property
    def can_tick_now(self) -> bool:
        """False when a tick would only wait: the tree runs and nothing has woken it (a held tick never waits)."""
        return (self.tick_count == 0 or self.root.status != Status.RUNNING or self._wake.is_set()
                or self._held is not None)

    async def wait_until_ready(self) -> None:
        """Return once a tick would do something (at once if it already would)."""
        if not self.can_tick_now:
            await self._wake.wait()

    # -- ticking -------------------------------------------------------------------
    def start_fresh(self, input_data: Mapping[str, Any] | None = None) -> None:
        """Reset the tree and the run-scoped state for a new run (a new run id)."""
        self._drop_held()
        if self.root.status != Status.INVALID:
            self.root.stop(Status.INVALID)
            drop_iterators(self._order)
        self.run_id = uuid.uuid4().hex[:12]
        self._restored = False
        self.event_bus.run_id = self.run_id
        self.tick_count = 0
        self.event_bus.tick = 0
        self.state_manager.reset_ephemeral("run")
        self.state_manager.reset_ephemeral("step")
        stale = [key for key in (InteractionKeys.PENDING, InteractionKeys.RESPONSES) if self.state_manager.get(key)]
        if stale:
            self.state_manager.load(dict.fromkeys(stale, {}))
        for namespace in self.state_manager.namespaces():  # a loop's termination is the last run's, in its namespace
            if self.state_manager.get(InteractionKeys.TERMINATION, namespace) is not None:
                self.state_manager.load({InteractionKeys.TERMINATION: None}, namespace)
        if input_data:
            self.state_manager.update(dict(input_data), self.input_namespace, signal=False)
        self._statuses, self._diffed = [node.status for node in self._order], self._order
        self._statuses_now = True
        self._unreported = False
        self._state_changes.clear()

    async def step(self, *, detailed: bool = True, until: float | None = None, most: int | None = None) -> TickReport:
        """Exactly one tick, after waiting for a wake if nothing could run yet (step over).

        A held tick is resumed and run to its end instead of starting a new one. The tick
        stops early at a node in `stop_before` (the report's `paused_at` says which).
        `detailed=False`: the tick as `run()` makes it, its report's record and changes built
        only for the observers that ask for them (hooks, a checkpointer, event subscribers): a
        debugger continuing with nothing to check in them.
        `until` (a `time.perf_counter()` time): step on after a tick, as `run()` ticks, while the run
        can tick at once (not held, finished, suspended or waiting for a wake), until then, `most`
        ticks in all, or until `cut_steps()` is called meanwhile (a debugger's pause): a debugger's
        continue between two looks at the loop, with no call of its own a tick (a small tree's tick
        is ~30 us; each Python call ~0.1 us). Returns the last tick's report.
        """
        return await self._drive(into=False, detailed=detailed, until=until, most=most)

    def cut_steps(self) -> None:
        """End a `step(until=...)` under way after its tick (at once, if it waits for a turn or a hook)."""
        self._cut = True

    async def _drive(self, into: bool, detailed: bool = True, until: float | None = None,
                     most: int | None = None) -> TickReport:
        runs_as(self.context)  # (its writes take turns as this run's: `loop_share`)
        self._go_live()
        if self.run_id is None:
            self.start_fresh()
        self._cut, made = False, 0
        while True:
            report = await self._step(detailed=detailed, into=into)
            made += 1
            held = report.paused_at is not None
            if not held and self.root.status in _FINISHED:  # a run driven step by step ends with run()'s event
                finished = EventType.RUN_COMPLETED if report.status == Status.SUCCESS else EventType.RUN_FAILED
                self.event_bus.publish(finished, {"status": report.status.value, "ticks": self.tick_count})
            if self.checkpoints is not None and (settling := self._settling()) is not None:  # a step returns
                await settling                                                                   # with its tick stored
            if until is None or held or self._cut or made == most:
                return report
            status = self.root.status
            if status in _FINISHED or (status is _RUNNING and (self.interaction.suspended or not self._wake.is_set())):
                return report
            if time.perf_counter() >= until:
                return report

    async def _settle(self, within: float | None = None) -> None:
        """Wait for the checkpointer's writes in flight (an asyncio store writes a run's end as it ends), at
        most `within` seconds when given (they go on meanwhile)."""
        if (settling := self._settling()) is not None:
            if within is None:
                await settling
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(settling, within)

    def _settling(self) -> Awaitable[None] | None:
        """The checkpointer's writes in flight to wait for; None when there are none (no coroutine a tick)."""
        settle = getattr(self.checkpoints, "settle", None)
        return settle() if settle is not None else None

    async def _step(self, detailed: bool, into: bool = False) -> TickReport:
        if self._held is None:
            await self.wait_until_ready()
            if (turn := take_turn(self.context, self._quiet)) is not None:  # the loop's runs held it long enough
                await turn
            if self._before_hooks and (held := self._call_hooks(self._before_hooks, self, self.tick_count + 1)):
                await held
            detailed = detailed or bool(self._after_hooks) or self.checkpoints is not None or bool(self._sinks)
            traverse, args = (self._tick, (detailed,)) if not self._wraps else (self._hold_tick, (detailed, into))
        else:
            traverse, args = self._resume_held, (into,)
        report = await run_user_code(traverse, *args)  # the nodes' own code: a signal stops it (runtime.signals)
        if not report.completed:
            return report
        for sink in self._sinks:
            sink(self.run_id, report)
        if self._into:
            self._into = False
            self._sync_boundaries()
        if self.checkpoints is not None and (saving := self.checkpoints.after_tick(report)) is not None:
            await saving  # an asyncio store with writes on the wire: the loop runs other work meanwhile
        self.in_tick = False  # what is written from now on lands between ticks
        if self._after_hooks:
            if self.checkpoints is not None and (settling := self._settling()) is not None:  # a hook sees the
                await settling                                                                   # tick stored
            if held := self._call_hooks(self._after_hooks, self, report):
                await held
        if self._finish_hooks and report.status in _FINISHED and (
                held := self._call_hooks(self._finish_hooks, self, report.status)):
            await held
        return report

    def _open_tick(self, detailed: bool) -> bool:
        """Start a tick's bookkeeping; returns whether it must build the detailed report."""
        self._wake.clear()  # a signal raised during the tick must not be lost (pitfall 7)
        self._statuses_now = False  # until its end reports them (not if it is held, raises or is not detailed)
        self._restored = False
        self.in_tick = True
        self.tick_count += 1
        bus = self.event_bus
        bus.tick = self.tick_count
        self._started = None
        if bus.wants(TICK_STARTED):
            event = bus.publish(TICK_STARTED, {})
            self._started = (event.seq, event.time)
        elif self.checkpoints is not None or self._sinks:
            self._started = (bus.reserve(1), time.time())
        detailed = detailed or bus.wants(NODE_STATUS) or bus.wants(NODE_RETURNED) or bus.wants(TICK_COMPLETED)
        if detailed and self._unreported:  # the statuses it reported last are older than the last tick's end
            self._statuses, self._diffed = [node.status for node in self._order], self._order  # its changes are
            # its own, not theirs too
            self._unreported = False
        return detailed

    def _tick(self, detailed: bool) -> TickReport:
        """A tick with no boundary anywhere: the generator consumed in one go; detailed, each node
        the generator yields (it has just returned) kept with its status then (`runtime.engine.record`)."""
        detailed = self._open_tick(detailed)
        nodes: list[py_trees.behaviour.Behaviour] = []
        returned: list[Status] = []
        started = time.perf_counter()
        ticking = TICKING.set(self._leaf_failed)
        try:
            if detailed:
                keep, note = nodes.append, returned.append
                for node in self.root.tick():
                    keep(node)
                    note(node.status)
            else:
                deque(self.root.tick(), maxlen=0)  # consume the generator whole (pitfall 2)
        except Exception as exc:
            self._tick_failed(exc)
            raise
        finally:
            TICKING.reset(ticking)
        return self._close_tick(detailed, nodes, returned, time.perf_counter() - started)

    def _hold_tick(self, detailed: bool, into: bool) -> TickReport:
        self._held = _HeldTick(self.root.tick(), self._open_tick(detailed))
        return self._resume_held(into)

    def _resume_held(self, into: bool) -> TickReport:
        """Drive the held tick to the next wanted boundary, or to its end."""
        held = self._held
        held.paused_at = None
        stop, keep, note = self._stop_before, held.nodes.append, held.returned.append
        started = time.perf_counter()
        ticking = TICKING.set(self._leaf_failed)
        try:
            for item in held.generator:
                if type(item) is Marker:
                    path = self.path_of(item.node)
                    if into or (path in stop and _starts_work(item.node)):
                        held.elapsed += time.perf_counter() - started
                        held.paused_at = NodeBoundary(self.tick_count, path)
                        bus = self.event_bus
                        if bus.wants(TICK_PAUSED):
                            bus.publish(TICK_PAUSED, {}, node=path)
                        return TickReport(self.tick_count, self.root.status, paused_at=held.paused_at,
                                          duration_ms=held.elapsed * 1000)
                else:
                    keep(item)
                    note(item.status)
        except Exception as exc:
            self._held = None
            self._tick_failed(exc)
            raise
        finally:
            TICKING.reset(ticking)
        self._held = None
        return self._close_tick(held.detailed, held.nodes, held.returned, held.elapsed + time.perf_counter() - started)

    def _tick_failed(self, exc: Exception) -> None:
        self.in_tick = False
        self._diffed = None  # stopped below whatever it returned: the next tick's end reads every status
        report_node_error(self.root, self.path_of(self.root), exc, self.event_bus)
        self.root.stop(Status.INVALID)

    def _paths_of(self, nodes: list[py_trees.behaviour.Behaviour]) -> list[str]:
        """The paths of `nodes` (looked up in C: a tick returns 10,000 of them)."""
        paths = list(map(self._paths.get, nodes if self._by_node else map(id, nodes)))
        if None in paths:  # a node added since the last index (a subtree compiled mid-tick)
            paths = [path or self.path_of(node) for path, node in zip(paths, nodes, strict=True)]
        return paths

    @property
    def held_returns(self) -> Returns | None:
        """What the nodes returned so far in the tick held at a node boundary, in order (a node
        not in it has not returned in this tick yet); None between ticks."""
        held = self._held
        return None if held is None else Returns(self._paths_of(held.nodes), list(held.returned))

    def _close_tick(self, detailed: bool, nodes: list[py_trees.behaviour.Behaviour], returned: list[Status],
                    elapsed: float) -> TickReport:
        bus = self.event_bus
        ticked = self._paths_of(nodes)
        if not detailed:
            self._state_changes.clear()
            self._unreported = True
            return TickReport(self.tick_count, self.root.status, ticked=ticked, returned=returned,
                              duration_ms=elapsed * 1000)
        ends = list(map(_STATUS_OF, nodes))
        places = unseen_places(ticked, returned, ends)
        unseen = list(zip(places, map(ends.__getitem__, places), strict=True)) if places else []
        changed = self._status_changes(nodes, ticked, ends)
        report = TickReport(self.tick_count, self.root.status, changed=changed, ticked=ticked, returned=returned,
                            state_changes=self._state_changes, duration_ms=elapsed * 1000, unseen=unseen)  # (no
        # default made to be replaced: a tick's report is made every tick a debugger or a store watches)
        self._state_changes = {}
        numbered = (self.checkpoints is not None or bool(self._sinks)) and self._started is not None
        if numbered and not bus.wants_any(_BUILT_AT_CLOSE):  # nobody has its events built (a store, the debug
            now, first = time.time(), bus.reserve(len(unseen) + len(changed) + 1)  # server): numbered as one block
            report.telemetry = _new_telemetry((self._started, (first + len(unseen), now) if changed else None,
                                               (first + len(unseen) + len(changed), now), (first, now) if unseen else None))
            return report
        statuses = completed = returns = None
        if unseen and (numbered or bus.wants(NODE_RETURNED)):
            now = time.time()
            if bus.wants(NODE_RETURNED):
                payloads = _RETURN_PAYLOADS
                first = bus.publish_each(NODE_RETURNED, [ticked[i] for i, _ in unseen],
                                         [payloads[returned[i], end] for i, end in unseen], now)
            else:
                first = bus.reserve(len(unseen))
            returns = (first, now)
        if changed and (numbered or bus.wants(NODE_STATUS)):
            now = time.time()
            if bus.wants(NODE_STATUS):
                payloads = _STATUS_PAYLOADS
                first = bus.publish_each(NODE_STATUS, changed.keys(),
                                         [payloads[id(change)] for change in changed.values()], now)
            else:
                first = bus.reserve(len(changed))
            statuses = (first, now)
        if bus.wants(TICK_COMPLETED):
            pairs = _STATUS_PAIRS
            event = bus.publish(TICK_COMPLETED, tick_completed_payload(
                report.status._value_, report.duration_ms, {p: pairs[id(change)] for p, change in changed.items()},
                report.state_keys, len(ticked)))
            completed = (event.seq, event.time)
        elif numbered:
            completed = (bus.reserve(1), time.time())
        if numbered:
            report.telemetry = _new_telemetry((self._started, statuses, completed, returns))
        return report

    def _status_changes(self, nodes: list[py_trees.behaviour.Behaviour], ticked: list[str],
                        ends: list[Status]) -> dict[str, tuple[Status, Status]]:
        """The tick's changes of status, in the tree's order, against those last reported. A status moves
        only in a tick, and only at a node the tick returned (`nodes`, their `ticked` paths, `ends` their
        statuses now) or one stopped under it (a composite stops its children, a decorator its child):
        the children of the nodes the tick returned, then of those that changed, are looked at, so a
        step costs what it ticked, not the tree (a stage of 10,000 nodes of a 100,000-node tree: ~15 ms
        less). Every node is read instead when the last report is not of this index (a re-index, a
        tick that raised, a load's restart), or when the tick returned more than an eighth of the tree
        (every node changing each tick: the walk cost 2.5x the read)."""
        previous, order = self._statuses, self._order
        self._statuses_now = True
        if self._diffed is not order or len(nodes) * 8 > len(order):  # (a tick of most of the tree: reading
            return self._every_change()  # every status in one comprehension costs less than its walk)
        places = self.places
        at = list(map(places.__getitem__, ticked))
        moved = [i for i, old, new in zip(at, map(previous.__getitem__, at), ends, strict=True) if old is not new]
        current = previous.copy()
        deque(map(current.__setitem__, at, ends), maxlen=0)
        seen, below = set(at), nodes
        while below:  # the children not returned, of the nodes returned, then of those that changed
            children = list(chain.from_iterable(map(_CHILDREN_OF, below)))
            unseen = set(map(places.__getitem__, self._paths_of(children))) - seen
            seen |= unseen
            stopped = [i for i in unseen if previous[i] is not order[i].status]
            for i in stopped:
                current[i] = order[i].status
            moved += stopped
            below = [order[i] for i in stopped]
        return self._moved_to(previous, current, sorted(set(moved))) if moved else {}

    def _moved_to(self, previous: list[Status], current: list[Status], moved: list[int]) -> dict[str, tuple[Status, Status]]:
        """Report `current`, which differs from `previous` at the places `moved` (in order): the changes."""
        self._statuses, self._moved = current, (previous, current, moved)
        paths, changes = self._order_paths, _CHANGE_OF
        return {paths[i]: changes[previous[i]._value_][current[i]._value_] for i in moved}

    def moved_between(self, before: list[Status], after: list[Status]) -> list[int] | None:
        """The places (in `nodes` order) whose status differs between two lists of them the runner gave
        (`status_lists`), when they are those a tick's end replaced and put (its `changed`, by place):
        a caller comparing the lists (a checkpointer packing them) need not; else None."""
        old, new, moved = self._moved
        return moved if before is old and after is new else None

    def _every_change(self) -> dict[str, tuple[Status, Status]]:
        """The tick's changes found by reading every node's status (see `_status_changes`)."""
        current, previous, self._diffed = list(map(_STATUS_OF, self._order)), self._statuses, self._order
        if current == previous:  # (nothing moved, found in C: a small tree's usual tick)
            self._statuses, self._moved = current, (previous, current, [])
            return {}
        if len(previous) != len(current):  # a re-index: the statuses reported are matched by node
            known = dict(zip(map(id, self._order), previous, strict=False))
            self._statuses, previous = current, [known.get(id(node), Status.INVALID) for node in self._order]
            self._moved = ([], [], [])
            changes = _CHANGES
            return {path: changes[old._value_, new._value_]
                    for path, old, new in zip(self._order_paths, previous, current, strict=True) if old is not new}
        return self._moved_to(previous, current, list(compress(range(len(current)), map(is_not, previous, current))))

    async def run(self, max_ticks: int | None = None, *, input_data: Mapping[str, Any] | None = None) -> Status:
        """Tick until SUCCESS/FAILURE, `max_ticks`, suspension or a `stop_before` node; returns the root's status.

        A runner whose tree is RUNNING (paused, suspended) or that was just restored from a
        checkpoint carries on (a restored finished run reports its status without ticking);
        otherwise this is a fresh run: new run id, tree reset, run- and step-scoped state
        reset, then `input_data` written. A tick held at a node boundary is resumed first;
        stopping at one returns at once (`paused_at` says where, the status is RUNNING's
        or the last tick's).
        """
        runs_as(self.context)  # (its writes take turns as this run's: `loop_share`)
        if (turn := take_turn(self.context, self._quiet)) is not None:  # (a fresh start takes a full record: 50 runs
            await turn                                                   # started at once took theirs in one iteration)
        held = self._held is not None
        fresh = self.run_id is None or (self.root.status != Status.RUNNING and not self._restored and not held)
        self._restored = False
        if fresh:
            self.start_fresh(input_data)
        elif input_data:
            self.state_manager.update(dict(input_data), self.input_namespace)
        was_live = self._live
        self._go_live()
        bus = self.event_bus
        bus.publish(EventType.RUN_STARTED, {"fresh": fresh, "tick": self.tick_count})
        ticks, stopped = 0, False
        try:
            while True:
                if held or not self.finished:  # only a restored finished run is finished here
                    report = await self._step(detailed=False)
                    held = not report.completed
                    if held:
                        return self.root.status
                    ticks += 1
                status = self.root.status
                if status == Status.SUCCESS:
                    bus.publish(EventType.RUN_COMPLETED, {"status": status.value, "ticks": self.tick_count})
                    return status
                if status == Status.FAILURE:
                    bus.publish(EventType.RUN_FAILED, {"status": status.value, "ticks": self.tick_count})
                    return status
                if self.suspended:
                    bus.publish(EventType.RUN_SUSPENDED, {"pending": self.interaction.pending()})
                    return status
                if max_ticks is not None and ticks >= max_ticks:
                    return status
        except Exception as exc:
            bus.publish(EventType.RUN_FAILED, {"status": "ERROR", "error": f"{type(exc).__name__}: {exc}"})
            raise
        except (asyncio.CancelledError, KeyboardInterrupt):
            stopped = True
            raise
        finally:
            try:
                await self._settle(self.settle_within if stopped else None)
            finally:
                if not was_live:
                    self._go_idle()

    # -- capture and load (the seam of runtime.memory.checkpoint) -------------------
    def capture(self, paths: Iterable[str] | None = None, *, statuses: bool = True,
                places: Iterable[int] | None = None) -> RunnerState:
        """The runner's own state now: statuses and composite positions of `paths` (every
        node when None: pass a tick's `changed` and `ticked` to capture only what it touched),
        and the resume data of every node that keeps some (few nodes do). Without `statuses`
        (every node), only positions and resume data: for a caller that reads the statuses as
        lists (`status_lists`; a checkpointer packing a large tree's). `places` (in `nodes`
        order) instead of paths: the positions of those nodes and their parents, no statuses (the
        same caller: the places it found changed), the composites among them in `touched`;
        looked up by place, not path (10,000 of a 100,000-node tree: ~10 ms less a save)."""
        nodes, composites = self.nodes, self._composites
        captured = RunnerState(self.tick_count, self.run_id, self.event_bus.position, self._wake.is_set())
        if places is not None:
            parent_at, composite_at = self._kin()
            kin = set(map(parent_at.__getitem__, places))
            kin.update(places)
            kin = [i for i in kin if composite_at[i]]
            selected = list(zip(map(self._order_paths.__getitem__, kin), map(self._order.__getitem__, kin), strict=True))
            captured.touched = frozenset(p for p, _ in selected)
        elif paths is None:  # comprehensions, then the composites alone: 20 ms at 100,000 nodes, not 25
            if statuses:
                captured.statuses = dict(zip(self._order_paths, [n.status._value_ for n in self._order], strict=True))
            selected = composites.items()
        else:
            selected = [(p, nodes[p]) for p in paths if p in nodes]
            captured.statuses = {path: node.status._value_ for path, node in selected}
            selected = [(p, node) for p, node in selected if p in composites]
        for path, node in selected:
            if node.current_child is not None:
                captured.positions[path] = node.children.index(node.current_child)
        for path, node in self._resumable.items():
            captured.resume[path] = node.dump_resume_state()
        return captured

    def _kin(self) -> tuple[array, bytes]:
        """Each node's parent's place (the root's: its own) and whether it is a composite, by place: a
        capture by places reaches the composites whose position may have moved without touching a leaf
        (a stage of 10,000 leaves: ~1,000 composites). Made once an index (~5 bytes a node)."""
        if self._kin_of is not self._order:
            parents = list(map(_PARENT_OF, self._order))  # (in C: ~10 ms at 100,000 nodes)
            while None in parents:  # the root: its own
                i = parents.index(None)
                parents[i] = self._order[i]
            self._kin_made = (array("i", map(self.places.__getitem__, self._paths_of(parents))),
                              bytes(map(self._composites.__contains__, self._order_paths)))
            self._kin_of = self._order
        return self._kin_made

    def load(self, captured: RunnerState) -> None:
        """Put a captured runner state back (load the state manager's values first).

        Stops the tree (cancelling async work in flight), then sets every node's status
        (INVALID where `captured` has none), composite positions and resume data, the tick
        count, run id and event position. A RUNNING leaf stays RUNNING, so the runner shows
        (and a save after it records) the picture captured, and runs again from `initialise()`
        just before the next tick (pitfall 8): an async one has its work started afresh, and
        that tick waits for it when the captured tick did (no wake pending). The next `run()`
        continues from here, even at tick 0 or when finished.
        """
        self._drop_restart()
        self.stop()
        self._state_changes.clear()
        restart = []
        for path, node in self.nodes.items():
            status = Status(captured.statuses.get(path, Status.INVALID.value))
            if path in captured.positions:
                node.current_child = node.children[captured.positions[path]]
            if path in captured.resume:
                node.restore_resume_state(captured.resume[path])
            if status == Status.RUNNING and not node.children:
                restart.append(node)
            node.status = status
        self._statuses = [Status(captured.statuses.get(path, "INVALID")) for path in self._order_paths]
        self._statuses_now, self._diffed = True, self._order
        self._unreported = False
        self.tick_count = self.event_bus.tick = captured.tick
        self.run_id = self.event_bus.run_id = captured.run_id
        self.event_bus.seek(captured.event_position)
        self._wake.set()  # reach the first tick, where the restart below decides whether it waits
        self._restored = True
        if restart:
            self._restart_before_next_tick(restart, captured.wake)

    def _restart_before_next_tick(self, nodes: list[py_trees.behaviour.Behaviour], wake: bool) -> None:
        async def restart(_runner: Any, _tick: int) -> None:
            remove()
            still = [node for node in nodes if node.status == Status.RUNNING]  # not stopped meanwhile
            self._statuses_now, self._diffed = False, None  # set here (no tick returns them): the tick's end reads all
            for node in still:
                if isinstance(node, AsyncBehaviour):
                    node.initialise()  # its work starts afresh; the tick finds it RUNNING
                else:
                    node.status = Status.INVALID  # the tick runs it from initialise(), as py_trees would
            if not wake and any(isinstance(node, AsyncBehaviour) for node in still):
                # the captured tick waited for this work: so does this one
                self._wake.clear()
                await self._wake.wait()

        remove = self._drop_restart = self.add_tick_hook(before=restart)

    # -- time travel (see runtime.memory.checkpoint) -------------------------------
    def _require_checkpoints(self):
        if self.checkpoints is None:
            raise RuntimeError("this runner has no checkpointer: pass ReactiveRunner(..., checkpointer=store)")
        return self.checkpoints

    def restore(self, checkpoint_id: int) -> None:
        """Put back statuses, node resume data and state as they were at a checkpoint."""
        self._require_checkpoints().restore(checkpoint_id)  # a held tick is abandoned once it fits

    def fork(self, checkpoint_id: int, *, state_updates: Mapping[str, Any] | None = None,
             binding_changes: Mapping[str, Any] | None = None) -> str:
        """Restore a checkpoint, apply edits, and continue on a new branch (returned)."""
        return self._require_checkpoints().fork(checkpoint_id, state_updates=state_updates,
                                                binding_changes=binding_changes)

    def stop(self) -> str | None:
        """Stop the tree (cancels running async nodes, abandons a held tick); the state is kept. Within a command's
        loop, a node's `terminate()` that holds on is cut (runtime/signals.py `stopping_code`): the nodes not
        stopped yet are then marked INVALID without theirs, their tasks cancelled, and the path of the node whose
        code was cut is returned (None: every clean-up returned)."""
        self._drop_held()
        held = None
        if self.root.status != Status.INVALID:
            cut = stopping_code(lambda: self.root.stop(Status.INVALID))
            if cut is not None:
                held = self._holding(cut)
                self._stopped_without_user_code()
            drop_iterators(self._order)
        self._statuses, self._diffed = [node.status for node in self._order], self._order
        self._statuses_now = True
        self._unreported = False
        return held

    def _holding(self, cut: TracebackType) -> str:
        """The path of the node whose code was running where `cut` ends: the innermost frame of a method of one
        of the tree's nodes (its `terminate()`, or what that called of it), else the root's."""
        nodes = {id(node): node for node in self._order}
        held = self.root
        for frame, _ in traceback.walk_tb(cut):
            node = nodes.get(id(frame.f_locals.get("self")))
            held = node if node is not None else held
        return self.path_of(held)

    def _stopped_without_user_code(self) -> None:
        """What a cut stop left running, marked INVALID; an async node's task is cancelled (the runtime's own)."""
        for node in self._order:
            if node.status != Status.INVALID:
                if isinstance(node, AsyncBehaviour):
                    node._cancel_task()
                node.status = Status.INVALID


__all__ = ["NodeBoundary", "ReactiveRunner", "Returns", "RunnerState", "TickReport", "TickTelemetry"]
