"""`Debugger`: one debugged run, written once for every front end.

It steps a `ReactiveRunner` (a tick, or into the next node), continues it to a breakpoint,
pauses it, keeps the breakpoints (node before / node after / event / condition, one
semantics: `runtime.debug.breakpoints`), edits state and port bindings (with their checks),
answers approvals, restores a checkpoint onto a new branch (replay, fork), takes over a run
another process left waiting for an approval (`take_over`), and holds a finished run for a
front end that asked. It knows nothing of screens or sockets:

- a local studio session drives it in its own process (`await debugger.step()`, ...);
- the debug server (`runtime.debug.server`) lets it host the agent's own run (`run()`): free
  at full speed while nobody is attached, and, while a front end is attached, held between
  the commands it sends over the protocol, which are these same methods.

So a local and an attached studio stop at the same places by construction. Listeners added with
`add_listener(fn)` are called as `fn(kind, data)`: "changed" (run state or message), "tick"
(a completed tick's `TickReport`, to a listener added with `ticks=True`), "subtick" (a swarm agent's), "breakpoints" (the list
changed), "approvals" (one asked or answered), "starting" / "started" (a run begins),
"restored" (a replay or fork); hosting: "held" (a `Stop` the run waits at for a command),
"stopped" (a stop at the run's last tick, said, not held), "resumed" and "finished".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from py_trees.common import Status

from ..engine.behaviour import AsyncBehaviour, JianmuNodeMixin
from ..engine.events import STATE_CHANGED, EventType, RuntimeEvent
from ..engine.runner import ReactiveRunner, TickReport
from ..guard.approval import ApprovalError
from ..memory.checkpoint import CheckpointError, CheckpointInfo, IOReplayer, StoreError
from ..memory.checkpoint.waiting import ResumePoint
from ..memory.checkpoint.whatif_marks import CallRef, Mark
from ..model.errors import ModelError
from ..state import InteractionKeys, StateValidationError
from .breakpoints import NODE_MOMENTS, Breakpoint, BreakpointError, Condition, check_names
from .children import SwarmChildren, refused_moment, split_child_path, swarm_of
from .edits import (
    EditRefused,
    NotPaused,
    StateFacts,
    check_binding_key,
    check_binding_type,
    check_port,
    check_state_key,
    check_tool_arguments,
)
from .node_marks import check_moment, toggle_node_breakpoint
from .resend import endpoint_of, resend
from .stepped import stepped
from .stops import RunState, Stop
from .waiting import in_flight, waiting_for
from .whatif import WhatIf

_WATCHED = frozenset({EventType.NODE_ERROR, EventType.STATE_CHANGED})  # events it acts on itself
NO_STORE = "this run records no checkpoints: give its runner a checkpoint store (make_runner(checkpointer=store))"
APPROVAL_RESOLVED = "approval resolved: continue or step"
MAX_BREAKPOINTS = 1_000  # each added one re-syncs the others, and every condition is evaluated at each change of
# state: a breakpoints file (or a client) with 20,000 held `run` 96 s before its first tick, 200,000 for hours
YIELD_EVERY = 0.005  # seconds a continuing run of plain nodes ticks before it lets the loop run (views, a server)
Listener = Callable[[str, Any], None]


def _preview(value: Any, limit: int = 200) -> str:
    """A value as a `state.edited` event shows it: short, and a text a store can keep (a lone surrogate
    as its escape: the value an edit replaces may be one the store refused, and the event is stored)."""
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    text = text.encode("utf-8", "backslashreplace").decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def waited_for(request: Mapping[str, Any]) -> str:
    """One pending request as the status line names it: `approval of calculator at Calc/tools`."""
    tool = (request.get("payload") or {}).get("tool")
    return f"{request.get('kind')}{f' of {tool}' if tool else ''} at {request.get('node')}"


class Debugger:
    def __init__(self, runner: ReactiveRunner, *, agent: Any = None, breakpoints: list[Breakpoint] | None = None):
        """`agent`: the `Agent` whose `failure()` explains a failed run (None: the runner's tree read as one);
        `breakpoints`: a list to keep using (a restarted run keeps the last one's)."""
        self.runner = runner
        self.agent = agent
        self.breakpoints: list[Breakpoint] = breakpoints if breakpoints is not None else []
        self._next_id = 1 + max((bp.id for bp in self.breakpoints), default=0)
        for bp in self.breakpoints:
            bp.id = bp.id or self._take_id()
        self.run_state = RunState.READY
        self.message = ""
        self.last_stop: Stop | None = None
        self.last_report: TickReport | None = None
        self._listeners: tuple[Listener, ...] = ()
        self._tick_listeners: tuple[Listener, ...] = ()  # those told each tick's report (it then has its detail)
        self._pause = asyncio.Event()
        self._event_hits: list[Breakpoint] = []
        self._divergence: str | None = None
        self._child_hit: Stop | None = None
        self._moving = False  # a step or a continue is under way: the swarm's agents run too
        self._unwatch: list[Callable[[], Any]] = []
        self._events: Any = None  # the event subscription (its types follow the event breakpoints)
        self.children: SwarmChildren | None = None  # a swarm's agents, while it watches the run
        self._swarm = False  # the run it watches has a swarm (`children` then looks for new agents each tick)
        # hosting the agent's own run (the debug server): see `run()`
        self.attached = False  # a front end drives the hosted run
        self.hold_end = False  # it asked to find the run held at its end
        self.hold_end_seconds: float | None = None  # how long at most (None: until it continues or leaves)
        self.held: Stop | None = None  # where the hosted run waits for a command
        self._command: str | None = None
        self._commanded = asyncio.Event()
        self._free = False  # `runner.run()` drives the hosted run, nobody's commands
        self._answering = False  # the hosted run waits for an approval's answer
        self._ran = 0  # ticks the hosted run made (for its `max_ticks`)
        self._async_of: object = None  # the `runner.nodes` `_async` was found in
        self._async = False

    # -- listeners -------------------------------------------------------------------------
    def add_listener(self, listener: Listener, *, ticks: bool = True) -> Callable[[], None]:
        """`ticks=False`: a listener that ignores "tick" (the debug server's, which has the runner's hook):
        a continue nobody reads the reports of ticks as `runner.run()` does, without their detail."""
        self._listeners = (*self._listeners, listener)
        if ticks:
            self._tick_listeners = (*self._tick_listeners, listener)
        return lambda: self._remove_listener(listener)

    def _remove_listener(self, listener: Listener) -> None:
        self._listeners = tuple(known for known in self._listeners if known is not listener)
        self._tick_listeners = tuple(known for known in self._tick_listeners if known is not listener)

    def _notify(self, kind: str, data: Any = None) -> None:
        for listener in self._tick_listeners if kind == "tick" else self._listeners:
            listener(kind, data)

    def say(self, message: str) -> None:
        """Tell whoever drives it something (the run state unchanged)."""
        self._set_state(self.run_state, message)

    def _set_state(self, state: RunState, message: str | None = None) -> None:
        if state == RunState.SUSPENDED and self.run_state != RunState.SUSPENDED:  # as `runner.run()` says it: the
            self.runner.event_bus.publish(EventType.RUN_SUSPENDED,                    # store keeps it
                                          {"pending": self.runner.interaction.pending()})
        self.run_state = state
        if message is not None:
            self.message = message
        self._notify("changed")

    # -- watching the run: events, approvals, a swarm's agents ------------------------------
    def watch(self) -> None:
        """Subscribe to what a debugger acts on (events its breakpoints name, approvals, agents)."""
        if self._unwatch:
            return
        runner = self.runner
        self.children = children = SwarmChildren(runner, self._on_child_tick)
        self._swarm = swarm_of(runner) is not None  # as the children found it: its agents watched from their start
        self._unwatch = [self._unsubscribe, children.close, self._forget_children]
        self._subscribe()
        approvals = runner.context.approval_manager
        if approvals is not None:
            self._unwatch.append(approvals.on_change(lambda request: self._notify("approvals", request)))

    def unwatch(self) -> None:
        for undo in self._unwatch:
            undo()
        self._unwatch = []

    def _forget_children(self) -> None:
        self.children, self._swarm = None, False

    def _release_children(self) -> None:
        if self.children is not None:
            self.children.release()

    def _subscribe(self, *, state: bool = True) -> None:
        """Events of the types it acts on and of those its event breakpoints name: a type nobody
        subscribes to is never built. Without `state`, no `state.changed` but for an event breakpoint
        (`_continuing`)."""
        self._unsubscribe()
        types = (_WATCHED if state else _WATCHED - {STATE_CHANGED}) | {
            bp.event_type for bp in self.breakpoints if bp.kind == "event"}
        self._events = self.runner.event_bus.subscribe(self._on_event, types=types)

    def _unsubscribe(self) -> None:
        if self._events is not None:
            self._events.close()
            self._events = None

    def _on_event(self, event: RuntimeEvent) -> None:
        kind = event.type
        if kind == STATE_CHANGED:  # a module constant: every state write comes here, each tick's too
            if InteractionKeys.PENDING in event.payload.get("keys", ()):  # asked between two steps: say so then
                with contextlib.suppress(RuntimeError):  # (no loop runs: nothing is asked between steps)
                    asyncio.get_running_loop().call_soon(self._noticed_interaction)
        elif kind == EventType.NODE_ERROR and event.payload.get("error", "").startswith("ReplayDivergence"):
            self._divergence = event.payload["error"]
            self.runner.cut_steps()  # a continue stops after this tick
        for bp in self.breakpoints:
            if bp.hit_by_event(event):
                self._event_hits.append(bp)

    def _noticed_interaction(self) -> None:
        """A request made after the step that led to it (a tool's approval, asked while its node runs
        on): paused, the run is now suspended, which is said at once, not at the next command.
        Continuing, the loop stops on it itself."""
        if self.run_state == RunState.PAUSED and self.runner.suspended:
            self._set_state(RunState.SUSPENDED, self.suspension_message())

    def suspension_message(self) -> str:
        kinds = ", ".join(map(waited_for, self.runner.interaction.pending().values()))
        return f"suspended: waiting for {kinds or 'input'}"

    # -- the nodes, a swarm's agents' too (`@agent/path`) ------------------------------------
    def locate(self, path: str) -> tuple[ReactiveRunner, str]:
        """The runner a node path belongs to (the host's, or a swarm agent's) and its path there."""
        if split_child_path(path) is None:
            return self.runner, path
        found = self.children.resolve(path) if self.children is not None else None
        if found is None:
            raise EditRefused(f"no node at path {path!r:.80}")
        return found

    def node_at(self, path: str) -> Any:
        runner, inner = self.locate(path)
        try:
            return runner.nodes[inner]
        except KeyError:
            raise EditRefused(f"no node at path {path!r:.80}") from None

    # -- breakpoints ---------------------------------------------------------------------
    def _take_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def _add(self, bp: Breakpoint) -> Breakpoint:
        if len(self.breakpoints) >= MAX_BREAKPOINTS:
            raise BreakpointError(f"there are {MAX_BREAKPOINTS:,} breakpoints already, the most a run takes: "
                                  "delete some first")
        bp.id = self._take_id()
        self.breakpoints.append(bp)
        self._breakpoints_changed()
        return bp

    def add_breakpoint(self, bp: Breakpoint) -> Breakpoint:
        """Add one breakpoint (as `from_json` read it), checked as the `add_*` methods check theirs."""
        if bp.kind == "node":
            return self.add_node_breakpoint(bp.node, bp.on, enabled=bp.enabled)
        if bp.kind == "event":
            return self.add_event_breakpoint(bp.event_type, enabled=bp.enabled)
        return self.add_condition_breakpoint(bp.condition.source, enabled=bp.enabled)

    def toggle_node_breakpoint(self, path: str, on: str = "before") -> bool:
        """Add or remove a node breakpoint, as its mark in the tree shows (`node_marks`)."""
        self.node_at(path)
        return toggle_node_breakpoint(self, path, on)

    def add_node_breakpoint(self, path: str, on: str = "before", *, enabled: bool = True) -> Breakpoint:
        """Stop before the node runs (`before`, the default) or after its status changes (`after`)."""
        if on not in NODE_MOMENTS:
            raise BreakpointError(f"a node breakpoint stops 'before' the node runs or 'after' it changes, not {on!r}")
        try:
            self.node_at(path)
        except EditRefused:
            raise BreakpointError(f"no node at path {path!r:.80}") from None
        if (refused := refused_moment(path, on)) is not None:
            raise BreakpointError(refused)
        return self._add(Breakpoint("node", node=path, on=on, enabled=enabled))

    def add_event_breakpoint(self, event_type: str, *, enabled: bool = True) -> Breakpoint:
        event_type = str(event_type or "").strip()
        if not event_type:
            raise BreakpointError("an event breakpoint needs an event type, for example tool.call.failed")
        return self._add(Breakpoint("event", event_type=event_type, enabled=enabled))

    def add_condition_breakpoint(self, expression: str, *, enabled: bool = True) -> Breakpoint:
        """A condition over state; its names must be state fields, keys or namespaces of the tree. It
        fires when it *becomes* true: not at once if it holds now."""
        condition = Condition(str(expression or ""))
        sm = self.runner.state_manager
        check_names(condition, {*sm.schema.model_fields, *sm.view(None),
                                *(ns.split(".")[0] for ns in StateFacts.of(self.runner).namespaces)})
        bp = Breakpoint("condition", condition=condition, enabled=enabled)
        bp.arm(self._state())  # validates it now, and fires on the next change
        return self._add(bp)

    def set_breakpoint(self, bp: Breakpoint, *, enabled: bool | None = None, on: str | None = None) -> None:
        """Enable or disable a breakpoint, or switch a node breakpoint between before and after."""
        check_moment(bp, on)
        if on is not None:
            bp.on = on
        if enabled is not None:
            if enabled and not bp.enabled:
                bp.arm(self._state())
            bp.enabled = enabled
        self._breakpoints_changed()

    def remove_breakpoint(self, bp: Breakpoint) -> None:
        if bp in self.breakpoints:
            self.breakpoints.remove(bp)
            self._breakpoints_changed()

    def breakpoint(self, breakpoint_id: Any) -> Breakpoint:
        """The breakpoint with this id; `BreakpointError` when there is none."""
        for bp in self.breakpoints:
            if bp.id == breakpoint_id:
                return bp
        raise BreakpointError(f"no breakpoint {breakpoint_id!r}")

    def _breakpoints_changed(self) -> None:
        self._sync_stops()
        if self._events is not None:
            self._subscribe()
        self._notify("breakpoints")

    def _sync_stops(self) -> None:
        """The runner stops before the nodes of enabled before-breakpoints (its node boundaries), and
        before the root while a front end takes over a run `runner.run()` drives (`run()`)."""
        paths = {bp.node for bp in self.breakpoints if bp.enabled and bp.kind == "node"
                 and bp.on == "before" and split_child_path(bp.node) is None}
        if self._free and self.attached:
            paths.add(self.runner.path_of(self.runner.root))
        self.runner.stop_before = paths

    def _state(self) -> dict[str, dict[str, Any]]:
        sm = self.runner.state_manager
        return {ns or "": sm.view(ns) for ns in sm.namespaces()}

    # -- running ---------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self.run_state.busy

    def begin(self, input_data: Mapping[str, Any] | None = None) -> None:
        """Start the run as `runner.run()` starts one, without ticking: a fresh run (a new run id, the
        input written: state at tick 0, whose `run.started` saves the input's checkpoint), or the
        input added to a run that carries on (held, or RUNNING)."""
        runner = self.runner
        fresh = runner.run_id is None or (runner.status != Status.RUNNING and runner.paused_at is None)
        if fresh:
            runner.start_fresh(input_data)
        elif input_data:
            runner.state_manager.update(dict(input_data), runner.input_namespace)
        self._notify("starting")
        runner.event_bus.publish(EventType.RUN_STARTED, {"fresh": fresh, "tick": runner.tick_count})
        for bp in self.breakpoints:  # a condition fires when it becomes true in this run
            bp.arm(self._state())
        self._sync_stops()
        self._notify("started")

    def refusal(self) -> str | None:
        """Why the run cannot move now (busy, finished, suspended), or None."""
        if self.busy:
            return "running: pause first"
        if self.runner.finished:
            return "the run has finished: restart it, or replay or fork a checkpoint"
        if self.runner.suspended:
            return self.suspension_message()
        return None

    def _refused(self) -> bool:
        """Stop where it stands and say why, if it cannot move (its end, a suspension)."""
        refusal = self.refusal()
        if refusal is None or self.busy:
            return refusal is not None
        self._settle(Stop("finished" if self.runner.finished else "suspended", refusal))
        return True

    def _ensure_started(self) -> None:
        if self.runner.run_id is None:
            self.begin()
        self._sync_stops()

    @contextlib.contextmanager
    def _continuing(self) -> Iterator[None]:
        """While it continues, no `state.changed` comes to `_on_event`, which looks at each only for a
        request asked between two steps: continuing, the run stops at a suspension itself (a call a
        state write saved, ~0.3 us of a small tree's ~30 us tick)."""
        if self._events is not None:
            self._subscribe(state=False)
        try:
            yield
        finally:
            if self._events is not None:  # (not unwatched meanwhile: the front end left)
                self._subscribe()

    @contextlib.contextmanager
    def _host_moving(self) -> Iterator[None]:
        """While the host runs (a step, a continue) its agents run, the held ones released; they are
        held again at the end of their next tick once it stops (`_on_child_tick`)."""
        self._moving = True
        self._release_children()
        try:
            yield
        finally:
            self._moving = False

    async def step(self) -> TickReport | None:
        """One tick (the rest of a tick held before a node), waiting for async work first if nothing
        can run; None if it cannot step (the reason is said)."""
        report = await self._tick(into=False)
        if report is not None:
            self._settle(self._after_tick(report) or Stop("step", stepped(report)))
        return report

    async def step_into(self) -> TickReport | None:
        """To the next node boundary inside the tick (before that node runs), or to the tick's end."""
        report = await self._tick(into=True)
        if report is not None:
            where = report.paused_at
            self._settle(self._after_tick(report) or (
                Stop("step", f"before {where.path} (tick {where.tick}, not run yet)", node=where.path) if where
                else Stop("step", stepped(report))))
        return report

    async def _tick(self, *, into: bool) -> TickReport | None:
        """The runner's step (or step into) once it can run; None when it cannot move or was paused first."""
        if self._refused():
            return None
        self._ensure_started()
        self._pause.clear()
        with self._host_moving():
            if not await self._wait_until_ready():
                self._settle(Stop("paused", "paused"))
                return None
            if self._refused():  # what woke it asked for input: a tick would only find it suspended
                return None
            return await (self.runner.step_into() if into else self.runner.step())

    async def continue_(self, max_ticks: int | None = None) -> Stop:
        """Tick until a breakpoint, a suspension, the end, `max_ticks` ticks, or `pause()`. A tick whose
        report nobody reads (no listener of ticks, no after-breakpoint) is ticked as `runner.run()` ticks
        it, without its detail (`_detailed`); a breakpoint before a node costs only its node's tick."""
        if self.busy:
            return Stop("error", "already running")
        self._ensure_started()
        runner, pause = self.runner, self._pause
        pause.clear()
        self._set_state(RunState.RUNNING, "running")
        reason = Stop("paused", "paused")
        ticks = 0
        yield_at = time.perf_counter() + YIELD_EVERY
        try:
            with self._host_moving(), self._continuing():
                while True:
                    if max_ticks is not None and ticks >= max_ticks:
                        reason = Stop("paused", f"stopped after --max-ticks {max_ticks}")
                        break
                    if runner.finished:
                        reason = Stop("finished", f"finished: {runner.status.value}")
                        break
                    if runner.suspended:
                        reason = Stop("suspended", self.suspension_message())
                        break
                    if not runner.can_tick_now or pause.is_set():
                        if not await self._wait_until_ready():
                            break
                        if runner.suspended:  # what woke it asked for input: a tick would only find it so
                            reason = Stop("suspended", self.suspension_message())
                            break
                    if self.breakpoints and (hit := self._hit_between_ticks()) is not None:
                        reason = hit  # work that finished after the last tick caused it: stop there
                        break
                    if self._plain():  # nothing to look at between ticks: the runner ticks on until the next yield
                        opened, resumed = runner.tick_count, runner.paused_at is not None
                        report = await runner.step(detailed=False, until=yield_at,
                                                   most=None if max_ticks is None else max_ticks - ticks)
                        ticks += runner.tick_count - opened + resumed  # (a held tick was counted as it opened)
                    else:
                        report = await runner.step(detailed=self._detailed())
                        ticks += 1
                    hit = self._after_tick(report)
                    if hit is not None:
                        reason = hit
                        break
                    if self._has_async_nodes() or time.perf_counter() >= yield_at:
                        await asyncio.sleep(0)  # let the views draw (a server send) and a pause come in
                        yield_at = time.perf_counter() + YIELD_EVERY
        except Exception as exc:
            reason = Stop("error", f"{type(exc).__name__}: {exc}")
        if self._child_hit is not None:  # a swarm agent is held at a breakpoint
            reason, self._child_hit = self._child_hit, None
        self._settle(reason)
        return reason

    def _plain(self) -> bool:
        """Whether nothing but the run's own state can stop a continue between two ticks: no breakpoint,
        no listener of ticks, no swarm, no async node (the loop then runs after every tick anyway).
        Asked once between two yields to the loop: what changes these comes in while the loop runs."""
        return not (self.breakpoints or self._tick_listeners or self._swarm or self._has_async_nodes())

    def _detailed(self) -> bool:
        """Whether the next tick's report must carry its record and changes: a listener reads every
        report, or an enabled after-breakpoint checks them (`Breakpoint.hit_by_tick`)."""
        return bool(self._tick_listeners) or any(bp.checks_ticks for bp in self.breakpoints)

    def _has_async_nodes(self) -> bool:
        """Whether the tree holds async nodes (a swarm's among them): their work, and a swarm's agents,
        move only while the loop runs, so a continue lets it run after every tick, not every
        `YIELD_EVERY` (a yield costs as much as a small tree's tick)."""
        nodes = self.runner.nodes
        if self._async_of is not nodes:  # re-indexed: a subtree compiled
            self._async_of = nodes
            self._async = any(isinstance(node, AsyncBehaviour) for node in nodes.values())
        return self._async

    async def _wait_until_ready(self) -> bool:
        """Wait for the runner's wake, unless paused first. False when paused."""
        if self.runner.can_tick_now:
            return not self._pause.is_set()
        # (continuing: the state says it waits; a step keeps its state and says what it waits for)
        self._set_state(RunState.WAITING if self.run_state == RunState.RUNNING else self.run_state,
                        waiting_for(self.runner.nodes))
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

    def waiting_on(self) -> list[str]:
        """Async nodes whose work is in flight (what the tree waits for)."""
        return in_flight(self.runner.nodes)

    def pause(self) -> None:
        """Stop a continuing run at its next tick boundary (a wait for async work ends at once)."""
        self._pause.set()
        self.runner.cut_steps()  # (the runner ticking on: `_plain`)
        if self._free and self.attached:  # `runner.run()` waits for a wake: it stops before the next tick
            self.runner.signal()

    def _after_tick(self, report: TickReport) -> Stop | None:
        if self._swarm:
            self.children.runners()  # agents spawned by this tick are watched from now on
        if not report.completed:  # held before a node: its changes come when the tick ends
            self._notify("changed")
            path = report.paused_at.path
            hits = [bp for bp in self.breakpoints if bp.stops_before(path)]
            return self._hit(hits[0], node=path) if hits else None
        self.last_report = report
        if self._tick_listeners:
            self._notify("tick", report)
        if self._divergence is not None:
            message, self._divergence = self._divergence, None
            self._event_hits.clear()
            return Stop("divergence", message)
        if not self.breakpoints:  # none can stop it (an event breakpoint's hits need one)
            return None
        hit = self._event_hit()
        if hit is not None:
            return hit
        for bp in self.breakpoints:
            if bp.hit_by_tick(report):
                return self._hit(bp)
        return self._condition_hit()

    def _hit_between_ticks(self) -> Stop | None:
        """An event or condition breakpoint whose cause happened after the last tick's end (async work
        finishing while the tree waited): the run stops before ticking again, at the tick it belongs to."""
        return self._event_hit() or self._condition_hit()

    def _event_hit(self) -> Stop | None:
        if not self._event_hits:
            return None
        bp = self._event_hits[0]
        self._event_hits.clear()
        return self._hit(bp)

    def _condition_hit(self) -> Stop | None:
        conditions = [bp for bp in self.breakpoints if bp.enabled and bp.kind == "condition"]
        if conditions:
            snapshot = self._state()
            for bp in conditions:
                try:
                    if bp.hit_by_state(snapshot):
                        return self._hit(bp)
                except BreakpointError as exc:
                    bp.enabled = False
                    self._breakpoints_changed()
                    return Stop("error", f"{exc} (breakpoint disabled)", breakpoint=bp)
        return None

    def _hit(self, bp: Breakpoint, node: str | None = None) -> Stop:
        bp.hits += 1
        return Stop("breakpoint", f"breakpoint: {bp.label}", node=node, breakpoint=bp)

    def _settle(self, reason: Stop) -> None:
        reason.tick = self.runner.tick_count
        if reason.node is None and self.runner.paused_at is not None:
            reason.node = self.runner.paused_at.path
        self.last_stop = reason
        if self.runner.finished:
            state = RunState.FINISHED
        elif self.runner.suspended:
            state = RunState.SUSPENDED
        else:
            state = RunState.PAUSED
        self._set_state(state, reason.message)

    # -- a swarm's agents -----------------------------------------------------------------
    def _on_child_tick(self, agent_id: str, report: TickReport) -> bool:
        """A swarm agent ticked. True holds the agent until the host moves again: while the host is
        held (paused, between steps) so are its agents, as a debugger stops every thread; while it
        moves (a step, a continue) they run with it, and a continuing host stops for a breakpoint
        of their nodes."""
        self._notify("subtick", report)
        if not self._unwatch:  # nobody debugs the run (a hosted run nobody is attached to)
            return False
        if not self._moving:
            return True
        if not self.busy:  # a step: a breakpoint waits for a continue
            return False
        hits = [bp for bp in self.breakpoints if bp.hit_by_tick(report)]
        if not hits:
            return False
        self._child_hit = self._hit(hits[0])
        self._pause.set()
        return True

    # -- hosting the agent's own run (the debug server) ------------------------------------
    def attach(self, *, paused: bool = False, hold_end: bool = False) -> None:
        """A front end takes over the hosted run: it holds where its breakpoints and commands say.
        `paused`: hold it as soon as it can be (at its start when it has not started yet);
        `hold_end`: hold it at its end, to be read, replayed or forked, until it continues or leaves."""
        self.attached, self.hold_end = True, hold_end
        self._pause.clear()
        self._command = None if paused else "continue"
        self.watch()
        self._sync_stops()  # a run `runner.run()` drives stops before its next tick, for the handover
        if paused and self._free:
            self.runner.signal()  # ... now, even when it waits for async work

    def detach(self) -> None:
        """The front end is gone: the run goes on as if nobody had come (a held run released)."""
        self.attached = False
        self.unwatch()
        self._pause.set()  # a continue under way ends; the run goes on free
        self.runner.cut_steps()
        self._commanded.set()
        self._sync_stops()

    @property
    def commanded(self) -> bool:
        """Whether the hosted run waits for a command: held, or suspended until an answer (a command
        then says it is suspended)."""
        return self.held is not None or self._answering

    def command(self, kind: str) -> None:
        """`step`, `step_into` or `continue` the hosted run, which must wait for one (`commanded`);
        a continue while it runs cancels a pause asked for."""
        if not self.commanded:
            if kind == "continue":
                self._pause.clear()
            return
        self._command = kind
        self._commanded.set()

    def request_pause(self) -> bool:
        """Pause the hosted run at its next tick boundary; True when it is held already."""
        if self.held is not None:
            return True
        self._command = None
        self.pause()
        return False

    async def run(self, max_ticks: int | None = None, *, input_data: Mapping[str, Any] | None = None) -> Status:
        """`runner.run()`, held wherever an attached front end says: at full speed, with nothing added
        to the runner, while nobody is attached; tick by tick under its commands while one is; at a
        suspension until it answers; at the end for one that asked (`hold_end` seconds at most, given
        to `hold`). Returns the root's status like `runner.run()`."""
        runner = self.runner
        self._ran = 0
        if self.attached:
            self.begin(input_data)
        else:
            await self._run_free(max_ticks, input_data)
        while True:
            left = None if max_ticks is None else max_ticks - self._ran
            if left is not None and left <= 0:
                return runner.status
            if not self.attached:
                if runner.paused_at is None and (runner.finished or runner.suspended):
                    return runner.status
                await self._run_free(left)
                if not self.attached:
                    return runner.status
                continue
            if self._command is not None:  # a step or a continue, held where it stops
                stop = await self._obey(left)
                if stop.kind == "finished":  # said by "finished", then held (or returned) below
                    continue
                if runner.finished or runner.suspended or stop.kind == "refused":
                    self._notify("stopped", stop)  # said, not held: the end or the suspension is what waits next
                else:
                    await self.hold(stop)
            elif runner.finished:
                self._notify("finished")
                if not await self._held_at_end(max_ticks is None):
                    return runner.status
            elif runner.suspended:
                if await self._until_answered() and self._command is None:
                    await self.hold(Stop("paused", APPROVAL_RESOLVED, runner.tick_count))
            else:  # where it stands: at its start, or where it was taken over
                stop = self.last_stop
                await self.hold(stop if stop is not None and stop.kind == "paused"
                                else Stop("paused", f"paused before tick {runner.tick_count + 1}", runner.tick_count))

    async def _run_free(self, max_ticks: int | None, input_data: Mapping[str, Any] | None = None) -> None:
        """`runner.run()` itself until it returns: the end, a suspension, `max_ticks`, or a front end
        that attached meanwhile (it stops before its next tick's root, `_sync_stops`, and hands over)."""
        runner = self.runner
        run_id, tick = runner.run_id, runner.tick_count
        self._free = True
        self._sync_stops()
        self._set_state(RunState.RUNNING)
        try:
            await runner.run(max_ticks, input_data=input_data)
        finally:
            self._free = False
            self._sync_stops()
            self._ran += runner.tick_count - (tick if runner.run_id == run_id else 0)
        # as `runner.run()` left it (it said run.suspended itself); a front end that came takes it from here
        self.run_state = (RunState.FINISHED if runner.finished else RunState.SUSPENDED if runner.suspended
                          else RunState.PAUSED)
        if runner.paused_at is not None:
            self.last_stop = Stop("paused", "paused", runner.tick_count, node=runner.paused_at.path)
        self._notify("changed")

    async def _obey(self, left: int | None) -> Stop:
        """Do the command the front end sent; the stop it made (`refused`: it could not move, say why)."""
        command, self._command = self._command, None
        tick, self.last_stop = self.runner.tick_count, None
        if command == "step":
            await self.step()
        elif command == "step_into":
            await self.step_into()
        else:
            await self.continue_(left)
        self._ran += self.runner.tick_count - tick
        return self.last_stop or Stop("refused", self.message, self.runner.tick_count)

    async def hold(self, stop: Stop, timeout: float | None = None) -> bool:
        """Wait at `stop` for the front end's next command (or for it to leave); False after `timeout`
        seconds with neither."""
        if not self.attached:
            return True
        self.held = stop
        self._commanded.clear()
        self._notify("held", stop)
        try:
            await asyncio.wait_for(self._commanded.wait(), timeout)
        except TimeoutError:
            return False
        finally:
            self.held = None
            self._release_children()  # an agent held with the host carries on with it
        if self.attached:
            self._notify("resumed", self.runner.tick_count)
        return True

    async def _held_at_end(self, unbounded: bool) -> bool:
        """Hold the finished run for a front end that asked; False when it returns to its caller now
        (nobody asked, it continued, it left, or `hold_end` seconds passed: `hold_end_seconds`)."""
        if not (self.hold_end and unbounded):
            return False
        status = self.runner.status.value
        held = await self.hold(Stop("finished", f"finished: {status} (held for the debugger until it continues "
                                                "or detaches)", self.runner.tick_count), self.hold_end_seconds)
        if not held or not self.attached:
            return False
        return not (self.runner.finished and self._command == "continue")

    async def _until_answered(self) -> bool:
        """Wait until the suspended run is answered (no request pending), the front end left or sent a
        command; not merely until it could tick: asking woke it, and that tick would only find it
        suspended again. True when answered with the front end still there."""
        runner, loop, answered = self.runner, asyncio.get_running_loop(), asyncio.Event()

        def check(_change: Any = None) -> None:
            if not runner.suspended:
                loop.call_soon_threadsafe(answered.set)

        unsubscribe = runner.state_manager.subscribe(check)
        check()
        self._commanded.clear()
        self._answering = True
        gone, ready = asyncio.ensure_future(self._commanded.wait()), asyncio.ensure_future(answered.wait())
        try:
            await asyncio.wait((gone, ready), return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._answering = False
            unsubscribe()
            gone.cancel()
            ready.cancel()
        return self.attached and not runner.suspended

    # -- edits ------------------------------------------------------------------------------
    def checked_state_edit(self, namespace: str | None, key: str, value: Any) -> tuple[str | None, Any]:
        """(namespace, value) of an edit to `key` as the schema takes it; `EditRefused` saying why not."""
        if self.busy:
            raise NotPaused("pause the run before editing state")
        namespace = check_state_key(StateFacts.of(self.runner), namespace, key)
        try:
            return namespace, self.runner.state_manager.validate(key, value, namespace)
        except (StateValidationError, ValueError) as exc:
            raise EditRefused(str(exc)) from None

    def edit_state(self, namespace: str | None, key: str, value: Any) -> None:
        """Set one state value now (the next tick sees it), recorded as a `state.edited` event."""
        namespace, value = self.checked_state_edit(namespace, key, value)
        self._ensure_started()  # an edit before the first tick edits this run's input, not a state it resets
        sm = self.runner.state_manager
        old = sm.get(key, namespace)
        sm.load({key: value}, namespace, signal=True)
        self.runner.event_bus.publish(EventType.STATE_EDITED, {"namespace": namespace, "key": key,
                                                               "old": _preview(old), "new": _preview(value)})
        self._notify("changed")

    def checked_binding(self, path: str, direction: Any, port: Any, key: Any) -> tuple[JianmuNodeMixin, str]:
        """The node and the normalised key of a rebinding; `EditRefused` saying what does not fit.

        A key is bindable when the schema declares it, the state already holds it, the runtime
        owns it (`StateKeys`), or it is `<namespace>.<field>` for a known namespace; and, when the
        schema types both, its type is the port's.
        """
        node = self.node_at(path)
        if not isinstance(node, JianmuNodeMixin):
            raise EditRefused(f"{path} is a plain py_trees node: it has no ports")
        check_port(path, direction, port, [[way, name, None] for way, declared, bound in (
            ("in", node.input_ports, node.input_bindings), ("out", node.output_ports, node.output_bindings))
            for name in dict.fromkeys([*declared, *bound])])
        facts = StateFacts.of(self.runner)
        key = check_binding_key(facts, key, getattr(node, "namespace", None))
        check_binding_type(facts, port, (node.resolve_input_port if direction == "in" else node.resolve_output_port)(port),
                           key)
        return node, key

    def edit_binding(self, path: str, direction: str, port: str, key: str) -> None:
        """Rebind one port; it takes effect at the next tick and is recorded as a `binding.changed` event."""
        if self.busy:
            raise NotPaused("pause the run before rebinding a port")
        node, key = self.checked_binding(path, direction, port, key)
        old = (node.resolve_input_port if direction == "in" else node.resolve_output_port)(port)
        node.bind(**({"inputs": {port: key}} if direction == "in" else {"outputs": {port: key}}))
        self.runner.event_bus.publish(EventType.BINDING_CHANGED,
                                      {"direction": direction, "port": port, "old": old, "new": key}, node=path)
        self._notify("changed")

    def bindings(self) -> dict[str, dict[str, dict[str, str]]]:
        """Every explicit binding of the tree, by node path."""
        out = {}
        for path, node in self.runner.nodes.items():
            if isinstance(node, JianmuNodeMixin) and (node.input_bindings or node.output_bindings):
                out[path] = {"inputs": node.input_bindings, "outputs": node.output_bindings}
        return out

    # -- approvals --------------------------------------------------------------------------
    @property
    def approvals(self) -> Any:
        return self.runner.context.approval_manager

    def pending_approvals(self) -> list[Any]:
        return list(self.approvals.pending()) if self.approvals is not None else []

    def approve(self, approval_id: str, arguments: dict[str, Any] | None = None, reason: str | None = None) -> None:
        """Approve a pending call; with `arguments` (checked against the tool's schema) it runs with those."""
        approvals = self._require_approvals()
        try:
            if arguments is not None:
                check_tool_arguments(self.runner, approvals.get(approval_id), arguments)
            approvals.approve(approval_id, reason, arguments=arguments)
        except ApprovalError as exc:
            raise EditRefused(str(exc)) from None
        self._after_approval()

    def deny(self, approval_id: str, reason: str) -> None:
        try:
            self._require_approvals().deny(approval_id, reason or "denied in the debugger")
        except ApprovalError as exc:
            raise EditRefused(str(exc)) from None
        self._after_approval()

    def check_arguments(self, request: Any, arguments: Any) -> None:
        """`EditRefused` naming the argument when `arguments` do not fit the waiting tool's schema."""
        check_tool_arguments(self.runner, request, arguments)

    def _require_approvals(self) -> Any:
        store, run_id = getattr(self.runner.checkpoints, "store", None), self.runner.run_id
        if store is not None and run_id is not None and store.written_elsewhere(run_id):  # answered twice, run twice
            raise EditRefused(f"run {run_id} was resumed by another process meanwhile: see it with replay")
        if self.approvals is None:
            raise EditRefused("this tree has no approval manager")
        return self.approvals

    def _after_approval(self) -> None:
        if not self.runner.suspended and not self.busy:
            self._set_state(RunState.PAUSED, APPROVAL_RESOLVED)
        else:
            self._notify("changed")

    # -- restore: replay and fork ------------------------------------------------------------
    @property
    def store(self) -> Any:
        """The checkpoint store the run records into; `EditRefused` when it records nowhere."""
        store = getattr(self.runner.checkpoints, "store", None)
        if store is None:
            raise EditRefused(NO_STORE)
        return store

    def replay(self, source: CheckpointInfo) -> str:
        """Re-run from a checkpoint on a new branch (`replay-1`, ...) serving the recorded model and
        tool answers strictly (deterministic, offline); the branch replayed is never appended to."""
        replayer = IOReplayer(self.store, source.run_id, strict=True, source_branch=source.branch)
        self._restore(lambda: self.runner.checkpoints.fork(source.id, prefix="replay"), replayer)
        return self._restored(f"replaying checkpoint {source.id} on {self.branch}: recorded I/O, strict")

    def fork(self, source: CheckpointInfo, state: Mapping[str, Any] | None = None,
             bindings: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None) -> str:
        """A new branch from a checkpoint with state edits (`key` or `ns.key`) and port rebindings
        (`{path: {"inputs": {port: key}, "outputs": ...}}`), checked as live edits are before anything
        changes, serving the recorded model and tool answers where the requests match."""
        state, bindings = dict(state or {}), dict(bindings or {})
        self._check_fork_edits(state, bindings)
        replayer = IOReplayer(self.store, source.run_id, strict=False, source_branch=source.branch)
        self._restore(lambda: self.runner.fork(source.id, state_updates=state, binding_changes=bindings), replayer)
        count = len(state) + sum(len(ports) for change in bindings.values() for ports in change.values())
        return self._restored(f"forked {self.branch} from checkpoint {source.id}"
                              + (f" with {count} edit{'s' if count > 1 else ''}" if count else ""))

    def take_over(self, point: ResumePoint) -> str:
        """Go on live, here, from where a run another process left waiting for an approval stands (its
        last checkpoint, `point`): restored in place (its run and branch) and taken over from its writer,
        so that an answer given now runs the call once (`Agent.resume` does the same in code)."""
        self._restore(lambda: (self.runner.restore(point.checkpoint.id), point.take(self.store)), None)
        return self._restored(f"resumed run {point.checkpoint.run_id} from checkpoint {point.checkpoint.id}")

    def what_if(self, call: CallRef, answer: Any) -> CheckpointInfo:
        """A new branch (`whatif-1`, ...) from just before a recorded model or tool call, serving `answer`
        in its place, the recorded I/O after it where requests match (`runtime.debug.whatif`); returns
        the checkpoint forked from."""
        try:
            what_if = WhatIf(self.store, call, answer)
        except (CheckpointError, StoreError, ValueError) as exc:
            raise EditRefused(f"what if: {exc}") from None
        self._restore(lambda: what_if.fork(self.runner.checkpoints), what_if.replayer)
        self._restored(f"what if: forked {self.branch} from checkpoint {what_if.before.id}, the {call} answered as edited")
        return what_if.before

    async def resend(self, call: CallRef, **edits: Any) -> Mark:
        """Send a recorded model call again as edited (`messages`, `tools`, `parameters`) to its node's
        endpoint, else the one the environment configures; the run is not touched (`runtime.debug.resend`).
        Returns the re-send's mark (the request sent, the recorded answer and the new one)."""
        try:
            node = self.node_at(call.node)
        except EditRefused:
            node = None
        try:
            return await resend(self.store, call, endpoint_of(node), **edits)
        except (CheckpointError, StoreError, ValueError, ModelError) as exc:
            raise EditRefused(f"re-send: {exc}") from None

    @property
    def branch(self) -> str:
        checkpoints = self.runner.checkpoints
        return checkpoints.branch if checkpoints is not None else "main"

    def _check_fork_edits(self, state: dict[str, Any], bindings: dict[str, Any]) -> None:
        """A fork's edits pass the checks live edits pass (`key` global or `ns.key`), before anything changes."""
        facts = StateFacts.of(self.runner)
        by_length = sorted(facts.namespaces, key=len, reverse=True)
        try:
            for qualified in state:
                ns = next((n for n in by_length if str(qualified).startswith(n + ".")), None)
                check_state_key(facts, ns, qualified[len(ns) + 1:] if ns else qualified)
            for path, change in bindings.items():
                if not isinstance(change, Mapping):
                    raise EditRefused(f"{path}: a rebinding is {{inputs: {{port: key}}, outputs: ...}}")
                for field, direction in (("inputs", "in"), ("outputs", "out")):
                    for port, key in (change.get(field) or {}).items():
                        self.checked_binding(str(path), direction, port, key)
        except EditRefused as exc:
            raise EditRefused(f"fork: {exc}") from None

    def _restore(self, action: Callable[[], Any], replayer: IOReplayer | None) -> None:
        """`action` restores a checkpoint live; with a `replayer` the run is served the recorded I/O."""
        if self.busy:
            raise NotPaused("pause the run before replaying or forking")
        try:
            action()
        except (CheckpointError, StoreError, StateValidationError, ValueError) as exc:
            raise EditRefused(str(exc)) from None
        if replayer is not None:
            replayer.attach(self.runner.checkpoints)
            self.runner.context.io_recorder = replayer
        self._event_hits.clear()
        self._divergence = None
        self._pause.clear()
        self._sync_stops()
        self.last_report = None

    def _restored(self, message: str) -> str:
        stop = Stop("paused", message, self.runner.tick_count)
        self.last_stop = stop
        if self.held is not None:
            self.held = stop
        self._set_state(RunState.PAUSED, message)
        self._notify("restored")
        return message

    # -- why it failed -------------------------------------------------------------------------
    def failure(self) -> Any:
        """Why the run failed (`runtime.agent.Failure`: node, error, termination reason), None unless it did."""
        agent = self.agent
        if agent is None:
            from ..agent import Agent

            agent = self.agent = Agent(self.runner.root)
        return agent.failure(self.runner)


__all__ = ["APPROVAL_RESOLVED", "NO_STORE", "Debugger", "RunState", "Stop", "waited_for"]
