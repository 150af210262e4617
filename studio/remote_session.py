"""`RemoteSession`: the session interface over the debug protocol, for a run in another process.

The TUI drives it exactly like a local `DebugSession` (same views, same intents, same
listener kinds) and never knows the difference. It keeps a mirror of the run built from
the server's `welcome` and its `update` diffs (`docs/protocol.md`); reads come from the
mirror, intents become requests. Intents the TUI calls synchronously (breakpoints, edits,
approvals, pause) are checked here as far as the mirror allows and sent in order; a
refusal from the server shows in the status line. What only a local session can do
(restart, the checkpoint timeline, saving bindings beside the tree file) is refused with
a reason.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from py_trees.common import Status

from runtime.debug import DebugClient, DebugError
from runtime.engine.events import RuntimeEvent
from runtime.engine.runner import TickReport
from runtime.guard.approval import ApprovalRequest

from .breakpoints import Breakpoint, BreakpointError, Condition
from .session import EVENT_BUFFER, EditError, NodeDetail, NodeView, PortView, RunState, StopReason

Listener = Callable[[str, Any], None]


@dataclass
class Attached:
    """What the title bar shows in place of a tree file: where the run is."""

    path: str


@dataclass
class _Mirror:
    """The run as the server described it: the welcome picture with every update applied."""

    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    state: dict[str, dict[str, Any]] = field(default_factory=dict)
    approvals: list[dict[str, Any]] = field(default_factory=list)
    history: dict[str, deque] = field(default_factory=dict)
    run_id: str | None = None
    tick: int = 0
    status: str = "INVALID"


class RemoteSession:
    def __init__(self, client: DebugClient, address: str):
        self.client = client
        self.loaded = Attached(f"attached to ws://{address}")
        self.events: deque[RuntimeEvent] = deque(maxlen=EVENT_BUFFER)
        self.breakpoints: list[Breakpoint] = []
        self.last_report: TickReport | None = None
        self.last_stop: StopReason | None = None
        self.message = f"attached to {address}"
        self.run_state = RunState.READY
        self._listeners: list[Listener] = []
        self._mirror = _Mirror()
        self._paused: dict[str, Any] | None = None
        self._finished = False
        self._gone = False
        self._continuing = False
        self._stopped = asyncio.Event()
        self._server_ids: dict[int, asyncio.Task] = {}  # id(bp) -> the task that set it (its result: server id)
        self._tasks: set[asyncio.Task] = set()
        self._apply_picture(client.welcome)
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, address: str, token: str, *, heartbeat: float = 10.0) -> RemoteSession:
        """Attach to a debug server; raises `DebugError` (refused) or `OSError` (nobody there)."""
        return cls(await DebugClient.connect(address, token, heartbeat=heartbeat, client="jianmu-studio"), address)

    async def close(self) -> None:
        await self.client.close()
        await asyncio.gather(self._reader, return_exceptions=True)

    # -- listeners -----------------------------------------------------------------
    def add_listener(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _notify(self, kind: str, data: Any = None) -> None:
        for listener in tuple(self._listeners):
            listener(kind, data)

    def _say(self, message: str) -> None:
        self.message = message
        self._notify("changed")

    # -- the mirror ------------------------------------------------------------------
    def _apply_picture(self, picture: dict[str, Any]) -> None:
        mirror = self._mirror
        mirror.nodes = {node["path"]: node for node in picture["tree"]}
        mirror.state = {ns: dict(values) for ns, values in picture["state"].items()}
        mirror.approvals = list(picture.get("approvals", ()))
        mirror.run_id, mirror.tick, mirror.status = picture["run_id"], picture["tick"], picture["status"]
        self._paused, self._finished = picture.get("paused"), picture.get("finished", False)
        self._settle()

    async def _read(self) -> None:
        while (message := await self.client.next_message()) is not None:
            try:
                self._apply(message)
            except (KeyError, TypeError, ValueError) as exc:  # a server speaking something else: say so, go on
                self._say(f"debug server sent a message this studio cannot read ({type(exc).__name__}: {exc})")
        self._gone = True
        self._stop(StopReason("finished", self.message if self._finished else "the debug connection was lost"))

    def _apply(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "update":
            self._apply_update(message)
        elif kind == "paused":
            self._paused, self._continuing = message, False
            self._stop(StopReason("breakpoint" if message["kind"] == "breakpoint" else message["kind"],
                                  message["message"]))
        elif kind == "resumed":
            self._paused = None
            self._settle()
        elif kind == "finished":
            self._finished = True
            self._stop(StopReason("finished", f"finished: {message['status']}"))
        elif kind == "bye":
            self._finished = True
            self._stop(StopReason("finished", f"the run ended: {message['status']} (the server closed)"))
        elif kind == "error":
            self._say(f"debug server: {message['message']}")

    def _apply_update(self, update: dict[str, Any]) -> None:
        mirror = self._mirror
        if "tree" in update:
            mirror.nodes = {node["path"]: node for node in update["tree"]}
        changed: dict[str, tuple[Status, Status]] = {}
        for path, (old, new) in update.get("nodes", {}).items():
            if path in mirror.nodes:
                mirror.nodes[path]["status"] = new
            changed[path] = (Status(old or "INVALID"), Status(new))
            mirror.history.setdefault(path, deque(maxlen=200)).append((update["tick"], old or "INVALID", new))
        for path, counter in update.get("counters", {}).items():
            if path in mirror.nodes:
                mirror.nodes[path]["counter"] = counter
        for path, error in update.get("errors", {}).items():
            if path in mirror.nodes:
                mirror.nodes[path]["error"] = error
        state_changes: dict[str, tuple[Any, Any]] = {}
        for namespace, key, value in update.get("state", ()):
            values = mirror.state.setdefault(namespace, {})
            state_changes[f"{namespace}.{key}" if namespace else key] = (values.get(key), value)
            values[key] = value
        for namespace, key in update.get("removed", ()):
            mirror.state.get(namespace, {}).pop(key, None)
        if "approvals" in update:
            mirror.approvals = update["approvals"]
        mirror.run_id, mirror.tick, mirror.status = update["run_id"], update["tick"], update["status"]
        for data in update.get("events", ()):
            event = RuntimeEvent.validate(data)
            self.events.append(event)
            self._notify("event", event)
        if "report" in update or changed or state_changes:
            report = update.get("report") or {}
            self.last_report = TickReport(update["tick"], Status(update["status"]), changed=changed,
                                          state_changes=state_changes, duration_ms=report.get("duration_ms", 0.0))
            self._notify("tick", self.last_report)
        if self.suspended and self._continuing:
            self._stop(StopReason("suspended", self._suspension_message()))
        else:
            self._settle()

    def _stop(self, reason: StopReason) -> None:
        self.last_stop = reason
        self._continuing = False
        self.message = reason.message
        self._settle()
        self._stopped.set()

    def _settle(self) -> None:
        if self._finished or self._gone:
            state = RunState.FINISHED
        elif self.suspended:
            state = RunState.SUSPENDED
        elif self._paused is not None:
            state = RunState.READY if self._mirror.tick == 0 else RunState.PAUSED
        else:
            state = RunState.RUNNING
        self.run_state = state
        self._notify("changed")

    @property
    def suspended(self) -> bool:
        return self._mirror.status == "RUNNING" and bool(self._mirror.approvals)

    def _suspension_message(self) -> str:
        kinds = ", ".join(f"approval of {item['tool']} at {item.get('node')}" for item in self._mirror.approvals)
        return f"suspended: waiting for {kinds}"

    # -- what the views read -------------------------------------------------------
    @property
    def tick(self) -> int:
        return self._mirror.tick

    @property
    def root_status(self) -> Status:
        return Status(self._mirror.status)

    @property
    def run_id(self) -> str | None:
        return self._mirror.run_id

    @property
    def tokens(self) -> int:
        total = 0
        for values in self._mirror.state.values():
            usage = values.get("llm.usage") or {}
            total += int(usage.get("total_tokens", 0)) if isinstance(usage, dict) else 0
        return total

    def waiting_on(self) -> list[str]:
        return self.running_nodes() if self.run_state == RunState.RUNNING else []

    def running_nodes(self) -> list[str]:
        return [path for path, node in self._mirror.nodes.items()
                if node["status"] == "RUNNING" and not node["children"]]

    def node_views(self) -> list[NodeView]:
        return [self.node_view(path) for path in self._mirror.nodes]

    def node_view(self, path: str) -> NodeView:
        node = self._node(path)
        return NodeView(path=path, name=node["name"], class_name=node["class"], depth=path.count("/"),
                        parent=node["parent"], children=list(node["children"]), status=Status(node["status"]),
                        namespace=node["namespace"], counter=node["counter"],
                        breakpoint=any(bp.kind == "node" and bp.node == path for bp in self.breakpoints))

    def node_detail(self, path: str) -> NodeDetail:
        node = self._node(path)
        ports = [PortView(port, key, direction, self._value(key, node["namespace"]))
                 for direction, port, key in node["ports"]]
        error = node.get("error") or {}
        return NodeDetail(self.node_view(path), ports, list(self._mirror.history.get(path, ())),
                          error.get("error"), error.get("traceback"))

    def _value(self, key: str, namespace: str | None) -> Any:
        state = self._mirror.state
        if namespace and key in state.get(namespace, {}):
            return state[namespace][key]
        return state.get("", {}).get(key)

    def state_snapshot(self) -> dict[str, dict[str, Any]]:
        return {ns: dict(values) for ns, values in self._mirror.state.items()}

    def _node(self, path: str) -> dict[str, Any]:
        try:
            return self._mirror.nodes[path]
        except KeyError:
            raise EditError(f"no node at path {path!r}") from None

    # -- running -------------------------------------------------------------------
    async def step(self) -> TickReport | None:
        """One tick of the remote run, which must be held; None if it cannot step."""
        if self.run_state in (RunState.FINISHED, RunState.SUSPENDED, RunState.RUNNING):
            self._say({RunState.FINISHED: "the run has finished",
                       RunState.SUSPENDED: self._suspension_message(),
                       RunState.RUNNING: "running: pause (p) first"}[self.run_state])
            return None
        if not await self._until_stopped("step"):
            return None
        return self.last_report

    async def continue_(self, max_ticks: int | None = None) -> StopReason:
        """Let the remote run go on until a breakpoint, a suspension, `pause()` or its end."""
        if self.run_state in (RunState.FINISHED, RunState.RUNNING):
            return StopReason("error", "the run has finished" if self._finished else "already running")
        self._continuing = True
        self.run_state = RunState.RUNNING
        self._say("running")
        if not await self._until_stopped("continue"):
            return StopReason("error", self.message)
        return self.last_stop

    async def _until_stopped(self, request: str) -> bool:
        self._stopped.clear()
        try:
            await self.client.request(request)
        except DebugError as exc:
            self._continuing = False
            self._say(f"{request}: {exc.message}")
            self._settle()
            return False
        await self._stopped.wait()
        return True

    def pause(self) -> None:
        self._send("pause")

    async def restart(self) -> None:
        self._say("restart is not available when attached: the run belongs to its own process")

    def select_live(self) -> None:
        self._say("live")

    def _send(self, request: str, on_ok: Callable[[dict[str, Any]], Any] | None = None,
              **fields: Any) -> asyncio.Task:
        """Send a request in order behind the earlier ones; a refusal is shown, never raised."""
        async def send() -> Any:
            try:
                reply = await self.client.request(request, **fields)
            except DebugError as exc:
                self._say(f"{request.replace('_', ' ')} refused: {exc.message}")
                return None
            return on_ok(reply) if on_ok is not None else reply

        task = asyncio.get_running_loop().create_task(send())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- breakpoints ---------------------------------------------------------------
    def toggle_node_breakpoint(self, path: str, on: str = "tick") -> bool:
        """Add or remove a node breakpoint; `on` "before" stops before the node, otherwise after a tick of it."""
        self._node(path)
        existing = [bp for bp in self.breakpoints if bp.kind == "node" and bp.node == path]
        if existing:
            for bp in existing:
                self.remove_breakpoint(bp)
            return False
        bp = Breakpoint("node", node=path, on=on)
        self._set(bp, kind="node", node=path, when="before" if on == "before" else "after")
        return True

    def add_event_breakpoint(self, event_type: str) -> Breakpoint:
        event_type = event_type.strip()
        if not event_type:
            raise BreakpointError("an event breakpoint needs an event type, for example tool.call.failed")
        bp = Breakpoint("event", event_type=event_type)
        self._set(bp, kind="event", event=event_type)
        return bp

    def add_condition_breakpoint(self, expression: str) -> Breakpoint:
        condition = Condition(expression)
        known = {*self._mirror.state.get("", {}), *(ns.split(".")[0] for ns in self._mirror.state if ns),
                 "True", "False", "None"}
        unknown = sorted(condition.names() - known)
        if unknown:
            raise BreakpointError(f"condition {condition.source!r}: no state key {unknown[0]!r}")
        bp = Breakpoint("condition", condition=condition)
        self._set(bp, kind="condition", condition=condition.source)
        return bp

    def _set(self, bp: Breakpoint, **fields: Any) -> None:
        self.breakpoints.append(bp)

        def placed(reply: dict[str, Any]) -> int:
            return reply["breakpoint"]["id"]

        task = self._send("break", placed, **fields)
        self._server_ids[id(bp)] = task
        task.add_done_callback(lambda done: self._refused(bp) if done.result() is None else None)
        self._notify("changed")

    def _refused(self, bp: Breakpoint) -> None:
        if bp in self.breakpoints:
            self.breakpoints.remove(bp)
            self._notify("changed")

    def remove_breakpoint(self, bp: Breakpoint) -> None:
        if bp not in self.breakpoints:
            return
        self.breakpoints.remove(bp)
        placing = self._server_ids.pop(id(bp), None)

        async def unbreak() -> None:
            server_id = await placing if placing is not None else None
            if server_id is not None:
                self._send("unbreak", breakpoint=server_id)

        task = asyncio.get_running_loop().create_task(unbreak())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self._notify("changed")

    # -- edits ---------------------------------------------------------------------
    def _require_held(self, what: str) -> None:
        if self.run_state not in (RunState.READY, RunState.PAUSED, RunState.SUSPENDED):
            raise EditError(f"pause the run before {what}")

    def edit_state(self, namespace: str | None, key: str, value: Any) -> None:
        """Set one state value in the remote run; the server validates it (a refusal shows in the status line)."""
        self._require_held("editing state")
        self._send("edit_state", namespace=namespace or None, key=key, value=value)

    def validate_binding_key(self, path: str, key: str) -> str:
        self._node(path)
        key = key.strip().removeprefix("state.")
        if not key:
            raise EditError("a binding needs a state key")
        return key

    def edit_binding(self, path: str, direction: str, port: str, key: str) -> None:
        self._require_held("rebinding a port")
        key = self.validate_binding_key(path, key)

        def rebound(reply: dict[str, Any]) -> None:
            self._mirror.nodes[path] = {**reply["node"], "status": self._mirror.nodes[path]["status"]}
            self._notify("changed")

        self._send("edit_binding", rebound, node=path, direction=direction, port=port, key=key)

    def bindings(self) -> dict[str, dict[str, dict[str, str]]]:
        out: dict[str, dict[str, dict[str, str]]] = {}
        for path, node in self._mirror.nodes.items():
            for direction, port, key in node["ports"]:
                if key != port:
                    out.setdefault(path, {"inputs": {}, "outputs": {}})[
                        "inputs" if direction == "in" else "outputs"][port] = key
        return out

    def save_bindings(self):
        raise EditError("bindings are saved beside the tree file: not available when attached")

    # -- approvals -----------------------------------------------------------------
    def pending_approvals(self) -> list[ApprovalRequest]:
        return [ApprovalRequest.model_validate(item) for item in self._mirror.approvals]

    def approve(self, approval_id: str) -> None:
        self._send("approve", approval=approval_id)
        self._say("approval sent: the run goes on")

    def deny(self, approval_id: str, reason: str) -> None:
        self._send("deny", approval=approval_id, reason=reason or "denied in the studio")
        self._say("denial sent: the run goes on")


__all__ = ["Attached", "RemoteSession"]
