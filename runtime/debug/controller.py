"""`DebugController`: the runtime side of one attached debugger.

It holds the runner at tick boundaries (pause, step, breakpoints) through the runner's
tick hooks, which exist only while a client is attached: with nobody attached the runner
runs exactly as without a debugger. What changed is accumulated (state keys written, node
statuses, events) and sealed into one `update` message only when the connection is free
to send, so a slow client gets coalesced diffs instead of slowing the agent down.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..engine.behaviour import JianmuNodeMixin
from ..engine.boundaries import NodeBoundary
from ..engine.events import EventType, RuntimeEvent
from ..engine.runner import ReactiveRunner, TickReport
from ..guard.approval import ApprovalError
from ..memory.checkpoint import CheckpointError, IOReplayer, StoreError
from ..node.composites import loop_counter
from ..state import StateChange, StateValidationError
from ..tools.base import ToolError
from .children import SwarmChildren, child_namespace, child_path, refused_moment, split_child_path
from .conditions import Condition, ConditionError
from .edits import EditRefused, StateFacts, check_binding, check_state_key, check_tool_arguments, waiting_tool
from .past import ROWS_PER_UPDATE, RunPast
from .protocol import ProtocolError
from .stepped import stepped
from .waiting import in_flight

EVENT_BACKLOG = 20_000  # events kept for a client that cannot keep up; older ones are counted as dropped
AGENT_TICKS = 200  # swarm agents' tick reports kept between two updates (the newest)


@dataclass
class ServerBreakpoint:
    """One breakpoint set by the client: a node (before it starts, after a tick that ran it), an event
    type or a condition."""

    id: int
    kind: str
    node: str | None = None
    when: str = "after"
    event: str | None = None
    condition: Condition | None = None
    was_true: bool = False

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind}
        if self.kind == "node":
            out.update(node=self.node, when=self.when)
        elif self.kind == "event":
            out["event"] = self.event
        else:
            out["condition"] = self.condition.source
        return out

    @property
    def label(self) -> str:
        if self.kind == "node":
            return f"{self.when} {self.node}"
        return f"event {self.event}" if self.kind == "event" else f"when {self.condition.source}"


def describe_node(runner: ReactiveRunner, path: str) -> dict[str, Any]:
    """What a front end draws of one node: shape, status, namespace, ports, loop counter."""
    node = runner.nodes[path]
    out: dict[str, Any] = {"path": path, "name": node.name, "class": type(node).__name__,
                           "parent": path.rpartition("/")[0] or None,
                           "children": [runner.path_of(child) for child in node.children],
                           "status": node.status.value, "namespace": getattr(node, "namespace", None),
                           "counter": loop_counter(node, node.status), "ports": []}
    if isinstance(node, JianmuNodeMixin):
        for direction, declared, bound, resolve in (
                ("in", node.input_ports, node.input_bindings, node.resolve_input_port),
                ("out", node.output_ports, node.output_bindings, node.resolve_output_port)):
            out["ports"] += [[direction, port, resolve(port)] for port in dict.fromkeys([*declared, *bound])]
    error = getattr(node, "last_error", None)
    if error is not None:
        out["error"] = {"error": error.error, "traceback": error.traceback}
    return out


class DebugController:
    """Pause, step and breakpoints for one client; `post` queues what the server sends it."""

    def __init__(self, runner: ReactiveRunner, wakeup: Callable[[bool], None], *, hold_end: bool = False,
                 agent: Any = None):
        """`wakeup(urgent)`: there is something to send; urgent (a reply, a pause) goes out at once;
        `hold_end`: the client asked to find the run held at its end (the server holds it there);
        `agent`: the `Agent` whose `failure()` explains a failed run (None: the runner's tree read as one)."""
        self.runner = runner
        self.agent = agent
        self._wakeup = wakeup
        self.hold_end = hold_end
        self.breakpoints: dict[int, ServerBreakpoint] = {}
        self.paused: dict[str, Any] | None = None  # the stop the run is held at, if any
        self._next_id = 1
        self._resume = asyncio.Event()
        self._pause_requested = False
        self._stepping = False
        self._into = False  # stepping into: stop before the next node the traversal reaches
        self._attached = False
        self._detachers: list[Callable[[], Any]] = []
        self.outbox: deque[dict[str, Any]] = deque()
        self._dirty_state: set[tuple[str, str]] = set()
        self._events: deque[RuntimeEvent] = deque(maxlen=EVENT_BACKLOG)
        self._dropped = 0
        self._event_hit: ServerBreakpoint | None = None
        self._approvals_dirty = False
        self._sent_statuses: dict[str, str] = {}
        self._sent_counters: dict[str, str | None] = {}
        self._indexed: object = None
        self._report: dict[str, Any] | None = None
        self._branch: str | None = None
        self._in_tick = False
        self._sent_marks: list[list[Any]] = []
        self.past = RunPast(runner)
        self.children = SwarmChildren(runner, self._on_agent_tick)  # a swarm's agents, each on its own runner
        self._agent_hit: ServerBreakpoint | None = None
        self._agent_ticks: deque[dict[str, Any]] = deque(maxlen=AGENT_TICKS)
        self._agents_shape: tuple = ()
        self._agents_state: set[str] = set()  # agents whose state changes are watched

    # -- attaching -----------------------------------------------------------------
    def attach(self, *, paused: bool = False) -> dict[str, Any]:
        """Install the hooks and subscriptions; returns the full picture the client starts from."""
        runner = self.runner
        self._attached = True
        self._pause_requested = paused
        self._detachers = [runner.add_tick_hook(before=self._before_tick, after=self._after_tick),
                           runner.state_manager.subscribe(self._on_state_change),
                           runner.event_bus.subscribe(self._on_event), self.children.close]
        approvals = runner.context.approval_manager
        if approvals is not None:
            self._detachers.append(approvals.on_change(self._on_approval))
        return self.picture()

    def detach(self) -> None:
        """Forget the client: hooks removed, breakpoints cleared, a held run released."""
        self._attached = False
        for undo in self._detachers:
            undo()
        self._detachers = []
        self.breakpoints.clear()
        self._pause_requested = self._stepping = self._into = False
        self._sync_stop_before()
        self._resume.set()

    def picture(self) -> dict[str, Any]:
        """The whole run as the client first sees it (and again after `resync`), with the events it had
        published before (as many as the runner's event history keeps); updates follow from here."""
        self.outbox.clear()
        self._events.clear()
        run_id = self.runner.run_id
        earlier = [event for event in self.runner.event_bus.history if event.run_id == run_id] if run_id else []
        return {**self._picture(), "events": earlier}

    def _picture(self) -> dict[str, Any]:
        """The run as it is now; later updates carry only what changes after it."""
        runner = self.runner
        self._indexed, self._dirty_state, self._report = runner.nodes, set(), None
        self._sent_marks = self.past.head_marks(whole=True)
        tree = self._tree()
        self._sent_statuses = {node["path"]: node["status"] for node in tree}
        self._sent_counters = {node["path"]: node["counter"] for node in tree}
        self._branch = self.branch
        rows = self.past.rows()
        if len(rows) == ROWS_PER_UPDATE:  # a long run's other rows follow in updates
            self._wakeup(False)
        return {"run_id": runner.run_id, "tick": runner.tick_count, "status": runner.status.value,
                "finished": runner.finished, "failure": self.failure() if runner.finished else None,
                "paused": self.paused, "branch": self._branch,
                "recording": self.past.recording, "store": self.past.location, "checkpoints": rows,
                "schema": {**StateFacts.of(runner).describe(), "aliases": self.past.names.aliases},
                "tree": tree,
                "state": {**self.past.names.state(runner.state_manager.snapshot()), **self.children.snapshot()},
                "marks": self._sent_marks,
                "approvals": self._approvals(),
                "breakpoints": [bp.describe() for bp in self.breakpoints.values()]}

    @property
    def branch(self) -> str:
        checkpoints = self.runner.checkpoints
        return checkpoints.branch if checkpoints is not None else "main"

    # -- what changed --------------------------------------------------------------
    def _on_state_change(self, change: StateChange) -> None:
        namespace = change.namespace or ""
        self._dirty_state.update((namespace, key) for key in change.changes)
        self.past.wrote(change.namespace, change.changes, between=not self._in_tick)
        self._wakeup(False)

    def _on_event(self, event: RuntimeEvent) -> None:
        if len(self._events) == self._events.maxlen:
            self._dropped += 1
        self._events.append(event)
        if self._event_hit is None:
            for bp in self.breakpoints.values():
                if bp.kind == "event" and bp.event == event.type:
                    self._event_hit = bp
                    break
        self._wakeup(False)

    def _on_approval(self, request: Any) -> None:
        self._approvals_dirty = True
        self._wakeup(False)

    def _approvals(self) -> list[dict[str, Any]]:
        """The pending requests, each with its tool's `parameters` (JSON schema; null when not known here) so
        that a client can check corrected arguments before it sends them."""
        approvals = self.runner.context.approval_manager
        return [{**item.model_dump(mode="json"), "parameters": self._parameters(item)}
                for item in approvals.pending()] if approvals is not None else []

    def _parameters(self, request: Any) -> dict[str, Any] | None:
        try:
            tool = waiting_tool(self.runner, request)
        except ToolError:
            return None
        return tool.parameters() if tool is not None else None

    def post(self, message: dict[str, Any]) -> None:
        """Queue a message, after an update that brings the client up to this moment."""
        self.seal()
        self.outbox.append(message)
        self._wakeup(True)

    def seal(self) -> None:
        """Turn what changed since the last update into one `update` message (none if nothing did)."""
        update = self._take_update()
        if update is not None:
            self.outbox.append(update)

    def _take_update(self) -> dict[str, Any] | None:
        runner = self.runner
        update: dict[str, Any] = {}
        if runner.nodes is not self._indexed or self.children.shape != self._agents_shape:  # a subtree compiled,
            self._indexed = runner.nodes                                                      # an agent started
            update["tree"] = self._tree()
            self._sent_statuses = {node["path"]: node["status"] for node in update["tree"]}
            self._sent_counters = {node["path"]: node["counter"] for node in update["tree"]}
        statuses = {}
        for path, node in self._nodes():
            status = node.status.value
            old = self._sent_statuses.get(path)
            if old != status:
                statuses[path] = [old, status]
                self._sent_statuses[path] = status
            counter = loop_counter(node, node.status)
            if counter is not None and self._sent_counters.get(path) != counter:
                update.setdefault("counters", {})[path] = self._sent_counters[path] = counter
        if statuses:
            update["nodes"] = statuses
            errors = {path: self._describe(path)["error"] for path in statuses
                      if getattr(self._node_at(path), "last_error", None) is not None}
            if errors:
                update["errors"] = errors
        rows = self.past.new_rows()
        if self._dirty_state:
            sm, dirty, self._dirty_state = runner.state_manager, self._dirty_state, set()
            names = self.past.names
            for namespace, key in sorted({(ns, names.key(key) if not ns else key) for ns, key in dirty}):
                sm, ns = self._state_manager(namespace)
                if sm is not None and sm.contains(key, ns):
                    update.setdefault("state", []).append([namespace, key, sm.get(key, ns)])
                else:
                    update.setdefault("removed", []).append([namespace, key])
        if "state" in update or "removed" in update or rows or self._report is not None:
            marks = self.past.head_marks()
            if marks != self._sent_marks:
                update["marks"] = self._sent_marks = marks
        if self._events:
            update["events"] = list(self._events)
            self._events.clear()
        if self._dropped:
            update["dropped_events"], self._dropped = self._dropped, 0
        if self._approvals_dirty:
            self._approvals_dirty = False
            update["approvals"] = self._approvals()
        if self._report is not None:
            update["report"], self._report = self._report, None
        if self._agent_ticks:
            update["agent_ticks"] = list(self._agent_ticks)
            self._agent_ticks.clear()
        if rows:
            update["checkpoints"] = rows
            if len(rows) == ROWS_PER_UPDATE:  # more are waiting: another update follows
                self._wakeup(False)
        if not update and self._branch == self.branch:
            return None
        self._branch = self.branch
        update.update(type="update", run_id=runner.run_id, tick=runner.tick_count, status=runner.status.value,
                      branch=self._branch)
        return update

    def failure(self) -> dict[str, Any] | None:
        """Why the run failed (`node`, `error`, `reason`: `runtime.agent.Failure`), None unless it did."""
        agent = self.agent
        if agent is None:
            from ..agent import Agent  # here, not above: runtime.agent imports this package

            agent = self.agent = Agent(self.runner.root)
        failure = agent.failure(self.runner)
        return None if failure is None else {"node": failure.node, "error": failure.error, "reason": failure.reason}

    # -- a swarm's agents: their trees under the nodes that spawned them, their namespaces as `@agent` ----
    def _tree(self) -> list[dict[str, Any]]:
        """Every node description: the host's, then each agent's (paths `@agent/...`, its root a child
        of the host node that spawned it, `agent` naming it), as a local session shows them."""
        tree = [describe_node(self.runner, path) for path in self.runner.nodes]
        by_path = {node["path"]: node for node in tree}
        for agent_id, runner in self.children.runners().items():
            self._watch_state(agent_id, runner)
            for path in runner.nodes:
                node = self._describe(child_path(agent_id, path))
                if node["parent"] in by_path and "/" not in path:
                    by_path[node["parent"]]["children"].append(node["path"])
                tree.append(node)
        self._agents_shape = self.children.shape
        return tree

    def _describe(self, path: str) -> dict[str, Any]:
        split = split_child_path(path)
        if split is None:
            return describe_node(self.runner, path)
        agent_id, inner = split
        runner = self.children.runners()[agent_id]
        node = describe_node(runner, inner)
        parent = inner.rpartition("/")[0]
        node.update(path=path, agent=agent_id, children=[child_path(agent_id, child) for child in node["children"]],
                    parent=child_path(agent_id, parent) if parent else self.children.parent_of(agent_id))
        return node

    def _node_at(self, path: str) -> Any:
        found = self.children.resolve(path)
        return found[0].nodes[found[1]] if found is not None else self.runner.nodes.get(path)

    def _nodes(self):
        """(path, node) of the host's nodes and every agent's (`@agent/path`)."""
        yield from self.runner.nodes.items()
        for agent_id, runner in self.children.runners().items():
            for path, node in runner.nodes.items():
                yield child_path(agent_id, path), node

    def _watch_state(self, agent_id: str, runner: ReactiveRunner) -> None:
        """Send an agent's whole state once, then what changes in it (keys named as its snapshot names them)."""
        if agent_id in self._agents_state:
            return
        self._agents_state.add(agent_id)
        sm = runner.state_manager
        attrs = {info.alias: attr for attr, info in sm.schema.model_fields.items() if info.alias}

        def changed(change: StateChange) -> None:
            self._dirty_state.update((child_namespace(agent_id, change.namespace),
                                      key if change.namespace else attrs.get(key, key)) for key in change.changes)
            self.past.wrote(child_namespace(agent_id, change.namespace), change.changes, between=not self._in_tick)
            self._wakeup(False)

        self._detachers.append(sm.subscribe(changed))
        self._dirty_state.update((child_namespace(agent_id, ns or None), key)
                                 for ns, values in sm.snapshot().items() for key in values)

    def _state_manager(self, namespace: str) -> tuple[Any, str | None]:
        """The state manager holding a namespace as the client names it (`@agent.ns`: an agent's), and its
        namespace there; (None, None) for an agent no longer there."""
        if not namespace.startswith("@"):
            return self.runner.state_manager, namespace or None
        agent_id, _, inner = namespace[1:].partition(".")
        runner = self.children.runners().get(agent_id)
        return (runner.state_manager, inner or None) if runner is not None else (None, None)

    def _on_agent_tick(self, agent_id: str, report: TickReport) -> bool:
        """An agent ticked: its statuses go out. True holds the agent until the host moves again: while
        the client holds the host, as a local session does (a tick per host step at most), and when an
        after-breakpoint on one of its nodes hit while the host runs, which then stops before its next
        tick (woken for it)."""
        self._agent_ticks.append({"tick": report.tick, "status": report.status.value, "ticked": report.ticked,
                                  "changed": {path: [old.value, new.value] for path, (old, new) in report.changed.items()}})
        self._wakeup(False)
        if not self._attached or self._agent_hit is not None:
            return False
        if self.paused is not None:
            return True
        for bp in self.breakpoints.values():
            if bp.kind == "node" and bp.when == "after" and bp.node in report.changed:
                self._agent_hit = bp
                self.runner.signal()
                return True
        return False

    # -- holding the run -----------------------------------------------------------
    async def _before_tick(self, runner: ReactiveRunner, tick: int) -> None:
        if self._agent_hit is not None:
            bp, self._agent_hit = self._agent_hit, None
            await self.hold("breakpoint", f"breakpoint: {bp.label}", breakpoint=bp.id)
        elif self._pause_requested:
            self._pause_requested = False
            await self.hold("paused", f"paused before tick {tick}")
        self._in_tick = True

    async def _after_tick(self, runner: ReactiveRunner, report: TickReport) -> None:
        self._in_tick = False  # its checkpoint is saved: what is written from now on lands between ticks
        self._report = {"tick": report.tick, "status": report.status.value,
                        "duration_ms": round(report.duration_ms, 3),
                        "changed": {path: [old.value, new.value] for path, (old, new) in report.changed.items()},
                        "ticked": report.ticked, "state_keys": report.state_keys,
                        "waiting": [] if runner.can_tick_now else in_flight(runner.nodes)}
        self._wakeup(False)
        stop = self._stop_after(report)
        if runner.finished:
            self.post({"type": "finished", "status": runner.status.value, "tick": runner.tick_count,
                       "failure": self.failure()})
        elif stop is not None:
            kind, text, where = stop
            await self.hold(kind, text, **where)
        await asyncio.sleep(0)  # let the connection read and send between ticks of a busy tree

    def _stop_after(self, report: TickReport) -> tuple[str, str, dict[str, Any]] | None:
        """(kind, message, where) of the stop a completed tick makes, or None."""
        if self._event_hit is not None:
            bp, self._event_hit = self._event_hit, None
            return "breakpoint", f"breakpoint: {bp.label}", {"breakpoint": bp.id}
        for bp in self.breakpoints.values():
            if bp.kind == "node" and bp.when == "after" and bp.node in report.changed:
                return "breakpoint", f"breakpoint: {bp.label}", {"breakpoint": bp.id}
        conditions = [bp for bp in self.breakpoints.values() if bp.kind == "condition"]
        if conditions:
            snapshot = self._condition_scope()
            for bp in conditions:
                try:
                    now = bp.condition.evaluate(snapshot)
                except ConditionError as exc:
                    del self.breakpoints[bp.id]
                    return "error", f"{exc} (breakpoint {bp.id} removed)", {"breakpoint": bp.id}
                hit, bp.was_true = now and not bp.was_true, now
                if hit:
                    return "breakpoint", f"breakpoint: {bp.label}", {"breakpoint": bp.id}
        if self._stepping or self._into:
            self._stepping = self._into = False
            self._sync_stop_before()
            return "step", stepped(report), {}
        if self._pause_requested:
            self._pause_requested = False
            return "paused", f"paused after tick {report.tick}", {}
        return None

    def stop_at(self, boundary: NodeBoundary) -> tuple[str, str, dict[str, Any]] | None:
        """(kind, message, where) of the stop a tick held before a node makes: the client stepping
        into it or a before-breakpoint on it; None for a boundary nobody asks for any more."""
        where = {"node": boundary.path, "when": "before"}
        for bp in self.breakpoints.values():
            if bp.kind == "node" and bp.when == "before" and bp.node == boundary.path:
                return "breakpoint", f"breakpoint: {bp.label}", {**where, "breakpoint": bp.id}
        if self._into:
            self._into = False
            self._sync_stop_before()
            return "step", f"before {boundary.path} (tick {boundary.tick}, not run yet)", where
        return None

    def _condition_scope(self) -> dict[str, dict[str, Any]]:
        sm = self.runner.state_manager
        return {ns or "": sm.view(ns) for ns in sm.namespaces()}

    async def hold(self, kind: str, message: str, **where: Any) -> None:
        """Keep the run here until the client continues, steps, or goes away."""
        if not self._attached:
            return
        self.paused = {"kind": kind, "message": message, "tick": self.runner.tick_count, **where}
        self._resume.clear()
        self.post({"type": "paused", **self.paused})
        try:
            await self._resume.wait()
        finally:
            self.paused = None
            self.children.release()  # an agent held at a breakpoint carries on with the host
        if self._attached:
            self.post({"type": "resumed", "tick": self.runner.tick_count})

    # -- what the client asks ------------------------------------------------------
    def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        """Serve one request; returns the `ok` fields, or raises `ProtocolError`."""
        kind = message["type"]
        handler = getattr(self, "_do_" + kind, None)
        if handler is None:
            raise ProtocolError("unknown_type", f"{kind!r} is not allowed here")
        return handler(message) or {}

    def _do_ping(self, message):
        return {"tick": self.runner.tick_count}

    def _do_resync(self, message):
        return {"picture": self.picture()}

    def _do_pause(self, message):
        """Hold at the next tick boundary; a run waiting for a wake (async work, an input) is woken for it,
        so the pause holds now, as a local session's does, not when that work ends."""
        if self.paused is None:
            self._pause_requested = True
            self.runner.signal()
        return {"paused": self.paused is not None}

    def _do_continue(self, message):
        self._pause_requested = self._stepping = self._into = False
        self._sync_stop_before()
        self._resume.set()

    def _require_steppable(self, request: str) -> None:
        self._require_paused("stepping", f"{request} needs a paused run: pause first")
        if self.paused["kind"] == "finished":
            raise ProtocolError("bad_request", f"{request}: the run has finished (replay or fork it, "
                                               "or continue to let it return)")

    def _do_step(self, message):
        self._require_steppable("step")
        self._stepping, self._into = True, False
        self._sync_stop_before()
        self._resume.set()

    def _do_step_into(self, message):
        self._require_steppable("step_into")
        self._stepping, self._into = False, True
        self._sync_stop_before()
        self._resume.set()

    def _do_break(self, message):
        kind = message["kind"]
        bp = ServerBreakpoint(self._next_id, kind)
        if kind == "node":
            bp.node, bp.when = str(message.get("node")), message.get("when", "after")
            if self._node_at(bp.node) is None:
                raise ProtocolError("bad_request", f"no node at path {bp.node!r}")
            if bp.when not in ("before", "after"):
                raise ProtocolError("bad_request", f"a node breakpoint is 'before' or 'after' the node, not {bp.when!r}")
            if (refused := refused_moment(bp.node, bp.when)) is not None:
                raise ProtocolError("bad_request", refused)
        elif kind == "event":
            bp.event = str(message.get("event") or "").strip()
            if not bp.event:
                raise ProtocolError("bad_request", "an event breakpoint needs 'event', for example tool.call.failed")
        elif kind == "condition":
            try:
                bp.condition = Condition(str(message.get("condition") or ""))
                bp.was_true = bp.condition.evaluate(self._condition_scope())  # fires on the next change to true
            except ConditionError as exc:
                raise ProtocolError("bad_request", str(exc)) from None
        else:
            raise ProtocolError("bad_request", f"breakpoint kind is node, event or condition, not {kind!r}")
        self._next_id += 1
        self.breakpoints[bp.id] = bp
        self._sync_stop_before()
        return {"breakpoint": bp.describe()}

    def _do_unbreak(self, message):
        if self.breakpoints.pop(message["breakpoint"], None) is None:
            raise ProtocolError("bad_request", f"no breakpoint {message['breakpoint']!r}")
        self._sync_stop_before()

    def _sync_stop_before(self) -> None:
        """The runner's node boundaries: the client's before-breakpoints, and every node while stepping into."""
        paths = {bp.node for bp in self.breakpoints.values() if bp.kind == "node" and bp.when == "before"}
        self.runner.stop_before = paths | set(self.runner.nodes) if self._into else paths

    def _require_paused(self, what: str, message: str | None = None) -> None:
        if self.paused is None:
            raise ProtocolError("not_paused", message or f"pause the run before {what}")

    def _do_edit_state(self, message):
        self._require_paused("editing state")
        key, value = message["key"], message["value"]
        sm = self.runner.state_manager
        try:
            namespace = check_state_key(StateFacts.of(self.runner), message.get("namespace"), key)
            old = sm.get(key, namespace)
            sm.load({key: value}, namespace, signal=True)
        except (EditRefused, StateValidationError, ValueError) as exc:
            raise ProtocolError("bad_request", str(exc)) from None
        self.runner.event_bus.publish(EventType.STATE_EDITED, {"namespace": namespace, "key": key,
                                                               "old": old, "new": value})

    def _do_edit_binding(self, message):
        self._require_paused("rebinding a port")
        path, direction, port = str(message["node"]), message["direction"], message["port"]
        try:
            node, key = check_binding(self.runner, path, direction, port, message["key"])
        except EditRefused as exc:
            raise ProtocolError("bad_request", str(exc)) from None
        old = (node.resolve_input_port if direction == "in" else node.resolve_output_port)(port)
        node.bind(**({"inputs": {port: key}} if direction == "in" else {"outputs": {port: key}}))
        self.runner.event_bus.publish(EventType.BINDING_CHANGED,
                                      {"direction": direction, "port": port, "old": old, "new": key}, node=path)
        return {"node": describe_node(self.runner, path)}

    def _approval_manager(self):
        approvals = self.runner.context.approval_manager
        if approvals is None:
            raise ProtocolError("bad_request", "this agent has no approval manager")
        return approvals

    def _do_approve(self, message):
        """Approve as asked, or with corrected `arguments` checked against the tool's schema first."""
        approvals, arguments = self._approval_manager(), message.get("arguments")
        try:
            if arguments is not None:
                check_tool_arguments(self.runner, approvals.get(str(message["approval"])), arguments)
            approvals.approve(str(message["approval"]), message.get("reason"), arguments=arguments)
        except (ApprovalError, EditRefused) as exc:
            raise ProtocolError("bad_request", str(exc)) from None

    def _do_deny(self, message):
        try:
            self._approval_manager().deny(str(message["approval"]), message.get("reason") or "denied by the debugger")
        except ApprovalError as exc:
            raise ProtocolError("bad_request", str(exc)) from None

    # -- the past: checkpoints, replay, fork -----------------------------------------
    def _do_checkpoint(self, message):
        return self.past.describe(message["checkpoint"])

    def _do_replay(self, message):
        return self._restore(message["checkpoint"], replay=True, edits={})

    def _do_fork(self, message):
        edits, bindings = message.get("state") or {}, message.get("bindings") or {}
        if not isinstance(edits, dict):
            raise ProtocolError("bad_request", "fork: 'state' maps qualified keys (key or ns.key) to values")
        if not isinstance(bindings, dict) or not all(isinstance(change, dict) for change in bindings.values()):
            raise ProtocolError("bad_request", "fork: 'bindings' maps node paths to {inputs: {port: key}, outputs: ...}")
        self._check_fork_edits(edits, bindings)
        return self._restore(message["checkpoint"], replay=False, edits=edits, bindings=bindings)

    def _check_fork_edits(self, edits: dict[str, Any], bindings: dict[str, Any]) -> None:
        """A fork's edits pass the checks live edits pass (`key` global or `ns.key`), before anything changes."""
        facts = StateFacts.of(self.runner)
        by_length = sorted(facts.namespaces, key=len, reverse=True)
        try:
            for qualified in edits:
                ns = next((n for n in by_length if str(qualified).startswith(n + ".")), None)
                check_state_key(facts, ns, qualified[len(ns) + 1:] if ns else qualified)
            for path, change in bindings.items():
                for field, direction in (("inputs", "in"), ("outputs", "out")):
                    for port, key in (change.get(field) or {}).items():
                        check_binding(self.runner, str(path), direction, port, key)
        except EditRefused as exc:
            raise ProtocolError("bad_request", f"fork: {exc}") from None

    def _restore(self, checkpoint_id: Any, *, replay: bool, edits: dict[str, Any],
                 bindings: dict[str, Any] | None = None) -> dict[str, Any]:
        """Restore a checkpoint onto a new branch, serving the recorded model and tool I/O (strictly for
        a replay); the run stays held there. The answer carries the branch and the new picture."""
        self._require_paused("replaying or forking")
        info = self.past.info(checkpoint_id)
        self.seal()  # what happened so far belongs to the branch it happened on
        runner = self.runner
        replayer = IOReplayer(runner.checkpoints.store, info.run_id, strict=replay, source_branch=info.branch)
        try:
            if replay:
                runner.checkpoints.fork(info.id, prefix="replay")
            else:
                runner.fork(info.id, state_updates=edits, binding_changes=bindings)
        except (CheckpointError, StoreError, StateValidationError, ValueError) as exc:
            raise ProtocolError("bad_request", str(exc)) from None
        replayer.attach(runner.checkpoints)
        runner.context.io_recorder = replayer
        self._stepping = self._into = self._pause_requested = False
        self._sync_stop_before()
        count = len(edits) + sum(len(ports) for change in (bindings or {}).values() for ports in change.values())
        how = f"replaying checkpoint {info.id} on {self.branch}: recorded I/O, strict" if replay else \
            f"forked {self.branch} from checkpoint {info.id}" + (f" with {count} edit{'s' if count > 1 else ''}"
                                                               if count else "")
        self.paused = {"kind": "paused", "message": how, "tick": runner.tick_count}
        return {"branch": self.branch, "message": how, "picture": self._picture()}

    def _do_model_io(self, message):
        """The recorded request and response of one model call (what the studio's model-call screen shows)."""
        store = self.past._store()
        try:
            where = int(message["round"]), int(message.get("index") or 0)
        except (TypeError, ValueError):
            raise ProtocolError("bad_request", f"model_io: round and index are numbers, not {message['round']!r}") from None
        run_id, node, branches = str(message["run_id"]), str(message["node"]), message.get("branches") or []
        record = None
        for branch in branches:  # the call's own branch first, then those it forked from
            found = store.get_io(run_id, "model", node, *where, str(branch))
            if found is not None and found.branch == branch:
                record = found
                break
        if record is None and not branches:
            record = store.get_io(run_id, "model", node, *where)
        if record is None:
            return {"record": None}
        messages = record.request.get("messages")
        if isinstance(messages, list) and len(messages) == 3 and messages[0] == "l":
            messages = list(store.read_list(messages[1], messages[2]))
        return {"record": {"messages": messages, "config": record.request.get("config"),
                           "response": record.response, "error": record.error}}


__all__ = ["DebugController", "ServerBreakpoint", "describe_node"]
