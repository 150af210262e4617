"""`RemoteSession`: an attached studio session, the debugger of a run in another process driven over
the debug protocol (docs/protocol.md).

The debugger is the same `runtime.debug.Debugger` a local `DebugSession` drives in process, so
both stop at the same places; the TUI drives this exactly like a local session (same views,
same intents, same listener kinds) and never knows the difference. It keeps a mirror of the run built from
the server's `welcome` and its `update` diffs (`docs/protocol.md`); reads come from the
mirror, intents become requests. Intents the TUI calls synchronously (breakpoints, edits,
approvals, pause, choosing a checkpoint) are checked here as far as the mirror allows and
sent in order; a refusal from the server shows in the status line, and what it answers
(a past checkpoint, a rebound node) shows when it arrives. The timeline is the served
run's checkpoint store, read by the server: rows arrive with the updates, a past
checkpoint is asked for when chosen. Only restarting and saving bindings beside the tree
file are refused: the run and its tree belong to the other process. Nor does it follow a
recording (`DebugSession.follow`, for a store another process writes): it is live, and
once the run is gone it says which store to replay; gone without the server's goodbye (its process
killed, the network down), the run is abandoned for this studio, last seen when the connection went.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from operator import attrgetter
from typing import Any

from py_trees.common import Status

from runtime.check.compare import Difference
from runtime.debug import DebugClient, DebugError
from runtime.debug.breakpoints import Breakpoint, BreakpointError, check_names, marked_nodes
from runtime.debug.children import child_namespace, refused_moment, split_child_path
from runtime.debug.compare import (
    Comparison,
    Row,
    Target,
    comparison_of,
    differences_of,
    target_json,
    target_of,
)
from runtime.debug.edits import (
    EditRefused,
    StateFacts,
    check_binding_key,
    check_binding_type,
    check_port,
    check_state_key,
)
from runtime.debug.node_marks import check_moment, toggle_node_breakpoint
from runtime.debug.protocol import events_of, record_of, returns_of
from runtime.debug.stops import RunState, Stop
from runtime.debug.ticks import tick_events
from runtime.engine.events import EventType, RuntimeEvent
from runtime.engine.record import Returns
from runtime.engine.runner import TickReport
from runtime.guard.approval import ApprovalRequest
from runtime.memory.checkpoint import CheckpointInfo, Liveness
from runtime.memory.checkpoint.liveness import ABANDONED
from runtime.memory.checkpoint.whatif_marks import CallRef
from runtime.memory.checkpoint.whatif_marks import Mark as WhatIfMark
from runtime.tools.base import ToolError
from runtime.tools.schema_check import check_arguments, schema_validator

from ..edits import EditError, StagedEdits
from ..event_log import EventLog, StampedEvent, status_history
from ..failure import Failure
from ..frames import NodeDetail, NodeView, PortView
from ..model_calls import MODEL_EVENTS, ModelCall, collect
from ..node_views import NodeColumns
from ..timeline import Lineage, Mark, RunTimeline
from ..whatifs import ToolCall, call_branches, recorded_tool_call, tool_call_ref
from .api import EVENT_BUFFER, TimelineRow

Listener = Callable[[str, Any], None]
HISTORY = 200  # status changes shown per node
PAST = "viewing the past: back to live (esc), or replay/fork (f)"
_SEQ = attrgetter("seq")


@dataclass
class Attached:
    """What the title bar shows in place of a tree file: where the run is."""

    path: str


@dataclass(frozen=True)
class RemoteFrame:
    """What the status line and the panes' keys read of the frame shown: the head, or a past checkpoint."""

    key: tuple
    tick: int
    root_status: Status
    tokens: int
    branch: str
    returns: Returns | None = None  # the record of its tick: a past checkpoint's, or a tick held inside so far
    held_returns: Returns | None = None  # ... of a tick held inside, so far (the head's)
    pending: frozenset[str] = frozenset()  # the nodes not returned yet in a tick held inside


class _Rows:
    """The checkpoint headers the server sent, as the store's `list()` gives them (for `RunTimeline.lineage`)."""

    def __init__(self) -> None:
        self.infos: dict[int, CheckpointInfo] = {}

    def add(self, run_id: str, row: dict[str, Any]) -> None:
        self.infos[row["id"]] = CheckpointInfo(row["id"], run_id, row["branch"], row["parent_id"], row["tick"], 0.0,
                                               row["status"], row["source"], row["event_position"])

    def list(self, run_id: str | None = None, branch: str | None = None, *,
             after: int | None = None) -> list[CheckpointInfo]:
        return [info for info in self.infos.values() if info.run_id == run_id and (after is None or info.id > after)]


def _tokens(state: dict[str, dict[str, Any]]) -> int:
    total = 0
    for values in state.values():
        usage = values.get("llm.usage") or {}
        total += int(usage.get("total_tokens", 0)) if isinstance(usage, dict) else 0
    return total


def _same_tree(path: str, other: str) -> bool:
    """Both nodes are the host's, or both one swarm agent's (`@agent/...`)."""
    split, other_split = split_child_path(path), split_child_path(other)
    return (split and split[0]) == (other_split and other_split[0])


