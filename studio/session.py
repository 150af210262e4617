"""`DebugSession`: the UI-free controller of one debugged run.

The TUI, the headless CLI and the tests all drive this class. It owns the runner, the
event subscription and the checkpoint store, and it sees the run only through the
runtime's public seams: tick reports and hooks, the event bus, state snapshots and the
checkpoint store. Views (widgets) read from it and send it intents; it never imports
Textual.

Listeners registered with `add_listener(fn)` are called as `fn(kind, data)` with kind:
- "event": a `RuntimeEvent` (high rate: buffer it),
- "tick": a `TickReport` after every tick,
- "changed": anything else the views should redraw (run state, selection, edits).
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import platformdirs
from py_trees.common import Status
from pydantic_core import to_jsonable_python

from runtime.engine.behaviour import AsyncBehaviour, JianmuNodeMixin
from runtime.engine.events import EventType, RuntimeEvent, RuntimeEventBus
from runtime.engine.runner import ReactiveRunner, TickReport
from runtime.guard.approval import ApprovalError
from runtime.memory.checkpoint import (
    Checkpoint,
    CheckpointError,
    CheckpointStore,
    IOReplayer,
    StoreError,
)
from runtime.memory.checkpoint import open_store as open_checkpoint_store
from runtime.memory.checkpoint.postgres_store import is_postgres_url
from runtime.state import StateKeys, StateValidationError, normalize_namespace

from .breakpoints import Breakpoint, BreakpointError, Condition
from .loader import LoadedTree, load_tree

Listener = Callable[[str, Any], None]
EVENT_BUFFER = 50_000


class RunState(StrEnum):
    READY = "ready"  # loaded, not ticked yet
    PAUSED = "paused"
    RUNNING = "running"
    WAITING = "waiting"  # continuing, but the tree waits for async work
    SUSPENDED = "suspended"  # waiting for an approval or other input
    FINISHED = "finished"


class EditError(ValueError):
    """An edit (binding, state value) that was rejected; the message is the reason."""


@dataclass
class NodeView:
    """What the tree pane shows of one node."""

    path: str
    name: str
    class_name: str
    depth: int
    parent: str | None
    children: list[str]
    status: Status
    namespace: str | None
    counter: str | None  # "iter 2/10" for loops
    breakpoint: bool


@dataclass
class PortView:
    port: str
    key: str
    direction: str  # "in" / "out"
    value: Any


@dataclass
class NodeDetail:
    view: NodeView
    ports: list[PortView]
    history: list[tuple[int, str, str]]  # (tick, old, new)
    error: str | None
    traceback: str | None


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
    kind: str  # "breakpoint" | "paused" | "suspended" | "finished" | "divergence" | "error" | "step"
    message: str = ""


@dataclass
class _History:
    statuses: dict[str, deque] = field(default_factory=dict)

    def record(self, report: TickReport) -> None:
        for path, (old, new) in report.changed.items():
            self.statuses.setdefault(path, deque(maxlen=200)).append((report.tick, old.value, new.value))


def default_db_path() -> Path:
    """One default store per store format, so an upgrade never meets an old-format cache file."""
    from runtime.memory.checkpoint.sqlite_store import SCHEMA_VERSION

    return Path(platformdirs.user_cache_dir("jianmu-studio")) / f"runs-v{SCHEMA_VERSION}.db"


def open_store(name: str | Path) -> CheckpointStore:
    """The store a session records into: a file (created if missing, never overwritten) or a
    PostgreSQL URL."""
    if not is_postgres_url(str(name)):
        Path(name).parent.mkdir(parents=True, exist_ok=True)
    return open_checkpoint_store(name)


class DebugSession:
    def __init__(self, loaded: LoadedTree, *, input_data: Mapping[str, Any] | None = None,
                 store: CheckpointStore | None = None):
        self.loaded = loaded
        self.agent = loaded.agent
        self.input_data = dict(input_data if input_data is not None else loaded.input_data)
        self.bus = RuntimeEventBus(history=0)
        self.store = store if store is not None else open_store(default_db_path())
        self.runner: ReactiveRunner = self.agent.make_runner(event_bus=self.bus, checkpointer=self.store)
        self.viewing: TimelineRow | None = None  # a past checkpoint shown read-only
        self._past: Checkpoint | None = None
        self._staged: dict[str, Any] = {}  # state edits made in the past, applied by the next fork
        self._summaries: dict[int, str] = {}
        self.recorded_run: str | None = None  # set when the session opens a recorded run
        self.events: deque[RuntimeEvent] = deque(maxlen=EVENT_BUFFER)
        self.breakpoints: list[Breakpoint] = []
        self.last_report: TickReport | None = None
        self.last_stop: StopReason | None = None
        self.run_state = RunState.READY
        self.message = ""  # the last thing worth telling the user (an error, a stop reason)
        self._listeners: list[Listener] = []
        self._history = _History()
        self._pause = asyncio.Event()
        self._event_hits: list[str] = []
        self._divergence: str | None = None
        self.bus.subscribe(self._on_event)

    @classmethod
    def load(cls, target: str, *, input_data: Mapping[str, Any] | None = None,
             db: str | Path | None = None) -> DebugSession:
        """Open a tree file (`path.py` or `path.py:function`); raises `TreeLoadError` / `StoreError`."""
        loaded = load_tree(target)
        return cls(loaded, input_data=input_data, store=open_store(db) if db is not None else None)

    @classmethod
    def open_recorded(cls, db: str | Path, run_id: str | None = None, *, tree: str | None = None) -> DebugSession:
        """A recorded run from a store, shown at its last checkpoint; nothing executes until asked.

        The store remembers which tree file each run came from; that file is loaded (built,
        not run) so the tree pane has its shape; `tree` names it for a run recorded without
        one. Raises `StoreError` / `TreeLoadError`.
        """
        store = open_checkpoint_store(db, create=False)
        runs = [run.run_id for run in store.runs()]
        if not runs:
            raise StoreError(f"{store.location}: holds no runs")
        run_id = run_id or runs[-1]
        if run_id not in runs:
            raise StoreError(f"{store.location}: no run {run_id!r} (runs: {', '.join(runs[-5:])})")
        target = tree or store.get_meta(f"tree:{run_id}")
        if target is None:
            raise StoreError(f"{store.location}: run {run_id} has no recorded tree file (give it with --tree)")
        session = cls(load_tree(target), store=store)
        session.recorded_run = run_id
        session.select_checkpoint(store.list(run_id)[-1].id)
        return session

    # -- listeners -----------------------------------------------------------------
    def add_listener(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _notify(self, kind: str, data: Any = None) -> None:
        for listener in tuple(self._listeners):
            listener(kind, data)

    def _on_event(self, event: RuntimeEvent) -> None:
        self.events.append(event)
        for bp in self.breakpoints:
            if bp.enabled and bp.hit_by_event(event):
                self._event_hits.append(bp.label)
        if event.type == EventType.NODE_ERROR and event.payload.get("error", "").startswith("ReplayDivergence"):
            self._divergence = event.payload["error"]
        self._notify("event", event)

    def _set_state(self, state: RunState, message: str | None = None) -> None:
        self.run_state = state
        if message is not None:
            self.message = message
        self._notify("changed")

    # -- what the views read -------------------------------------------------------
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
        """Total tokens used by every LLM node, all namespaces added up."""
        total = 0
        for ns in self.runner.state_manager.namespaces():
            usage = self.runner.state_manager.get("llm.usage", ns) or {}
            total += int(usage.get("total_tokens", 0)) if isinstance(usage, dict) else 0
        return total

    def waiting_on(self) -> list[str]:
        """Async nodes whose work is in flight (what the tree waits for)."""
        return [path for path, node in self.runner.nodes.items()
                if isinstance(node, AsyncBehaviour) and node.status == Status.RUNNING
                and node.async_task is not None and not node.async_task.done()]

    def running_nodes(self) -> list[str]:
        return [path for path, node in self.runner.nodes.items()
                if node.status == Status.RUNNING and not node.children]

    def node_views(self) -> list[NodeView]:
        return [self.node_view(path) for path in self.runner.nodes]

    def node_view(self, path: str) -> NodeView:
        node = self._node(path)
        counter = None
        if hasattr(node, "iteration_count") and hasattr(node, "max_iterations"):
            counter = f"iter {node.iteration_count}/{node.max_iterations}"
        return NodeView(
            path=path, name=node.name, class_name=type(node).__name__, depth=path.count("/"),
            parent=path.rpartition("/")[0] or None,
            children=[self.runner.path_of(child) for child in node.children],
            status=self._status_of(path, node), namespace=getattr(node, "namespace", None), counter=counter,
            breakpoint=any(bp.kind == "node" and bp.node == path for bp in self.breakpoints))

    def node_detail(self, path: str) -> NodeDetail:
        node = self._node(path)
        ports: list[PortView] = []
        if isinstance(node, JianmuNodeMixin):
            sm = self.runner.state_manager
            for direction, declared, bound, resolve in (
                    ("in", node.input_ports, node.input_bindings, node.resolve_input_port),
                    ("out", node.output_ports, node.output_bindings, node.resolve_output_port)):
                for port in dict.fromkeys([*declared, *bound]):
                    key = resolve(port)
                    ports.append(PortView(port, key, direction, sm.get(key, node.namespace)))
        error = getattr(node, "last_error", None)
        return NodeDetail(self.node_view(path), ports, list(self._history.statuses.get(path, ())),
                          error.error if error else None, error.traceback if error else None)

    def _status_of(self, path: str, node) -> Status:
        if self._past is None:
            return node.status
        return Status(self._past.statuses.get(path, Status.INVALID.value))

    def state_snapshot(self) -> dict[str, dict[str, Any]]:
        """Every namespace as JSON-able data: live, or as it was at the viewed checkpoint."""
        if self._past is not None:
            past = {ns: dict(values) for ns, values in self._past.state.items()}
            for qualified, value in self._staged.items():
                ns, key = self._split_key(qualified)
                past.setdefault(ns, {})[key] = value
            return to_jsonable_python(past, fallback=repr)
        return self.runner.state_manager.snapshot()

    def _node(self, path: str):
        try:
            return self.runner.nodes[path]
        except KeyError:
            raise EditError(f"no node at path {path!r}") from None

    # -- running -------------------------------------------------------------------
    def _ensure_started(self) -> None:
        if self.runner.run_id is None:
            self._start_run()

    def _start_run(self) -> None:
        """A fresh run, remembered in the store with its tree file so it can be reopened."""
        self.runner.start_fresh(self.input_data)
        self.recorded_run = None
        self.store.set_meta(f"tree:{self.runner.run_id}", f"{self.loaded.path.resolve()}:{self.loaded.function}")

    async def step(self) -> TickReport | None:
        """One tick (waiting for async work first if nothing can run). None if it cannot step."""
        if self.run_state in (RunState.RUNNING, RunState.WAITING):
            return None
        if self.viewing is not None:
            self._set_state(self.run_state, "viewing the past: back to live (esc), or replay/fork (f)")
            return None
        if self.runner.finished:
            self._set_state(RunState.FINISHED, "the run has finished: restart (r) to run it again")
            return None
        if self.runner.suspended:
            self._set_state(RunState.SUSPENDED, self._suspension_message())
            return None
        self._ensure_started()
        self._pause.clear()
        if not await self._wait_until_ready():
            self._set_state(RunState.PAUSED, "paused")
            return None
        report = await self.runner.step()
        self._after_tick(report)
        self._settle(StopReason("step", f"tick {report.tick}"))
        return report

    async def continue_(self, max_ticks: int | None = None) -> StopReason:
        """Tick until a breakpoint, a suspension, the end, `max_ticks` ticks, or `pause()`."""
        if self.run_state in (RunState.RUNNING, RunState.WAITING):
            return StopReason("error", "already running")
        if self.viewing is not None:
            return StopReason("error", "viewing the past: back to live (esc), or replay/fork (f)")
        self._ensure_started()
        self._pause.clear()
        self._set_state(RunState.RUNNING, "running")
        reason = StopReason("paused", "paused")
        ticks = 0
        try:
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
                report = await self.runner.step()
                ticks += 1
                hit = self._after_tick(report)
                if hit is not None:
                    reason = hit
                    break
                await asyncio.sleep(0)  # let the views draw between ticks
        except Exception as exc:
            reason = StopReason("error", f"{type(exc).__name__}: {exc}")
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
        self.last_report = report
        self._history.record(report)
        head = self.runner.checkpoints.head
        if head is not None:
            keys = ", ".join(report.state_keys[:4]) + (" …" if len(report.state_keys) > 4 else "")
            self._summaries[head] = f"{len(report.changed)} nodes" + (f"; {keys}" if keys else "")
        self._notify("tick", report)
        if self._divergence is not None:
            message, self._divergence = self._divergence, None
            self._event_hits.clear()
            return StopReason("divergence", message)
        if self._event_hits:
            label = self._event_hits[0]
            self._event_hits.clear()
            return StopReason("breakpoint", f"breakpoint: {label}")
        for bp in self.breakpoints:
            if bp.enabled and bp.hit_by_tick(report):
                return StopReason("breakpoint", f"breakpoint: {bp.label}")
        conditions = [bp for bp in self.breakpoints if bp.enabled and bp.kind == "condition"]
        if conditions:
            snapshot = {ns or "": self.runner.state_manager.view(ns) for ns in self.runner.state_manager.namespaces()}
            for bp in conditions:
                try:
                    if bp.hit_by_state(snapshot):
                        return StopReason("breakpoint", f"breakpoint: {bp.label}")
                except BreakpointError as exc:
                    bp.enabled = False
                    return StopReason("error", f"{exc} (breakpoint disabled)")
        return None

    def _settle(self, reason: StopReason) -> None:
        self.last_stop = reason
        if self.runner.finished:
            state = RunState.FINISHED
        elif self.runner.suspended:
            state = RunState.SUSPENDED
        else:
            state = RunState.PAUSED
        self._set_state(state, reason.message)

    def _suspension_message(self) -> str:
        pending = self.runner.interaction.pending()
        kinds = ", ".join(f"{v.get('kind')} at {v.get('node')}" for v in pending.values())
        return f"suspended: waiting for {kinds or 'input'}"

    async def restart(self) -> None:
        """A fresh run of the same tree with the same input (a new run id)."""
        if self.run_state in (RunState.RUNNING, RunState.WAITING):
            self.pause()
        self._start_run()
        self.viewing, self._past, self._staged = None, None, {}
        self.last_report = None
        self._history = _History()
        self._set_state(RunState.READY, f"restarted: run {self.runner.run_id}")

    # -- breakpoints ---------------------------------------------------------------
    def toggle_node_breakpoint(self, path: str, on: str = "tick") -> bool:
        """Add or remove a node breakpoint; True when one is now set."""
        self._node(path)
        existing = [bp for bp in self.breakpoints if bp.kind == "node" and bp.node == path]
        if existing:
            for bp in existing:
                self.breakpoints.remove(bp)
            self._notify("changed")
            return False
        if on not in ("tick", "status"):
            raise BreakpointError(f"a node breakpoint fires on 'tick' or 'status', not {on!r}")
        self.breakpoints.append(Breakpoint("node", node=path, on=on))
        self._notify("changed")
        return True

    def add_event_breakpoint(self, event_type: str) -> Breakpoint:
        event_type = event_type.strip()
        if not event_type:
            raise BreakpointError("an event breakpoint needs an event type, for example tool.call.failed")
        bp = Breakpoint("event", event_type=event_type)
        self.breakpoints.append(bp)
        self._notify("changed")
        return bp

    def add_condition_breakpoint(self, expression: str) -> Breakpoint:
        """A condition over state; its names must be state fields, keys or namespaces of the tree."""
        condition = Condition(expression)
        sm = self.runner.state_manager
        known = {*sm.schema.model_fields, *sm.view(None), *(ns.split(".")[0] for ns in self.known_namespaces()),
                 "True", "False", "None"}
        unknown = sorted(condition.names() - known)
        if unknown:
            raise BreakpointError(f"condition {condition.source!r}: no state key {unknown[0]!r}")
        snapshot = {ns or "": sm.view(ns) for ns in sm.namespaces()}
        bp = Breakpoint("condition", condition=condition)
        bp._was_true = condition.evaluate(snapshot)  # validates names now, and fires on the next change
        self.breakpoints.append(bp)
        self._notify("changed")
        return bp

    def remove_breakpoint(self, bp: Breakpoint) -> None:
        if bp in self.breakpoints:
            self.breakpoints.remove(bp)
            self._notify("changed")

    # -- edits ---------------------------------------------------------------------
    def known_namespaces(self) -> set[str]:
        """Namespaces of the tree's nodes and of the state (a subtree may add more as it compiles)."""
        from_tree = {ns for node in self.runner.nodes.values() if (ns := getattr(node, "namespace", None))}
        return from_tree | {ns for ns in self.runner.state_manager.namespaces() if ns}

    def validate_binding_key(self, path: str, key: str) -> str:
        """The normalised state key, or `EditError` saying why the key cannot be bound.

        A key is bindable when the schema declares it, the state already holds it, the
        runtime owns it (`StateKeys`), or it is `<namespace>.<field>` for a known namespace.
        """
        node = self._node(path)
        if not isinstance(key, str):
            raise EditError(f"a state key is text, not {type(key).__name__} ({key!r:.40})")
        key = key.strip()
        if key.startswith("state."):
            key = key[len("state."):]
        if not key:
            raise EditError("a binding needs a state key")
        sm = self.runner.state_manager
        qualified = any(key.startswith(ns + ".") and sm.has_field(key[len(ns) + 1:]) for ns in self.known_namespaces())
        if (qualified or sm.has_field(key) or key in StateKeys().model_dump().values()
                or sm.contains(key, getattr(node, "namespace", None)) or sm.contains(key)):
            return key
        fields = ", ".join(sm.schema.model_fields)
        raise EditError(f"no state field {key!r} in {sm.schema.__name__} (fields: {fields})")

    def edit_binding(self, path: str, direction: str, port: str, key: str) -> None:
        """Rebind one port; it takes effect at the next tick and is recorded as an event."""
        node = self._node(path)
        if not isinstance(node, JianmuNodeMixin):
            raise EditError(f"{path} is a plain py_trees node: it has no ports")
        if direction not in ("in", "out"):
            raise EditError(f"direction must be 'in' or 'out', not {direction!r}")
        declared = node.input_ports if direction == "in" else node.output_ports
        bound = node.input_bindings if direction == "in" else node.output_bindings
        if port not in (*declared, *bound):
            raise EditError(f"{path} has no {direction}put port {port!r} (ports: {', '.join(declared) or 'none'})")
        key = self.validate_binding_key(path, key)
        old = (node.resolve_input_port if direction == "in" else node.resolve_output_port)(port)
        node.bind(**({"inputs": {port: key}} if direction == "in" else {"outputs": {port: key}}))
        self.bus.publish(EventType.BINDING_CHANGED, {"direction": direction, "port": port, "old": old, "new": key},
                         node=path)
        self._notify("changed")

    def bindings(self) -> dict[str, dict[str, dict[str, str]]]:
        """Every explicit binding of the tree, by node path."""
        out = {}
        for path, node in self.runner.nodes.items():
            if isinstance(node, JianmuNodeMixin) and (node.input_bindings or node.output_bindings):
                out[path] = {"inputs": node.input_bindings, "outputs": node.output_bindings}
        return out

    @property
    def bindings_file(self) -> Path:
        return self.loaded.path.with_suffix(".bindings.json")

    def save_bindings(self) -> Path:
        self.bindings_file.write_text(json.dumps(self.bindings(), indent=2) + "\n")
        return self.bindings_file

    def apply_bindings_file(self) -> list[str]:
        """Re-apply a saved bindings file; returns one warning per entry that no longer fits."""
        if not self.bindings_file.exists():
            return []
        try:
            data = json.loads(self.bindings_file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            return [f"{self.bindings_file}: not valid JSON ({exc.msg}); ignored"]
        except (OSError, UnicodeDecodeError, RecursionError) as exc:
            return [f"{self.bindings_file}: cannot be read ({type(exc).__name__}); ignored"]
        if not isinstance(data, dict):
            return [f"{self.bindings_file}: not an object of node paths ({type(data).__name__}); ignored"]
        warnings = []
        for path, ports in data.items():
            if not isinstance(ports, dict):
                warnings.append(f"{self.bindings_file.name}: {path}: not an object of inputs/outputs; ignored")
                continue
            for direction, field_name in (("in", "inputs"), ("out", "outputs")):
                entries = ports.get(field_name) or {}
                if not isinstance(entries, dict):
                    warnings.append(f"{self.bindings_file.name}: {path} {field_name}: not an object; ignored")
                    continue
                for port, key in entries.items():
                    try:
                        self.edit_binding(path, direction, port, key)
                    except EditError as exc:
                        warnings.append(f"{self.bindings_file.name}: {path} {port}: {exc}")
        return warnings

    def edit_state(self, namespace: str | None, key: str, value: Any) -> None:
        """Set one state value (validated by the schema); recorded as a `state.edited` event."""
        if self.run_state in (RunState.RUNNING, RunState.WAITING):
            raise EditError("pause the run before editing state")
        namespace = self._editable(namespace, key)
        if self._past is not None:
            self._stage_edit(namespace, key, value)
            return
        try:
            sm = self.runner.state_manager
            old = sm.get(key, namespace)
            sm.load({key: value}, namespace, signal=True)
        except (StateValidationError, ValueError) as exc:
            raise EditError(str(exc)) from None
        self.bus.publish(EventType.STATE_EDITED, {"namespace": namespace, "key": key,
                                                  "old": _preview(old), "new": _preview(value)})
        self._notify("changed")

    # -- timeline: checkpoints, the past, replay and fork -------------------------------
    @property
    def branch(self) -> str:
        return self.runner.checkpoints.branch

    def checkpoints(self) -> list[TimelineRow]:
        """Every checkpoint of the current run, all branches, oldest first."""
        run_id = self.recorded_run or self.run_id
        if run_id is None:
            return []
        return [TimelineRow(info.id, info.tick, info.status, info.branch, info.parent_id,
                            self._summaries.get(info.id, info.source))
                for info in self.store.list(run_id)]

    def select_checkpoint(self, checkpoint_id: int) -> None:
        """Show the tree and state as they were at a checkpoint (read-only)."""
        if self.run_state in (RunState.RUNNING, RunState.WAITING):
            raise EditError("pause the run before looking at the past")
        try:
            past = self.store.get(int(checkpoint_id))
            self.runner.checkpoints.compile_deferred(past)  # a recorded run's subtrees, to show them
        except (CheckpointError, StoreError, ValueError) as exc:
            raise EditError(str(exc)) from None
        cp = self._past = past
        self.viewing = TimelineRow(cp.id, cp.tick, cp.status, cp.branch, cp.parent_id,
                                   self._summaries.get(cp.id, cp.source))
        self._staged = {}
        self._set_state(self.run_state, f"viewing checkpoint {cp.id} (tick {cp.tick}, {cp.branch})")

    def select_live(self) -> None:
        self.viewing, self._past, self._staged = None, None, {}
        self._set_state(self.run_state, "live")

    async def replay_from(self, checkpoint_id: int) -> None:
        """Continue from a checkpoint serving the recorded model and tool answers (deterministic, offline)."""
        replayer = IOReplayer(self.store, self.recorded_run or self.run_id or "", strict=True)
        self._restore(checkpoint_id, lambda: self.runner.restore(int(checkpoint_id)), replayer)
        self._set_state(RunState.PAUSED, f"replaying from checkpoint {checkpoint_id}: recorded I/O, strict")

    async def fork_from(self, checkpoint_id: int) -> str:
        """A new branch from a checkpoint, with the state edits staged while viewing it."""
        edits = dict(self._staged)
        replayer = IOReplayer(self.store, self.recorded_run or self.run_id or "", strict=False)
        self._restore(checkpoint_id, lambda: self.runner.fork(int(checkpoint_id), state_updates=edits), replayer)
        self._set_state(RunState.PAUSED, f"forked {self.branch} from checkpoint {checkpoint_id}")
        return self.branch

    def _restore(self, checkpoint_id: int, action: Callable[[], Any], replayer: IOReplayer) -> None:
        if self.run_state in (RunState.RUNNING, RunState.WAITING):
            raise EditError("pause the run before replaying or forking")
        try:
            action()
        except (CheckpointError, StoreError, StateValidationError, ValueError) as exc:
            raise EditError(str(exc)) from None
        replayer.attach(self.runner.checkpoints)
        self.runner.context.io_recorder = replayer
        self.recorded_run = None  # the restored run is live now
        self.viewing, self._past, self._staged = None, None, {}
        self.last_report = None

    def _split_key(self, qualified: str) -> tuple[str, str]:
        for ns in sorted(self.known_namespaces(), key=len, reverse=True):
            if qualified.startswith(ns + "."):
                return ns, qualified[len(ns) + 1:]
        return "", qualified

    def _editable(self, namespace: str | None, key: str) -> str | None:
        """The normalised namespace of an edit to `key`, or `EditError`: only keys the state
        schema declares, the runtime owns, or the state already holds can be edited."""
        if not isinstance(key, str) or not key:
            raise EditError(f"a state key is non-empty text, not {key!r:.40}")
        try:
            namespace = normalize_namespace(namespace)
        except ValueError as exc:
            raise EditError(str(exc)) from None
        if namespace is not None and namespace not in self.known_namespaces():
            raise EditError(f"no namespace {namespace!r} (namespaces: {', '.join(sorted(self.known_namespaces()))})")
        sm = self.runner.state_manager
        if not (sm.has_field(key) or key in StateKeys().model_dump().values() or sm.contains(key, namespace)):
            where = f"{namespace}.{key}" if namespace else key
            raise EditError(f"no state key {where!r} (fields of {sm.schema.__name__}: {', '.join(sm.schema.model_fields)})")
        return namespace

    def _stage_edit(self, namespace: str | None, key: str, value: Any) -> None:
        try:
            value = self.runner.state_manager.validate(key, value, namespace)
        except (StateValidationError, ValueError) as exc:
            raise EditError(str(exc)) from None
        self._staged[f"{namespace}.{key}" if namespace else key] = value
        self._set_state(self.run_state, f"edit staged: fork (f) from checkpoint {self.viewing.id} to apply it")

    # -- approvals -----------------------------------------------------------------
    @property
    def approvals(self):
        return self.runner.context.approval_manager

    def pending_approvals(self) -> list[Any]:
        return list(self.approvals.pending()) if self.approvals is not None else []

    def approve(self, approval_id: str) -> None:
        try:
            self._require_approvals().approve(approval_id)
        except ApprovalError as exc:
            raise EditError(str(exc)) from None
        self._after_approval()

    def deny(self, approval_id: str, reason: str) -> None:
        try:
            self._require_approvals().deny(approval_id, reason or "denied in the studio")
        except ApprovalError as exc:
            raise EditError(str(exc)) from None
        self._after_approval()

    def _require_approvals(self):
        if self.approvals is None:
            raise EditError("this tree has no approval manager")
        return self.approvals

    def _after_approval(self) -> None:
        if not self.runner.suspended:
            self._set_state(RunState.PAUSED, "approval resolved: continue (c) or step (n)")
        else:
            self._notify("changed")


def _preview(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["DebugSession", "EditError", "NodeDetail", "NodeView", "PortView", "RunState", "StopReason",
           "TimelineRow", "default_db_path", "open_store"]
