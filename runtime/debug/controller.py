"""`DebugController`: the debug protocol (docs/protocol.md) spoken for one attached client.

A thin adapter: the debugging itself (stepping, breakpoints, edits, approvals, replay and
fork, holding the run) is the runner's `runtime.debug.Debugger`, which a local studio
drives in its own process. This turns the client's requests into the debugger's calls, its
refusals into protocol errors, and what happens into messages: what changed (state keys
written, node statuses, events, checkpoint rows) is accumulated and sealed into one
`update` only when the connection is free to send, so a slow client gets coalesced diffs
instead of slowing the agent down; where the run stops is a `paused`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from ..engine.behaviour import JianmuNodeMixin
from ..engine.events import TICK_TELEMETRY, EventBatch
from ..engine.runner import ReactiveRunner, TickReport
from ..node.composites import loop_counter
from ..state import StateChange
from ..tools.base import ToolError
from .breakpoints import Breakpoint, BreakpointError
from .children import child_namespace, child_path, split_child_path
from .debugger import Debugger
from .edits import EditRefused, NotPaused, StateFacts, waiting_tool
from .past import ROWS_PER_UPDATE, RunPast
from .protocol import ProtocolError, events_json, record_json, returns_json, whole_number
from .served_whatifs import WhatIfRequests
from .ticks import TickBacklog
from .waiting import in_flight
from .whatif import branch_record

EVENT_BACKLOG = 20_000  # events kept between two updates (the newest); older ones are counted as dropped: a step
# of a 10,000-node tree changing everywhere arrives whole; encoding a full one holds the run ~150 ms at load 6
AGENT_TICKS = 200  # swarm agents' tick reports kept between two updates (the newest)


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


class DebugController(WhatIfRequests):
    """One client's view of the debugger: `post` queues what the server sends it."""

    def __init__(self, debugger: Debugger, wakeup: Callable[[bool], None]):
        """`wakeup(urgent)`: there is something to send; urgent (a reply, a stop) goes out at once."""
        self.debugger = debugger
        self.runner = debugger.runner
        self._wakeup = wakeup
        self._due = False  # the server was told of changes not sealed into an update yet
        self._detachers: list[Callable[[], Any]] = []
        self.outbox: deque[dict[str, Any]] = deque()
        self._dirty_state: set[tuple[str, str]] = set()
        self._events: EventBatch  # the events (but the ticks'), kept by the bus till an update is sealed (`attach`)
        self._ticks: TickBacklog  # the ticks' telemetry (their events, rebuilt by the client) and the last report
        self._approvals_dirty = False
        self._breakpoints_dirty = False
        self._sent_statuses: dict[str, str] = {}
        self._sent_counters: dict[str, str | None] = {}
        self._indexed: object = None
        self._branch: str | None = None
        self._sent_marks: list[list[Any]] = []
        self._sent_rebound: list[str] = []
        self.past = RunPast(self.runner)
        self._agent_ticks: deque[dict[str, Any]] = deque(maxlen=AGENT_TICKS)
        self._agents_shape: tuple = ()
        self._agents_state: set[str] = set()  # agents whose state changes are watched

    # -- attaching -----------------------------------------------------------------
    def attach(self, *, paused: bool = False, hold_end: bool = False) -> dict[str, Any]:
        """Take over the run (`Debugger.attach`) and watch it; returns the full picture the client starts from."""
        runner = self.runner
        self._events = runner.event_bus.batch(self._on_events, EVENT_BACKLOG, skip=TICK_TELEMETRY)
        self._ticks = TickBacklog(EVENT_BACKLOG, self._changed, beside=self._events)
        self._detachers = [runner.number_telemetry(self._ticks.add),
                           runner.state_manager.subscribe(self._on_state_change), self._events.close,
                           self.debugger.add_listener(self._from_debugger, ticks=False)]
        if runner.checkpoints is not None:  # a recording run's rows, once each tick is saved
            self._detachers.append(runner.add_tick_hook(after=self._saved))
        self.debugger.attach(paused=paused, hold_end=hold_end)
        return self.picture()

    def detach(self) -> None:
        """Forget the client: its breakpoints cleared, a held run released and let go at full speed."""
        for undo in self._detachers:
            undo()
        self._detachers = []
        debugger = self.debugger
        for bp in list(debugger.breakpoints):
            debugger.remove_breakpoint(bp)
        debugger.detach()

    def picture(self) -> dict[str, Any]:
        """The whole run as the client first sees it (and again after `resync`), with the events it had
        published before (as many as the runner's event history keeps); updates follow from here."""
        self.outbox.clear()
        self._events.take()
        self._ticks.clear()
        run_id = self.runner.run_id
        earlier = [event for event in self.runner.event_bus.history if event.run_id == run_id] if run_id else []
        return {**self._picture(), "events": events_json(earlier)}

    def _picture(self) -> dict[str, Any]:
        """The run as it is now; later updates carry only what changes after it."""
        runner, debugger = self.runner, self.debugger
        self._indexed, self._dirty_state = runner.nodes, set()
        self._ticks.take_last()
        self._breakpoints_dirty = False
        self._sent_marks = self.past.head_marks(whole=True)
        self._sent_rebound = self._rebound()
        tree = self._tree()
        self._sent_statuses = {node["path"]: node["status"] for node in tree}
        self._sent_counters = {node["path"]: node["counter"] for node in tree}
        self._branch = self.branch
        rows = self.past.rows()
        if len(rows) == ROWS_PER_UPDATE:  # a long run's other rows follow in updates
            self._wakeup(False)
        held = debugger.held
        return {"run_id": runner.run_id, "tick": runner.tick_count, "status": runner.status.value,
                "finished": runner.finished, "failure": self.failure() if runner.finished else None,
                "paused": self._paused(held) if held is not None else None, "branch": self._branch,
                "recording": self.past.recording, "store": self.past.location, "checkpoints": rows,
                "schema": {**StateFacts.of(runner).describe(), "aliases": self.past.names.aliases},
                "tree": tree,
                "state": {**self.past.names.state(runner.state_manager.snapshot()), **self._agents_snapshot()},
                "marks": self._sent_marks,
                "approvals": self._approvals(), "rebound": self._sent_rebound,
                "breakpoints": [bp.describe() for bp in debugger.breakpoints]}

    def _rebound(self) -> list[str]:
        """The nodes whose bindings differ from the tree file's, as the checkpoints record them."""
        checkpoints = self.runner.checkpoints
        return sorted(checkpoints.rebound()) if checkpoints is not None else []

    def _agents_snapshot(self) -> dict[str, dict[str, Any]]:
        children = self.debugger.children
        return children.snapshot() if children is not None else {}

    @property
    def branch(self) -> str:
        return self.debugger.branch

    # -- what the debugger says ----------------------------------------------------------
    def _from_debugger(self, kind: str, data: Any) -> None:
        if kind in ("held", "stopped"):
            self.post({"type": "paused", **self._paused(data)})
        elif kind == "resumed":
            self.post({"type": "resumed", "tick": data})
        elif kind == "finished":
            self.post({"type": "finished", "status": self.runner.status.value, "tick": self.runner.tick_count,
                       "failure": self.failure()})
        elif kind == "subtick":
            self._on_agent_tick(data)
        elif kind == "approvals":
            self._approvals_dirty = True
            self._wakeup(False)
        elif kind == "breakpoints":
            self._breakpoints_dirty = True
            self._wakeup(False)

    def _paused(self, stop: Any) -> dict[str, Any]:
        """A stop as `paused` carries it; inside a tick, with what the nodes returned in it so far (the
        nodes not in it are not reached yet), so the client draws the tick so far as a local studio does."""
        returns = self.runner.held_returns
        return {**stop.describe(), "returns": returns_json(returns)} if returns is not None else stop.describe()

    def _on_agent_tick(self, report: TickReport) -> None:
        """A swarm agent ticked (its paths `@agent/...`): its statuses go out with the next update."""
        self._agent_ticks.append({"tick": report.tick, "status": report.status.value, "ticked": report.ticked,
                                  "changed": {path: [old.value, new.value] for path, (old, new) in report.changed.items()}})
        self._wakeup(False)

    # -- what changed --------------------------------------------------------------
    def _on_state_change(self, change: StateChange) -> None:
        namespace, dirty = change.namespace or "", self._dirty_state
        for key in change.changes:
            dirty.add((namespace, key))
        if self.runner.checkpoints is not None and self.past.recording:
            self.past.wrote(change.namespace, change.changes, between=not self.runner.in_tick)
        if not self._due:
            self._changed()

    def _on_events(self) -> None:
        """The first event since the last update (the bus keeps the others without telling)."""
        if not self._due:
            self._changed()

    def _changed(self) -> None:
        """Something for the next update: the server is told once between two updates (a tick makes
        several changes: the callers test `_due` first)."""
        self._due = True
        self._wakeup(False)

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
        self._due = False
        update: dict[str, Any] = {}
        if runner.nodes is not self._indexed or self._agents_now() != self._agents_shape:  # a subtree compiled,
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
        report = self._ticks.take_last()
        if self._dirty_state:
            sm, dirty, self._dirty_state = runner.state_manager, self._dirty_state, set()
            names = self.past.names
            for namespace, key in sorted({(ns, names.key(key) if not ns else key) for ns, key in dirty}):
                sm, ns = self._state_manager(namespace)
                if sm is not None and sm.contains(key, ns):
                    update.setdefault("state", []).append([namespace, key, sm.get(key, ns)])
                else:
                    update.setdefault("removed", []).append([namespace, key])
        if "state" in update or "removed" in update or rows or report is not None:
            marks = self.past.head_marks()
            if marks != self._sent_marks:
                update["marks"] = self._sent_marks = marks
        if events := self._events.take():
            update["events"] = events_json(events)
        if self._ticks:
            update["ticks"] = self._ticks.take()
        if self._events.dropped or self._ticks.dropped:
            update["dropped_events"] = self._events.dropped + self._ticks.dropped
            self._events.dropped = self._ticks.dropped = 0
        if self._approvals_dirty:
            self._approvals_dirty = False
            update["approvals"] = self._approvals()
        if report is not None:
            update["report"] = self._report_json(report)
        if self._agent_ticks:
            update["agent_ticks"] = list(self._agent_ticks)
            self._agent_ticks.clear()
        if self._breakpoints_dirty:
            self._breakpoints_dirty = False
            update["breakpoints"] = [bp.describe() for bp in self.debugger.breakpoints]
        if (rebound := self._rebound()) != self._sent_rebound:
            update["rebound"] = self._sent_rebound = rebound
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
        failure = self.debugger.failure()
        return None if failure is None else {"node": failure.node, "error": failure.error, "reason": failure.reason}

    # -- a swarm's agents: their trees under the nodes that spawned them, their namespaces as `@agent` ----
    def _tree(self) -> list[dict[str, Any]]:
        """Every node description: the host's, then each agent's (paths `@agent/...`, its root a child
        of the host node that spawned it, `agent` naming it), as a local session shows them."""
        tree = [describe_node(self.runner, path) for path in self.runner.nodes]
        by_path = {node["path"]: node for node in tree}
        for agent_id, runner in self._agents().items():
            self._watch_state(agent_id, runner)
            for path in runner.nodes:
                node = self._describe(child_path(agent_id, path))
                if node["parent"] in by_path and "/" not in path:
                    by_path[node["parent"]]["children"].append(node["path"])
                tree.append(node)
        self._agents_shape = self._agents_now()
        return tree

    def _describe(self, path: str) -> dict[str, Any]:
        split = split_child_path(path)
        if split is None:
            return describe_node(self.runner, path)
        agent_id, inner = split
        runner = self._agents()[agent_id]
        node = describe_node(runner, inner)
        parent = inner.rpartition("/")[0]
        node.update(path=path, agent=agent_id, children=[child_path(agent_id, child) for child in node["children"]],
                    parent=child_path(agent_id, parent) if parent else self.debugger.children.parent_of(agent_id))
        return node

    def _node_at(self, path: str) -> Any:
        try:
            return self.debugger.node_at(path)
        except EditRefused:
            return None

    def _agents(self) -> dict[str, ReactiveRunner]:
        children = self.debugger.children
        return children.runners() if children is not None else {}

    def _agents_now(self) -> tuple:
        children = self.debugger.children
        return children.shape if children is not None else ()

    def _nodes(self):
        """(path, node) of the host's nodes and every agent's (`@agent/path`)."""
        yield from self.runner.nodes.items()
        for agent_id, runner in self._agents().items():
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
            self.past.wrote(child_namespace(agent_id, change.namespace), change.changes, between=not self.runner.in_tick)
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
        runner = self._agents().get(agent_id)
        return (runner.state_manager, inner or None) if runner is not None else (None, None)

    # -- the ticks, for the report and the marks -------------------------------------------
    def _saved(self, runner: ReactiveRunner, report: TickReport) -> None:
        """A recording run's tick saved: its row's summary (`RunPast.ticked`), and its marks, for the
        next update (an asyncio store lets an update go out between the tick's end and its save)."""
        self.past.ticked(report)
        if not self._due:
            self._changed()

    def _report_json(self, report: TickReport) -> dict[str, Any]:
        """The last tick's report, with what the run now waits for (nothing when it can tick at once)."""
        runner = self.runner
        waiting = [] if runner.can_tick_now else in_flight(runner.nodes)
        return {"tick": report.tick, "status": report.status.value, "duration_ms": round(report.duration_ms, 3),
                "changed": {path: [old.value, new.value] for path, (old, new) in report.changed.items()},
                "ticked": report.ticked, **record_json(report), "state_keys": report.state_keys, "waiting": waiting}

    # -- what the client asks ------------------------------------------------------
    def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        """Serve one request; returns the `ok` fields, or raises `ProtocolError`."""
        kind = message["type"]
        handler = getattr(self, "_do_" + kind, None)
        if handler is None:
            raise ProtocolError("unknown_type", f"{kind!r} is not allowed here")
        try:
            return handler(message) or {}
        except NotPaused as exc:
            raise ProtocolError("not_paused", str(exc)) from None
        except (EditRefused, BreakpointError) as exc:  # the debugger's refusals, one line each
            raise ProtocolError("bad_request", str(exc)) from None

    def _do_ping(self, message):
        return {"tick": self.runner.tick_count}

    def _do_resync(self, message):
        return {"picture": self.picture()}

    def _do_pause(self, message):
        """Hold at the next tick boundary; a run waiting for a wake (async work, an input) holds at once,
        as a local session's does, not when that work ends."""
        return {"paused": self.debugger.request_pause()}

    def _do_continue(self, message):
        self.debugger.command("continue")

    def _require_held(self, request: str) -> None:
        if self.debugger.held is None:
            raise ProtocolError("not_paused", f"{request} needs a paused run: pause first")

    def _move(self, request: str) -> None:
        """A step while it waits for one (held, or suspended: the stop then says so)."""
        if not self.debugger.commanded:
            raise ProtocolError("not_paused", f"{request} needs a paused run: pause first")
        if self.runner.finished:
            raise ProtocolError("bad_request", f"{request}: the run has finished (replay or fork it, "
                                               "or continue to let it return)")
        self.debugger.command(request)

    def _do_step(self, message):
        self._move("step")

    def _do_step_into(self, message):
        self._move("step_into")

    def _do_break(self, message):
        bp = self.debugger.add_breakpoint(Breakpoint.from_json(message))
        return {"breakpoint": bp.describe()}

    def _do_unbreak(self, message):
        self.debugger.remove_breakpoint(self.debugger.breakpoint(message["breakpoint"]))

    def _do_set_breakpoint(self, message):
        bp = self.debugger.breakpoint(message["breakpoint"])
        enabled = message.get("enabled")
        if enabled is not None and not isinstance(enabled, bool):
            raise ProtocolError("bad_request", f"set_breakpoint: 'enabled' is true or false, not {enabled!r:.40}")
        self.debugger.set_breakpoint(bp, enabled=enabled, on=message.get("when"))
        return {"breakpoint": bp.describe()}

    def _do_edit_state(self, message):
        self.debugger.edit_state(message.get("namespace"), message["key"], message["value"])

    def _do_edit_binding(self, message):
        path = str(message["node"])
        self.debugger.edit_binding(path, message["direction"], message["port"], message["key"])
        return {"node": self._describe(path)}

    def _do_approve(self, message):
        """Approve as asked, or with corrected `arguments` checked against the tool's schema first."""
        self.debugger.approve(str(message["approval"]), message.get("arguments"), message.get("reason"))

    def _do_deny(self, message):
        self.debugger.deny(str(message["approval"]), message.get("reason") or "denied by the debugger")

    def _approvals(self) -> list[dict[str, Any]]:
        """The pending requests, each with its tool's `parameters` (JSON schema; null when not known here) so
        that a client can check corrected arguments before it sends them."""
        return [{**item.model_dump(mode="json"), "parameters": self._parameters(item)}
                for item in self.debugger.pending_approvals()]

    def _parameters(self, request: Any) -> dict[str, Any] | None:
        try:
            tool = waiting_tool(self.runner, request)
        except ToolError:
            return None
        return tool.parameters() if tool is not None else None

    # -- the past: checkpoints, replay, fork -----------------------------------------
    def _do_checkpoint(self, message):
        return self.past.describe(message["checkpoint"])

    def _do_replay(self, message):
        return self._restore(message, self.debugger.replay)

    def _do_fork(self, message):
        state, bindings = message.get("state") or {}, message.get("bindings") or {}
        if not isinstance(state, dict):
            raise ProtocolError("bad_request", "fork: 'state' maps qualified keys (key or ns.key) to values")
        if not isinstance(bindings, dict) or not all(isinstance(change, dict) for change in bindings.values()):
            raise ProtocolError("bad_request", "fork: 'bindings' maps node paths to {inputs: {port: key}, outputs: ...}")
        return self._restore(message, lambda info: self.debugger.fork(info, state, bindings))

    def _restore(self, message: dict[str, Any], restore: Callable[[Any], str]) -> dict[str, Any]:
        """Restore a checkpoint onto a new branch (the debugger's replay or fork) while the run is held;
        the run stays held there. The answer carries the branch and the new picture."""
        self._require_held("replaying or forking")
        info = self.past.info(message["checkpoint"])
        self.seal()  # what happened so far belongs to the branch it happened on
        how = restore(info)
        return {"branch": self.branch, "message": how, "picture": self._picture()}

    def _do_model_io(self, message):
        """The recorded request and response of one model call (what the studio's model-call screen shows)."""
        store = self.past.store()
        where = message["round"], message.get("index", 0)
        if not all(map(whole_number, where)):
            raise ProtocolError("bad_request", f"model_io: round and index are whole numbers, not {where!r:.60}")
        run_id, node, branches = str(message["run_id"]), str(message["node"]), message.get("branches") or []
        record = branch_record(store, run_id, "model", node, *where, [str(branch) for branch in branches])
        if record is None and not branches:
            record = store.get_io(run_id, "model", node, *where)
        if record is None:
            return {"record": None}
        messages = record.request.get("messages")
        if isinstance(messages, list) and len(messages) == 3 and messages[0] == "l":
            messages = list(store.read_list(messages[1], messages[2]))
        return {"record": {"messages": messages, "config": record.request.get("config"),
                           "response": record.response, "error": record.error}}


__all__ = ["DebugController", "describe_node"]