class RemoteSession:
    def __init__(self, client: DebugClient, address: str):
        self.client = client
        self.loaded = Attached(f"attached to ws://{address}")
        self.log = EventLog()
        self.events: deque[StampedEvent] = deque(maxlen=EVENT_BUFFER)
        self.viewing: TimelineRow | None = None  # a past checkpoint shown read-only
        self.recorded_run = None  # an attached run is always live
        self.staged = StagedEdits()  # made while viewing a checkpoint, applied by a fork from it
        self.breakpoints: list[Breakpoint] = []
        self.last_report: TickReport | None = None
        self.last_stop: Stop | None = None
        self.message = f"attached to {address}"
        self.run_state = RunState.READY
        self.recording = False  # whether the served run keeps checkpoints (a timeline)
        self.branch = "main"
        self._listeners: list[Listener] = []
        self._nodes: dict[str, dict[str, Any]] = {}
        self._state: dict[str, dict[str, Any]] = {}
        self._approvals: list[dict[str, Any]] = []
        self._run_id: str | None = None
        self._tick = 0
        self._status = "INVALID"
        self._rows = _Rows()
        self._summaries: dict[int, str] = {}  # checkpoint id -> what it changed, as the server summed it up
        self._lineage = RunTimeline(self._rows, None)  # only its lineage(): the rows stand in for the store
        self._past: dict[str, Any] | None = None  # the viewed checkpoint as the server described it
        self._past_paths: frozenset[str] | None = None  # the nodes it knew, when not every node of the tree
        self._past_nodes: dict[str, dict[str, Any]] = {}  # the nodes it can draw: the host's, its agents' then
        self._past_returns: Returns | None = None  # what its tick returned, in order
        self._held: Returns | None = None  # a tick held inside (a step into, a breakpoint before a node): its record so far
        self._held_last: dict[str, Status] = {}  # ... each node that returned in it -> what it returned last
        self._pending: frozenset[str] = frozenset()  # ... the host's nodes not reached in it yet
        self._tree_version = 0  # a new tree from the server (a picture, a deferred subtree compiled)
        self._tick_marks: dict[str, Mark] = {}  # what the last completed tick changed (with what came before it)
        self._since: dict[str, tuple[Any, Any]] = {}  # written since then: async work finishing between ticks
        self._saved: dict[tuple[str | None, str, int], int] = {}  # (run, branch, tick) -> its checkpoint's event position
        self._model_io: dict[tuple, dict[str, Any] | None] = {}
        self._paused: dict[str, Any] | None = None
        self._finished = False
        self._gone = False
        self._continuing = False
        self._waiting: list[str] = []  # what the last tick left in flight, when nothing woke the run
        self._moved = False  # the studio moved the run (a step, a continue, a fork): no longer "ready"
        self._stopped = asyncio.Event()
        self._applied = 0  # the server's unasked messages applied so far (`DebugClient.received` counts them)
        self._stops: deque[tuple[int, Stop]] = deque(maxlen=8)  # the latest stops, each with its message's number
        self._placing: dict[int, asyncio.Task] = {}  # id(bp) -> the task that placed it (its result: the server's id)
        self._tasks: set[asyncio.Task] = set()
        self._apply_picture(client.welcome)
        self._add_events(events_of(client.welcome.get("events")))  # before this studio attached
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, address: str, token: str, *, heartbeat: float = 10.0) -> RemoteSession:
        """Attach to a debug server; raises `DebugError` (refused, or a welcome it cannot read) or `OSError`
        (nobody there)."""
        client = await DebugClient.connect(address, token, heartbeat=heartbeat, client="jianmu-studio", hold_end=True)
        try:
            return cls(client, address)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a peer's welcome, not the protocol's
            await client.close()
            raise DebugError("bad_welcome", f"a welcome this studio cannot read ({type(exc).__name__}: {exc}): "
                                            "not a jianmu debug server") from exc

    async def close(self) -> None:
        await self.client.close()
        await asyncio.gather(self._reader, *self._tasks, return_exceptions=True)

    async def drained(self) -> None:
        """Until every request sent so far is answered (and what it answered is shown)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

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
        self._nodes = {node["path"]: node for node in picture["tree"]}
        self._tree_version += 1
        self._state = {ns: dict(values) for ns, values in picture["state"].items()}
        self._approvals = list(picture.get("approvals", ()))
        self._run_id, self._tick, self._status = picture["run_id"], picture["tick"], picture["status"]
        self.branch, self.recording = picture.get("branch", "main"), picture.get("recording", False)
        self._store = picture.get("store")
        self._schema = picture.get("schema") or {"name": "the state schema", "fields": [], "names": []}
        self._rows.infos.clear()
        self._add_rows(picture.get("checkpoints", ()))
        self._paused, self._finished = picture.get("paused"), picture.get("finished", False)
        self._hold(self._paused)
        self._failure = picture.get("failure")
        self._head_marks = picture.get("marks", [])
        self._rebound = set(picture.get("rebound", ()))
        self._settle()

    def _add_rows(self, rows: Any) -> None:
        for row in rows:
            self._rows.add(self._run_id, row)
            self._summaries[row["id"]] = row["summary"]
            # the tick's own checkpoint: a later one of its tick (a suspension's) holds events published between ticks
            self._saved.setdefault((self._run_id, row["branch"], row["tick"]), row["event_position"])

    async def _read(self) -> None:
        while (message := await self.client.next_message()) is not None:
            self._applied += 1
            try:
                self._apply(message)
            except (KeyError, TypeError, ValueError) as exc:  # a server speaking something else: say so, go on
                self._say(f"debug server sent a message this studio cannot read ({type(exc).__name__}: {exc})")
        self._gone = True
        self._applied += 1
        ended = self.client.ended  # why, when this side left it (a server message over the size limit, say)
        why = f" ({ended.message})" if ended is not None and ended.code != "closed" else ""
        lost = f"{Liveness(ABANDONED, time.time())}: the debug connection was lost{why}"  # (its keepalive held till now)
        self._stop(Stop("finished", (self.message if self._finished else lost) + self._replay_hint()))

    def _replay_hint(self) -> str:
        """Once the served run is gone its recording is a store another studio opens (and follows while a
        writer still adds to it); an attached studio is live and follows nothing itself. `serve` records
        the tree file with the run; replay asks for `--tree` when a service did not."""
        return f"; its recording: jianmu-studio replay {self._store}" if self._store else ""

    def _apply(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "update":
            self._apply_update(message)
        elif kind == "paused" and message["kind"] == "finished":  # held at its end for this studio
            self._paused, self._continuing, self._finished = message, False, True
            self._hold(message)
            self._stop(Stop("finished", f"finished: {self._status} (held for this studio: its process "
                                              "gets the result when you quit)"))
        elif kind == "paused":
            self._paused, self._continuing = message, False
            self._hold(message)
            self._stop(self._stop_of(message))
        elif kind == "resumed":
            self._paused = None
            self._hold(None)
            self._settle()
        elif kind == "finished":
            self._finished, self._failure = True, message.get("failure")
            self._stop(Stop("finished", f"finished: {message['status']}"))
        elif kind == "bye":
            self._finished = True
            self._stop(Stop("finished", f"the run ended: {message['status']} (the server closed)"))
        elif kind == "error":
            self._say(f"debug server: {message['message']}")

    def _hold(self, paused: dict[str, Any] | None) -> None:
        """Where the run is held: inside a tick (`returns` in the `paused` message), what returned in it so
        far and the host's nodes not reached yet (a swarm agent's run on their own), as a local head frame
        has them; between ticks (or moving), nothing."""
        held = returns_of((paused or {}).get("returns"))
        self._held, self._held_last = held, held.last() if held is not None else {}
        at = (paused or {}).get("node")
        self._pending = frozenset() if held is None or at is None else held.not_reached(
            [path for path in self._nodes if split_child_path(path) is None], at)

    def _stop_of(self, paused: dict[str, Any]) -> Stop:
        """The debugger's stop as the server described it, its breakpoint (and hits) the mirrored one."""
        bp = next((bp for bp in self.breakpoints if paused.get("breakpoint") is not None
                   and bp.id == paused["breakpoint"]), None)
        if bp is not None and "hits" in paused:
            bp.hits = paused["hits"]
        return Stop(paused["kind"], paused["message"], paused.get("tick", self._tick), paused.get("node"), bp)

    def _apply_update(self, update: dict[str, Any]) -> None:
        if "tree" in update:
            self._nodes = {node["path"]: node for node in update["tree"]}
            self._tree_version += 1
        changed: dict[str, tuple[Status, Status]] = {}
        for path, (old, new) in update.get("nodes", {}).items():
            if path in self._nodes:
                self._nodes[path]["status"] = new
            changed[path] = (Status(old or "INVALID"), Status(new))
        for path, counter in update.get("counters", {}).items():
            if path in self._nodes:
                self._nodes[path]["counter"] = counter
        for path, error in update.get("errors", {}).items():
            if path in self._nodes:
                self._nodes[path]["error"] = error
        state_changes: dict[str, tuple[Any, Any]] = {}
        for namespace, key, value in update.get("state", ()):
            values = self._state.setdefault(namespace, {})
            state_changes[f"{namespace}.{key}" if namespace else key] = (values.get(key), value)
            values[key] = value
        for namespace, key in update.get("removed", ()):
            values = self._state.get(namespace, {})
            values.pop(key, None)
            if namespace and not values:  # a cleared namespace is gone, as in a local session
                self._state.pop(namespace, None)
        if "approvals" in update:
            self._approvals = update["approvals"]
        self._run_id, self._tick, self._status = update["run_id"], update["tick"], update["status"]
        self._finished = self._finished or self._status in ("SUCCESS", "FAILURE")  # before its stop is said
        self.branch = update.get("branch", self.branch)  # the server sends a fork's events after it, never before
        self._add_rows(update.get("checkpoints", ()))
        self._add_events(sorted([*events_of(update.get("events")),  # with the ticks' telemetry
                                 *tick_events(update.get("ticks", ()))], key=_SEQ))
        if "breakpoints" in update:
            self._mirror_breakpoints(update["breakpoints"])
        self._head_marks = update.get("marks", self._head_marks)
        self._rebound = set(update.get("rebound", self._rebound))
        self._mark(update, state_changes)
        for tick in update.get("agent_ticks", ()):  # a swarm agent's tick, its paths @agent/...
            self._notify("subtick", TickReport(tick["tick"], Status(tick["status"]), ticked=tick["ticked"],
                                               changed={path: (Status(old), Status(new))
                                                        for path, (old, new) in tick["changed"].items()}))
        if "report" in update or any(split_child_path(path) is None for path in changed):  # a tick (its changes)
            report = update.get("report")
            last = self.last_report
            if report is not None:
                self._waiting = report.get("waiting", [])
                ticked = list(report.get("ticked", ()))  # the tree pane re-reads their lines (a loop's counter)
                record = record_of(report)  # what each of them returned: the tick's truth, as a local report has it
            else:  # changes between ticks: the last tick's nodes (and what they returned) are still its own
                ticked = last.ticked if last is not None else []
                record = {"returned": last.returned, "unseen": last.unseen} if last is not None else {}
            self.last_report = TickReport(update["tick"], Status(update["status"]), changed=changed,
                                          state_changes=state_changes, ticked=ticked,
                                          duration_ms=(report or {}).get("duration_ms", 0.0), **record)
            self._notify("tick", self.last_report)
        self._settle()

    def _add_events(self, events: Iterable[RuntimeEvent]) -> None:
        """Stamped as a local session stamps them: between ticks when published after their tick's
        checkpoint (its row comes first), or after its tick.completed when the run keeps none."""
        for event in events:
            key = (event.run_id, self.branch, event.tick)
            saved = self._saved.get(key)
            stamped = StampedEvent(self.branch, event, saved is not None and event.seq > saved)
            if event.type == EventType.TICK_COMPLETED and not self.recording:
                self._saved[key] = event.seq
            self.log.add(stamped)
            self.events.append(stamped)
            self._notify("event", stamped)

    def _mark(self, update: dict[str, Any], changes: dict[str, tuple[Any, Any]]) -> None:
        """A tick's marks are the keys written since the tick before it ended; later writes are marked as
        between ticks until the next tick ends (as a local session marks against its checkpoints)."""
        for key, (old, new) in changes.items():
            self._since[key] = (self._since.get(key, (old, None))[0], new)
        if "report" in update:
            self._tick_marks = {key: Mark(old, new) for key, (old, new) in self._since.items() if old != new}
            self._since = {}

    def _stop(self, reason: Stop) -> None:
        self.last_stop = reason
        self._continuing = False
        self.message = reason.message
        self._settle()
        self._stops.append((self._applied, reason))
        self._stopped.set()

    def _settle(self) -> None:
        if self._finished or self._gone:
            state = RunState.FINISHED
        elif self.suspended:
            state = RunState.SUSPENDED
        elif self._paused is not None:
            state = RunState.READY if self._tick == 0 and not self._moved else RunState.PAUSED
        else:  # continuing, and waiting when the last tick left async work in flight and nothing woke it
            state = RunState.WAITING if self._continuing and self._waiting else RunState.RUNNING
        if state == RunState.SUSPENDED and self.run_state != RunState.SUSPENDED:  # asked after a step too: say so
            self.message = self._suspension_message()
        self.run_state = state
        self._notify("changed")

    @property
    def suspended(self) -> bool:
        return self._status == "RUNNING" and bool(self._approvals)

    @property
    def busy(self) -> bool:
        return self.run_state.busy

    def _suspension_message(self) -> str:
        kinds = ", ".join(f"approval of {item['tool']} at {item.get('node')}" for item in self._approvals)
        return f"suspended: waiting for {kinds}"

    # -- what the views read: the head, or the checkpoint viewed ----------------------
    @property
    def tick(self) -> int:
        return self._tick

    @property
    def root_status(self) -> Status:
        return Status(self._status)

    @property
    def run_id(self) -> str | None:
        return self._run_id

    @property
    def tokens(self) -> int:
        """As a local session counts them: the model calls of the frame's lineage (a swarm's agents' too), or
        the run's state (`llm.usage`, its own namespaces) when larger (a replay calls no model)."""
        return max(_tokens({ns: values for ns, values in self._state.items() if not ns.startswith("@")}),
                   self.log.tokens(self._frame_lineage()))

    @property
    def failure(self) -> Failure | None:
        """Why the run failed, as the server's runtime explained it with `finished`; None unless it did."""
        return Failure(**self._failure) if self._failure is not None and self.viewing is None else None

    @property
    def frame(self) -> RemoteFrame:
        past = self._past
        if past is None:
            return RemoteFrame((self._run_id, self.branch, None), self._tick, self.root_status, self.tokens,
                               self.branch, self._held, self._held, self._pending)
        info = self._past_info()
        return RemoteFrame((self._run_id, info.branch, info.id), info.tick, info.root_status,  # ERROR: FAILURE
                           max(_tokens(self.state_snapshot()), self.log.tokens(self._frame_lineage())), info.branch,
                           self._past_returns)

    def _past_info(self) -> CheckpointInfo:
        """The viewed checkpoint's header (its row, as the store lists it)."""
        row = self._past["checkpoint"]
        if row["id"] not in self._rows.infos:
            self._rows.add(self._run_id, row)
        return self._rows.infos[row["id"]]

    def _frame_lineage(self) -> Lineage:
        if self._past is None:
            return self._lineage.lineage(None, self._run_id, self.branch)
        info = self._past_info()
        return self._lineage.lineage(info, self._run_id, info.branch)

    def branches(self) -> list[str]:
        return list(dict.fromkeys([*(info.branch for info in self._rows.list(self._run_id)), self.branch]))

    def checkpoints(self) -> list[TimelineRow]:
        """Every checkpoint of the served run, all branches, oldest first (none unless it records)."""
        return [TimelineRow(info.id, info.tick, info.status, info.branch, info.parent_id, self._summaries[info.id])
                for info in self._rows.list(self._run_id)]

    def frame_events(self) -> list[StampedEvent]:
        """The events of the frame's lineage that this studio received: those the run published before it
        attached (as many as the runner's event history keeps) and every one since."""
        return self.log.of(self._frame_lineage())

    def marks(self) -> dict[str, Mark]:
        """What a local session marks, as the server read it from the store: the past checkpoint's changes
        since its parent; live, the newest checkpoint's and what was written since. A run that records no
        checkpoints is marked with what its last tick changed and what was written after it."""
        if self._past is not None:
            return {key: Mark(old, new, between) for key, old, new, between in self._past["marks"]}
        if self.recording:
            return {key: Mark(old, self._value_of(key), between) for key, old, between in self._head_marks}
        between = {key: Mark(old, new, between=self._tick) for key, (old, new) in self._since.items() if old != new}
        return {**self._tick_marks, **between}

    def refusal(self) -> str | None:
        return PAST if self.viewing is not None else None

    def waiting_on(self) -> list[str]:
        return list(self._waiting) if self.run_state == RunState.WAITING else []

    def running_nodes(self) -> list[str]:
        """The leaves running in the frame shown (a past one's from its checkpoint): leaves of their own tree,
        as a local session finds them, a node spawning a swarm agent one although the agent's root hangs
        under it."""
        return [path for path, node in self._shown().items() if self.node_status(path) == Status.RUNNING
                and not any(_same_tree(path, child) for child in node["children"])]

    def _shown(self) -> dict[str, dict[str, Any]]:
        """The nodes of the frame: every node live, those the checkpoint knew in the past."""
        if self._past is None:
            return self._nodes
        return {path: node for path, node in self._past_nodes.items() if path in self._past["statuses"]}

    def _nodes_then(self, reply: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """The nodes a past checkpoint can draw: the host's (their shape from the live tree), and the swarm
        agents' it holds as the server described them then, each agent's root under the node that spawned it."""
        nodes = {path: node for path, node in self._nodes.items() if split_child_path(path) is None}
        for agent in reply.get("agents", ()):
            nodes[agent["path"]] = {**agent, "status": "INVALID", "counter": None, "ports": []}
            parent = nodes.get(agent["parent"])
            if split_child_path(agent["parent"]) is None and parent is not None \
                    and agent["path"] not in parent["children"]:
                nodes[agent["parent"]] = {**parent, "children": [*parent["children"], agent["path"]]}
        return nodes

    def node_views(self) -> NodeColumns:
        marked = marked_nodes(self.breakpoints)  # (once: a node_view each would build it 100,000 times)
        return NodeColumns.of(self._node_view(path, marked) for path in self._shown())

    @property
    def tree_shape(self) -> tuple:
        """Changes when the tree pane must be rebuilt: another tree from the server, or a checkpoint that
        knew fewer nodes. Another frame of the same nodes only restates their lines (`node_status`)."""
        return self._tree_version, self._past_paths if self._past is not None else None

    def node_status(self, path: str) -> Status:
        """A node's status in the frame shown; in a tick held inside, what it returned last in it, if it did."""
        if self._past is not None:
            return Status(self._past["statuses"].get(path, "INVALID"))
        return self._held_last.get(path) or Status(self._node(path)["status"])

    def node_statuses(self) -> dict[str, Status]:
        return {path: self.node_status(path) for path in (self._nodes if self._past is None else self._past_nodes)}

    def node_view(self, path: str) -> NodeView:
        return self._node_view(path, marked_nodes(self.breakpoints))

    def _node_view(self, path: str, marked: set[str]) -> NodeView:
        """The node as the frame shows it; `marked`: the nodes with a breakpoint mark."""
        node, past = self._node(path), self._past
        status, counter, children = self._held_last.get(path) or node["status"], node["counter"], list(node["children"])
        if past is not None:
            status, counter = past["statuses"].get(path, "INVALID"), past["counters"].get(path)
            children = [child for child in children if child in past["statuses"]]
        return NodeView(path=path, name=node["name"], class_name=node["class"], depth=path.count("/"),
                        parent=node["parent"], children=children, status=Status(status),
                        namespace=node["namespace"], counter=counter,
                        breakpoint=path in marked,
                        pending=past is None and path in self._pending)

    def rebound_paths(self) -> set[str]:
        if self._past is None:
            return self._rebound
        return set(self._past.get("rebound", ())) | {path for path, _, _ in self.staged.bindings}

    def node_detail(self, path: str) -> NodeDetail:
        node, past = self._node(path), self._past
        if node.get("agent") is not None:
            return self._agent_detail(node)
        state = self.state_snapshot()
        ports = node["ports"] if past is None else self._staged_ports(path, past["ports"].get(path, []))
        views = [PortView(port, key, direction, self._value(state, key, node["namespace"]))
                 for direction, port, key in ports]
        error, traceback = None, None
        events = self.log.of_node(self._frame_lineage(), path)
        for stamped in events:
            if stamped.type == EventType.NODE_ERROR:
                error, traceback = stamped.payload.get("error"), stamped.payload.get("traceback")
        if past is None and node.get("error"):
            error, traceback = node["error"].get("error"), node["error"].get("traceback")
        failure = self.failure
        if error is None and failure is not None and failure.node == path:
            error = failure.headline
        return NodeDetail(self.node_view(path), views, status_history(events)[-HISTORY:], error, traceback)

    def _agent_detail(self, node: dict[str, Any]) -> NodeDetail:
        """A swarm agent's node, as a local session shows it: its ports read in the agent's own state (live, or
        at the checkpoint viewed), its namespace named as the state pane names it (`@agent`, `@agent.ns`)."""
        state, agent = self.state_snapshot(), node["agent"]
        own, scope = child_namespace(agent, node["namespace"]), child_namespace(agent, None)
        ports = node["ports"] if self._past is None else self._past["ports"].get(node["path"], [])
        views = [PortView(port, key, direction, state.get(own, {}).get(key, state.get(scope, {}).get(key)))
                 for direction, port, key in ports]
        error = node.get("error") or {}
        return NodeDetail(replace(self.node_view(node["path"]), namespace=own), views, [], error.get("error"),
                          error.get("traceback"))

    def _staged_ports(self, path: str, ports: list[list[str]]) -> list[list[str]]:
        """A past node's `[direction, port, key]` ports with the binding edits staged on it."""
        return [[direction, port, self.staged.bindings.get((path, direction, port), key)]
                for direction, port, key in ports]

    def _value_of(self, qualified: str) -> Any:
        """The value of a key as a mark names it (`key` global, `ns.key`), from the mirror."""
        if qualified in self._state.get("", {}):
            return self._state[""][qualified]
        for ns in sorted(self._state, key=len, reverse=True):
            if ns and qualified.startswith(ns + "."):
                return self._state[ns].get(qualified[len(ns) + 1:])
        return None

    def _value(self, state: dict[str, dict[str, Any]], key: str, namespace: str | None) -> Any:
        if namespace and key in state.get(namespace, {}):
            return state[namespace][key]
        return state.get("", {}).get(self._schema.get("aliases", {}).get(key, key))  # `usage` is `llm.usage`

    def state_snapshot(self) -> dict[str, dict[str, Any]]:
        """Every namespace as of the frame (the staged edits in, in the past)."""
        if self._past is None:
            return {ns: dict(values) for ns, values in self._state.items()}
        state = {ns: dict(values) for ns, values in self._past["state"].items()}
        for (ns, key), value in self.staged.values.items():
            state.setdefault(ns, {})[key] = value
        return state

    def _node(self, path: str) -> dict[str, Any]:
        try:
            return (self._nodes if self._past is None else self._past_nodes)[path]
        except KeyError:
            raise EditError(f"no node at path {path!r}") from None

    def model_calls(self, node: str | None = None) -> list[ModelCall]:
        """The frame's model calls (of one node, or all), from the events this studio received."""
        calls = collect([e for e in self.frame_events() if e.type in MODEL_EVENTS])
        return [call for call in calls if node is None or call.node == node]

    def model_call(self, call: ModelCall):
        """An awaitable of the call with its recorded request and response, asked of the served run's store."""
        return self._fill(call)

    async def _fill(self, call: ModelCall) -> ModelCall:
        if call.round is None or call.messages is not None or call.run_id is None or not self.recording:
            return call
        try:
            reply = await self.client.request("model_io", run_id=call.run_id, node=call.node, round=call.round,
                                              index=1 if call.empty_retry else 0,
                                              branches=self._call_branches(call.branch))
        except DebugError as exc:
            self._say(f"model call: {exc.message}")
            return call
        record = reply["record"]
        if record is not None:
            call.messages, call.config, call.response = record["messages"], record["config"], record["response"]
            error = record.get("error")
            if error is not None and call.error is None:
                call.error = f"{error.get('type')}: {error.get('message')}"
        return call

    # -- comparing and what-ifs: the served run's debugger and store do them (runtime.debug.served_whatifs) --
    def _call_branches(self, branch: str | None) -> list[str]:
        return call_branches(self._frame_lineage(), branch)

    async def _asked(self, request: str, **fields: Any) -> dict[str, Any]:
        """A request whose refusal (one line, naming what was asked) is the caller's `EditError`."""
        try:
            return await self.client.request(request, **fields)
        except DebugError as exc:
            raise EditError(exc.message) from None

    def compare_targets(self):
        """An awaitable of the branches and runs the frame's branch can be compared with, as the served run's
        store lists them."""
        return self._targets()

    async def _targets(self) -> list[Target]:
        if self._run_id is None:
            return []
        reply = await self._asked("compare_targets", run_id=self._run_id, branch=self.frame.branch)
        return [target_of(target) for target in reply["targets"]]

    def compare(self, target: Target):
        """An awaitable of the frame's branch and `target` side by side, compared by the debug server; the
        states' difference at a tick is asked for when the view shows that tick."""
        return self._compared(target)

    async def _compared(self, target: Target) -> Comparison:
        if self._run_id is None:
            raise EditError("no run yet: step first")
        reply = await self._asked("compare", run_id=self._run_id, branch=self.frame.branch,
                                  target=target_json(target))
        comparison = comparison_of(reply["comparison"], lambda row: self._tick_state(comparison, row))
        return comparison

    async def _tick_state(self, comparison: Comparison, row: Row) -> list[Difference] | None:
        try:
            reply = await self._asked("compare_state", a=comparison.a.label, b=comparison.b.label,
                                      tick=row.tick, checkpoints=[row.a and row.a.id, row.b and row.b.id])
        except EditError as exc:
            self._say(str(exc))
            return None
        return differences_of(reply["differences"])

    def what_if(self, call: CallRef, answer: Any):
        """An awaitable of a new branch (`whatif-1`, ...) from just before a recorded model or tool call,
        serving `answer` in its place (the served run's debugger forks); the run is held there, as after a fork."""
        return self._restore("what_if", call=asdict(call), answer=answer)

    async def resend(self, call: CallRef, **edits: Any) -> WhatIfMark:
        """Send a recorded model call again as edited (`messages`, `tools`, `parameters`): the served run's
        debugger sends it to the node's endpoint (else the one its environment configures); the run is
        not touched."""
        reply = await self._asked("resend", call=asdict(call), **edits)
        landed = [row for row in reply["rows"] if row["id"] in self._rows.infos]
        if landed:  # the rows of the tick it landed after say so now
            self._add_rows(landed)
            self._notify("changed")
        return WhatIfMark.from_json(reply["mark"])

    def tool_call(self, event: StampedEvent):
        """The recorded tool call a `tool.call.*` event of the frame belongs to: None when it is not one,
        else an awaitable of it with its I/O, asked of the served run's store (None: not recorded)."""
        found = tool_call_ref(self.frame_events(), event)
        return None if found is None or not self.recording else self._tool_call(*found)

    async def _tool_call(self, ref: CallRef, tick: int) -> ToolCall | None:
        try:
            reply = await self._asked("tool_io", run_id=ref.run_id, node=ref.node, round=ref.round,
                                      index=ref.index, branches=self._call_branches(ref.branch))
        except EditError as exc:
            self._say(str(exc))
            return None
        record = reply["record"]
        return None if record is None else recorded_tool_call(ref, tick, record["request"], record["response"],
                                                              record["error"])

    # -- running -------------------------------------------------------------------
    async def step(self) -> TickReport | None:
        """One tick of the remote run, which must be held; None if it cannot step."""
        return await self._step("step")

    async def step_into(self) -> TickReport | None:
        """To the next node boundary inside the tick (before that node runs), or to the tick's end."""
        return await self._step("step_into")

    async def _step(self, request: str) -> TickReport | None:
        if self.viewing is not None:
            self._say(PAST)
            return None
        if self.busy:  # the debugger says why it cannot step otherwise (the end, a suspension)
            self._say("running: pause (p) first")
            return None
        if not await self._until_stopped(request):
            return None
        return self.last_report

    async def continue_(self, max_ticks: int | None = None) -> Stop:
        """Let the remote run go on until a breakpoint, a suspension, `pause()` or its end."""
        if self.viewing is not None:
            self._say(PAST)
            return Stop("refused", PAST)
        if self.run_state == RunState.FINISHED or self.busy:
            return Stop("error", "the run has finished" if self._finished else "already running")
        self._continuing = True
        self.run_state = RunState.RUNNING
        self._say("running")
        if not await self._until_stopped("continue"):
            return Stop("error", self.message)
        return self.last_stop

    async def _until_stopped(self, request: str) -> bool:
        """Send a step or a continue and wait for the stop it makes: one that came with a message the
        server sent after answering it (a stop sent before, say a run held once its approval was
        answered, is not this one's)."""
        self._moved = True
        await self.drained()  # an edit or breakpoint made just before reaches the run before it moves
        try:
            _, before = await self.client.request_marked(request)
        except DebugError as exc:
            self._continuing = False
            self._say(f"{request.replace('_', ' ')}: {exc.message}")
            self._settle()
            return False
        while (made := next((stop for at, stop in self._stops if at > before), None)) is None:
            self._stopped.clear()
            await self._stopped.wait()
        self.last_stop = made  # what it made, though the run's end may be said already after it
        return True

    def pause(self) -> None:
        self._send("pause")

    async def restart(self) -> None:
        self._say("restart is not available when attached: the run belongs to its own process")

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

    # -- timeline: the past, replay and fork -------------------------------------------
    def select_checkpoint(self, checkpoint_id: int) -> None:
        """Show the tree and state as they were at a checkpoint (read-only), once the server sent it."""
        if self.busy:
            raise EditError("pause the run before looking at the past")
        if not self.recording:
            raise EditError("the attached run records no checkpoints: its runner has no checkpoint store")

        def arrived(reply: dict[str, Any]) -> None:
            row = reply["checkpoint"]
            self._past, self._past_nodes, self.staged = reply, self._nodes_then(reply), StagedEdits()
            self._past_returns = returns_of(reply.get("returns"))
            shown = frozenset(self._shown())
            self._past_paths = None if shown == frozenset(self._nodes) else shown
            self.viewing = TimelineRow(row["id"], row["tick"], row["status"], row["branch"], row["parent_id"],
                                       row["summary"])
            self._say(f"viewing checkpoint {row['id']} (tick {row['tick']}, {row['branch']})")

        self._send("checkpoint", arrived, checkpoint=int(checkpoint_id))

    def select_live(self) -> None:
        self.viewing, self._past, self.staged = None, None, StagedEdits()
        self._say("live")

    async def replay_from(self, checkpoint_id: int) -> str:
        """Re-run from a checkpoint on a new branch serving the recorded I/O strictly; staged edits are dropped."""
        return await self._restore("replay", checkpoint=int(checkpoint_id))

    async def fork_from(self, checkpoint_id: int) -> str:
        """A new branch from a checkpoint, with the state and binding edits staged while viewing it."""
        viewed = self.viewing is not None and self.viewing.id == int(checkpoint_id)
        staged = self.staged if viewed else StagedEdits()
        return await self._restore("fork", checkpoint=int(checkpoint_id), state=staged.updates(),
                                   bindings=staged.binding_changes())

    async def _restore(self, request: str, **fields: Any) -> str:
        if self.busy:
            raise EditError("pause the run before replaying or forking")
        await self.drained()  # the edits and breakpoints sent before it reach the run first
        try:
            reply = await self.client.request(request, **fields)
        except DebugError as exc:
            raise EditError(exc.message) from None
        self.viewing, self._past, self.staged = None, None, StagedEdits()
        self.last_report, self._moved = None, True
        self._tick_marks, self._since = {}, {}
        self._apply_picture(reply["picture"])
        self._say(reply["message"])
        return self.branch

    # -- breakpoints ---------------------------------------------------------------
    @property
    def breakpoints_kept(self) -> str:
        return "kept by the debug server while this studio is attached; cleared when it detaches"

    def toggle_node_breakpoint(self, path: str, on: str = "before") -> bool:
        """Add or remove a node breakpoint, as the debugger does (`node_marks`); True when one is now set."""
        self._node(path)
        return toggle_node_breakpoint(self, path, on)

    def add_node_breakpoint(self, path: str, on: str = "before") -> Breakpoint:
        """Stop before the node runs (`before`, the default) or after its status changes (`after`)."""
        bp = Breakpoint.from_json({"kind": "node", "node": path, "when": on})
        if path not in self._nodes:
            raise BreakpointError(f"no node at path {path!r}")
        if (refused := refused_moment(path, on)) is not None:
            raise BreakpointError(refused)
        return self._add(bp)

    def add_event_breakpoint(self, event_type: str) -> Breakpoint:
        return self._add(Breakpoint.from_json({"kind": "event", "event": event_type}))

    def add_condition_breakpoint(self, expression: str) -> Breakpoint:
        """A condition over state; its names must be state fields, keys or namespaces of the served run."""
        bp = Breakpoint.from_json({"kind": "condition", "condition": expression})
        check_names(bp.condition, {*self._schema["fields"], *self._state.get("", {}),
                                   *(ns.split(".")[0] for ns in self._facts.namespaces)})
        return self._add(bp)

    def _add(self, bp: Breakpoint) -> Breakpoint:
        """Set it on the server (the debugger's list; this one mirrors it); a refusal takes it off again."""
        self.breakpoints.append(bp)
        task = self._send("break", lambda reply: self._described(bp, reply["breakpoint"]), **bp.to_json())
        self._placing[id(bp)] = task
        task.add_done_callback(lambda done: self._refused(bp) if done.result() is None else None)
        self._notify("changed")
        return bp

    def _described(self, bp: Breakpoint, described: dict[str, Any]) -> int:
        bp.id, bp.hits, bp.enabled = described["id"], described["hits"], described["enabled"]
        return bp.id

    def _refused(self, bp: Breakpoint) -> None:
        if bp in self.breakpoints:
            self.breakpoints.remove(bp)
            self._notify("changed")

    def _once_placed(self, bp: Breakpoint, request: str, **fields: Any) -> None:
        """Send a request about a breakpoint once the server has numbered it (in order behind the others)."""
        placing = self._placing.get(id(bp))
        if placing is None:
            return

        async def send() -> None:
            if await placing is not None:
                await self._send(request, breakpoint=bp.id, **fields)

        task = asyncio.get_running_loop().create_task(send())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _mirror_breakpoints(self, described: list[dict[str, Any]]) -> None:
        """The server's list changed (hits, a condition it disabled): this one follows."""
        by_id = {item["id"]: item for item in described}
        for bp in self.breakpoints:
            if bp.id in by_id:
                bp.hits, bp.enabled = by_id[bp.id]["hits"], by_id[bp.id]["enabled"]

    def set_breakpoint(self, bp: Breakpoint, *, enabled: bool | None = None, on: str | None = None) -> None:
        """Enable or disable a breakpoint, or switch a node breakpoint between before and after."""
        check_moment(bp, on)
        bp.enabled = bp.enabled if enabled is None else enabled
        bp.on = on or bp.on
        self._once_placed(bp, "set_breakpoint", enabled=bp.enabled, **({"when": on} if on else {}))
        self._notify("changed")

    def remove_breakpoint(self, bp: Breakpoint) -> None:
        if bp not in self.breakpoints:
            return
        self.breakpoints.remove(bp)
        self._once_placed(bp, "unbreak")
        self._placing.pop(id(bp), None)
        self._notify("changed")

    # -- edits ---------------------------------------------------------------------
    @property
    def _facts(self) -> StateFacts:
        """What the edit checks know of the served run's state: its schema, as sent, and the mirror."""
        namespaces = {ns for ns in self._state if ns} | {node["namespace"] for node in self._nodes.values()
                                                         if node["namespace"]}
        schema = self._schema
        return StateFacts(schema["name"], tuple(schema["fields"]), frozenset(schema["names"]), frozenset(namespaces),
                          lambda key, ns: key in self._state.get(ns or "", {}), schema.get("types", {}))

    def _require_held(self, what: str) -> None:
        if self.run_state not in (RunState.READY, RunState.PAUSED, RunState.SUSPENDED):
            raise EditError(f"pause the run before {what}")

    def edit_state(self, namespace: str | None, key: str, value: Any) -> None:
        """Set one state value in the remote run (the server checks it: a refusal shows in the status line);
        while a past checkpoint is shown the edit is staged for a fork from there."""
        self._require_held("editing state")
        try:
            namespace = check_state_key(self._facts, namespace, key)
        except EditRefused as exc:
            raise EditError(str(exc)) from None
        if self.viewing is not None:
            self.staged.values[(namespace or "", key)] = value
            self._say(f"edit staged: fork (f) from checkpoint {self.viewing.id} applies it")
            return
        self._send("edit_state", namespace=namespace or None, key=key, value=value)

    def validate_binding(self, path: str, direction: str, port: str, key: str) -> str:
        """The normalised key, or `EditError` saying why the port cannot be bound to it (the server
        checks it again)."""
        node = self._node(path)
        try:
            check_port(path, direction, port, node["ports"])
            facts = self._facts
            key = check_binding_key(facts, key, node["namespace"])
            check_binding_type(facts, port, next(bound for way, name, bound in node["ports"]
                                                 if (way, name) == (direction, port)), key)
        except EditRefused as exc:
            raise EditError(str(exc)) from None
        return key

    def edit_binding(self, path: str, direction: str, port: str, key: str) -> None:
        """Rebind one port of the remote run (at its next tick); while a past checkpoint is shown the
        edit is staged for a fork from there."""
        self._require_held("rebinding a port")
        key = self.validate_binding(path, direction, port, key)
        if self.viewing is not None:
            self.staged.bindings[(path, direction, port)] = key
            self._say(f"binding staged: fork (f) from checkpoint {self.viewing.id} applies it")
            return

        def rebound(reply: dict[str, Any]) -> None:
            self._nodes[path] = {**reply["node"], "status": self._nodes[path]["status"]}
            self._notify("changed")

        self._send("edit_binding", rebound, node=path, direction=direction, port=port, key=key)

    def bindings(self) -> dict[str, dict[str, dict[str, str]]]:
        out: dict[str, dict[str, dict[str, str]]] = {}
        for path, node in self._nodes.items():
            for direction, port, key in node["ports"]:
                if key != port:
                    out.setdefault(path, {"inputs": {}, "outputs": {}})[
                        "inputs" if direction == "in" else "outputs"][port] = key
        return out

    def save_bindings(self):
        raise EditError("bindings are saved beside the tree file: not available when attached")

    # -- approvals -----------------------------------------------------------------
    def pending_approvals(self) -> list[ApprovalRequest]:
        return [ApprovalRequest.model_validate(item) for item in self._approvals]

    def approve(self, approval_id: str, arguments: dict[str, Any] | None = None) -> None:
        """Approve a pending call; with `arguments` (checked here against the tool's schema the server sent,
        and again there against the tool itself) it runs with those."""
        if arguments is not None:
            self.check_arguments(self._request(approval_id), arguments)
        self._send("approve", approval=approval_id, arguments=arguments)
        self._say("approval sent")

    def check_arguments(self, request: ApprovalRequest, arguments: Any) -> None:
        """`EditError` naming the argument when `arguments` do not fit the waiting tool's schema."""
        if not isinstance(arguments, dict):
            raise EditError(f"tool '{request.tool}': arguments must be a JSON object")
        parameters = next((item.get("parameters") for item in self._approvals if item["id"] == request.id), None)
        if parameters is None:
            return  # the server does not know the tool either: the executor checks the arguments when it runs
        try:
            check_arguments(request.tool, schema_validator(parameters), arguments)
        except ToolError as exc:
            raise EditError(str(exc)) from None

    def _request(self, approval_id: str) -> ApprovalRequest:
        for request in self.pending_approvals():
            if request.id == approval_id:
                return request
        raise EditError(f"no pending approval {approval_id!r}")

    def deny(self, approval_id: str, reason: str) -> None:
        self._send("deny", approval=approval_id, reason=reason or "denied in the studio")
        self._say("denial sent")


__all__ = ["Attached", "RemoteFrame", "RemoteSession"]
