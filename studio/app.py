"""`StudioApp` and its main screen: the panes, the keys, and the one-way flow session → panes.

The session calls our listener from inside the run (events at a high rate, one report
per tick); the listener only appends to buffers. A 20 Hz timer drains the buffers and
applies diffs to the panes inside `batch_update()`. Intents that take time (step,
continue, restart, replay, fork) run in one exclusive worker group, and their failures
are reported in one place, `on_worker_state_changed`.
"""

from __future__ import annotations

import contextlib
import signal
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from platformdirs import user_downloads_path
from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.driver import Driver
from textual.screen import Screen
from textual.widget import Widget
from textual.worker import Worker, WorkerState

from runtime.debug.breakpoints import marked_nodes
from runtime.engine.events import EventType, RuntimeEvent
from runtime.engine.runner import TickReport

from . import drawn_text, startup  # noqa: F401 (drawn_text: on import, control characters drawn as pictures)
from .commands import StudioCommands
from .session import DebugSession, EditError, RunState
from .session.api import answered
from .stopping import exit_status, interrupt_session, on_signals
from .widgets.events_pane import EventsPane, filter_example
from .widgets.footer import KeysFooter
from .widgets.node_detail import NodeDetailPane, full_values
from .widgets.state_pane import StatePane
from .widgets.status_line import StatusLine
from .widgets.timeline import Timeline, field_of
from .widgets.tree_pane import TreePane, ticked_paths

if TYPE_CHECKING:
    from .screens.approval import Decision

# The dialogs (studio/screens/) are imported where they open, not here: the first frame shows none of
# them, and with Textual's TextArea and DataTable they were ~20 ms of every launch.

REFRESH_HZ = 20
STEPS_QUEUED = 20  # steps pressed ahead of the one running, at most (a key held down stops there)
# events that change what the panes show even between ticks (an async task writing state)
REDRAW_EVENTS = frozenset({EventType.STATE_CHANGED, EventType.STATE_EDITED, EventType.BINDING_CHANGED})


class MainScreen(Screen):
    """Tree, node detail and state on top; events and timeline below; status line and keys."""

    # Focused as the screen is composed: the first focusable widget (the tree's search box) took the focus
    # first, then the tree from `on_mount`, two restyles of the panes before the first frame.
    AUTO_FOCUS = "#tree-view"

    BINDINGS = [
        Binding("n,f10", "step", "Step", id="step", tooltip="Run one tick (step over)"),
        Binding("s,f11", "step_into", "Step into", id="step-into",
                tooltip="Run to the next node inside the tick, stopping before it runs"),
        Binding("c,f5", "continue", "Continue", id="continue", tooltip="Tick until a breakpoint, a suspension or the end"),
        Binding("p", "pause", "Pause", id="pause", tooltip="Pause a continuing run after the current tick"),
        Binding("b,f9", "toggle_breakpoint", "Breakpoint", id="breakpoint",
                tooltip="Toggle a breakpoint on the selected node (stops before it runs)"),
        Binding("B", "breakpoints", "Breakpoints", id="breakpoints",
                tooltip="Every breakpoint with its hits: add, enable/disable, before/after, delete"),
        Binding("r", "restart", "Restart", id="restart", tooltip="A fresh run of the same tree and input"),
        Binding("e", "edit_bindings", "Bindings", id="edit-bindings",
                tooltip="Edit the selected node's port bindings"),
        Binding("f", "replay_fork", "Replay/fork", id="replay-fork",
                tooltip="Replay or fork from the selected checkpoint"),
        Binding("d", "compare", "Compare", id="compare", show=False,
                tooltip="This branch beside another branch or run: the first divergence, and the state diff of each tick"),
        Binding("m", "model_calls", "Model calls", id="model-calls",
                tooltip="The model calls of the selected node (or of the run): messages, tools, response"),
        Binding("a", "approvals", "Approve", id="approvals", tooltip="Approve or deny a pending tool call"),
        Binding("slash", "filter_events", "Filter", id="filter-events", tooltip="Filter events by type, node, text"),
        Binding("escape", "live", "Live", id="live", tooltip="Leave the past checkpoint, back to the live run"),
        Binding("question_mark", "help", "Help", id="help", tooltip="Keys and what the panes show"),
        Binding("q", "app.quit", "Quit", id="quit", tooltip="Quit the studio"),
    ]

    def __init__(self, session: DebugSession) -> None:
        super().__init__()
        self.session = session
        self._events: list[RuntimeEvent] = []
        self._reports: list[TickReport] = []
        self._dirty = True
        self._shape: tuple = ()
        self._frame_key: tuple = ()
        self._tree_frame: tuple = ()  # the frame the tree pane shows
        self._tree_held = False  # ... a tick held inside (its lines then restated once it ends)
        self._past = False
        self._offered: set[str] = set()
        self._keys: tuple = ()  # which keys the Footer shows (check_action of each)
        self._steps: deque[Callable[[], Awaitable[Any]]] | None = None  # steps pressed while one runs

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Horizontal(id="top"):
            yield TreePane(id="tree")
            with Vertical(id="side"):
                yield NodeDetailPane(id="node-detail")
                yield StatePane(id="state")
        with Horizontal(id="bottom"):
            yield EventsPane(id="events")
            yield Timeline(id="timeline")
        yield KeysFooter()

    def on_mount(self) -> None:
        for selector, title in (("#tree", "tree"), ("#node-detail", "node"), ("#state", "state"),
                                ("#events", "events"), ("#timeline", "timeline")):
            self.query_one(selector).border_title = title
        self.query_one(EventsPane).border_subtitle = "/ to filter"
        self._unlisten = self.session.add_listener(self._on_session)
        follow = getattr(self.session, "follow", None)  # a recording another process still writes
        self._unfollow = follow() if follow is not None else None
        self.set_interval(1 / REFRESH_HZ, self.drain)
        self.drain()
        self.watch(self.query_one(TreePane), "selected", self._show_detail, init=False)
        self.query_one(TreePane).tree.focus()
        self.call_after_refresh(self._keep_tree_out_of_collections)  # once the tree is on screen

    def _keep_tree_out_of_collections(self) -> None:
        """The tree's widgets live as long as its runner: frozen with it once drawn, in the one
        collection the runner would otherwise make as it goes live (it then skips its own); after a
        restart the seam thaws and collects first, so the replaced tree goes. The tree search's index
        is made first, one of those objects (at 100,000 nodes ~60 ms the first key typed paid)."""
        pane = self.query_one(TreePane)
        pane.names()
        startup.resume(pane.node_count)  # collections on again, if opening paused them

    def on_unmount(self) -> None:
        self._unlisten()
        if self._unfollow is not None:
            self._unfollow()

    # -- session → panes -----------------------------------------------------------
    def _on_session(self, kind: str, data: Any) -> None:
        """Called from inside the run: only buffer, never draw here."""
        if kind == "event":
            self._events.append(data)
        elif kind in ("tick", "subtick"):  # subtick: a swarm agent's tick, its paths @agent/…
            self._reports.append(data)
        elif kind == "landed":  # a followed recording grew: the frame's events are read again
            self._frame_key, self._dirty = (), True
        else:
            self._dirty = True

    def drain(self) -> None:
        """Apply everything buffered since the last drain, as diffs, in one batch."""
        events, self._events = self._events, []
        reports, self._reports = self._reports, []
        dirty, self._dirty = self._dirty, False
        if not (events or reports or dirty):
            return
        with self.app.batch_update():
            frame = self.session.frame
            pane = self.query_one(EventsPane)
            if frame.key != self._frame_key:  # another run, branch or checkpoint: its own events
                self._frame_key = frame.key
                pane.show_branch = len(self.session.branches()) > 1
                pane.refilter(pane.filter.text, self.session.frame_events())
                pane.anchor()  # scrolled to the frame's last event
            elif events and self.session.viewing is None:
                pane.add(events)
            if reports or dirty or any(event.type in REDRAW_EVENTS for event in events):
                self._redraw(reports)
        if dirty:
            self._refresh_keys()
            self._offer_approval()

    def _refresh_keys(self) -> None:
        """The Footer again, only if a key came, went or turned on or off (`KeysFooter` changes only
        those; most changes, a step's, leave the same keys)."""
        keys = tuple(self.check_action(binding.action, ()) for binding in Binding.make_bindings(self.BINDINGS))
        if keys != self._keys:
            self._keys = keys
            self.refresh_bindings()

    def _redraw(self, reports: list[TickReport]) -> None:
        session = self.session
        viewing = session.viewing
        frame = session.frame
        self._show_past(viewing is not None)
        self.query_one(StatusLine).show(session)
        tree = self.query_one(TreePane)
        shape = session.tree_shape
        held = frame.held_returns is not None  # paused inside a tick: its record so far, and who is not reached yet
        breakpoints = marked_nodes(session.breakpoints)
        rebuilt = shape != self._shape
        self._shape = shape  # (kept even when equal: a restart's tree of the same paths, not the old tree's nodes)
        if rebuilt:
            tree.sync(session.node_views(), self._ticked(reports))
        elif frame.key != self._tree_frame or held or self._tree_held:  # the same nodes at another moment
            tree.restate(session.node_statuses(), self._ticked(reports), breakpoints, session.node_view, frame.pending)
        elif not tree.apply(reports, breakpoints, session.node_view):  # a node it has no row for: the whole tree
            tree.sync(session.node_views(), self._ticked(reports))
        self._tree_frame, self._tree_held = frame.key, held
        tree.mark_rebound(session.rebound_paths())
        tree.set_running(session.running_nodes())
        past = f" — PAST: tick {frame.tick} (read-only)" if viewing is not None else ""
        _retitle(tree, f"tree{past}", bool(past))
        state = self.query_one(StatePane)
        _retitle(state, f"state{past}" + (" · staged edits: f forks with them" if session.staged else ""), bool(past))
        state.show(session.state_snapshot(), session.marks())
        self._show_detail(tree.selected_path)
        self.query_one(Timeline).sync(session.checkpoints(), viewing)

    def _ticked(self, reports: list[TickReport]) -> set[str]:
        """The lines a rebuilt or restated tree highlights as ticked (a step's own reports highlight theirs:
        `TreePane.apply`; a set of a stage's 10,000 paths made for nothing cost a step ~1 ms)."""
        session = self.session
        last = reports[-1] if reports else session.last_report
        return ticked_paths(session.frame.returns, last, session.viewing is None)

    def _show_past(self, past: bool) -> None:
        """The past is read-only: say so with colour as well as words (the titles' colour comes with
        their text, `_retitle`). Styled on the two panes themselves: a class on the screen would
        restyle every widget under it, and the tree would then measure all its lines again
        (hundreds of ms at 10,000 nodes)."""
        if past == self._past:
            return
        self._past = past
        self._border_past()

    def _border_past(self) -> None:
        """The past's heavy border: lit (the accent colour) on the pane that has the focus, muted
        warning on the other, so which pane keys go to stays as visible as it is live (a default
        theme's accent and warning are the same colour)."""
        colours = self.app.theme_variables
        for pane in (self.query_one(TreePane), self.query_one(StatePane)):
            lit = pane.has_focus_within
            pane.styles.border = ("heavy", colours["accent" if lit else "warning-muted"]) if self._past else None

    def on_descendant_focus(self) -> None:
        if self._past:
            self._border_past()

    def on_descendant_blur(self) -> None:
        if self._past:
            self._border_past()

    def _show_detail(self, path: str | None) -> None:
        try:
            detail = self.session.node_detail(path) if path else None
        except EditError:
            detail = None
        self.query_one(NodeDetailPane).show(detail)

    def _offer_approval(self) -> None:
        """Open the approval dialog once for each new pending request (a recording's too: answering
        resumes it)."""
        if self.session.run_state not in (RunState.SUSPENDED, RunState.RECORDED) or self.app.screen is not self:
            return
        fresh = [r for r in self.session.pending_approvals() if r.id not in self._offered]
        if fresh:
            from .screens.approval import ApprovalScreen

            self._offered.add(fresh[0].id)
            self.app.push_screen(ApprovalScreen(fresh[0], getattr(self.session, "check_arguments", None)), self._decided)

    # -- which keys apply now (the Footer shows only these) -----------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        session = self.session
        viewing = session.viewing is not None
        busy = session.run_state.busy
        if action in ("step", "step_into", "continue", "toggle_breakpoint"):
            return None if busy else True  # in the past or a recording they say why they cannot run
        if action == "restart":
            return None if busy or viewing or session.recorded_run is not None else True
        if action == "edit_bindings":  # in the past (or a recording) the edits are staged for a fork
            return None if busy else True
        if action == "pause":  # a continuing run, or steps pressed ahead of the one running
            return True if busy or self._steps is not None else None
        if action == "live":
            return viewing and session.recorded_run is None  # a recording has no live run to go back to
        if action == "replay_fork":
            return callable(getattr(session, "fork_from", None))
        if action == "compare":
            return None if busy or not callable(getattr(session, "compare", None)) else True
        return True

    # -- intents -------------------------------------------------------------------
    @work(exclusive=True, group="run", exit_on_error=False)
    async def _intent(self, intent: Callable[[], Awaitable[Any]]) -> None:
        await intent()
        self.drain()  # show the result now, not at the next timer tick

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place where a failed intent is reported."""
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            self.notify(f"{type(error).__name__}: {error}", title="failed", severity="error", timeout=8)
            self._dirty = True

    def action_step(self) -> None:
        if not self._refused():
            self._step(self.session.step)

    def action_step_into(self) -> None:
        self._step(self.session.step_into)

    def _step(self, step: Callable[[], Awaitable[Any]]) -> None:
        """Steps pressed while one runs come after it, a tick each, in order: a new intent cancels the
        one running (exclusive), so n pressed faster than the ticks dropped all but the last."""
        if self._steps is not None:
            if len(self._steps) < STEPS_QUEUED:
                self._steps.append(step)
            return
        self._steps = deque([step])
        self._intent(self._stepping)

    async def _stepping(self) -> None:
        try:
            while self._steps:
                await self._steps.popleft()()
                self.drain()
        finally:
            self._steps = None

    def action_continue(self) -> None:
        if not self._refused():
            self._intent(self.session.continue_)

    def _refused(self) -> bool:
        """A recording or the past cannot run: say so in one line, with what can."""
        refusal = self.session.refusal()
        if refusal is not None:
            self.session.message = refusal
            self.notify(refusal, severity="warning")
            self._dirty = True
        return refusal is not None

    def action_pause(self) -> None:
        if self._steps:
            self._steps.clear()  # the steps pressed before it are not taken
        self.session.pause()

    def action_restart(self) -> None:
        async def restart() -> None:
            await self.session.restart()
            self.call_after_refresh(self._keep_tree_out_of_collections)  # the new tree, once drawn

        self._intent(restart)

    def _selected_path(self) -> str | None:
        path = self.query_one(TreePane).selected_path
        if path is None:
            self.notify("select a node in the tree first", severity="warning")
        return path

    def action_toggle_breakpoint(self) -> None:
        path = self._selected_path()
        if path is not None:
            if self.session.toggle_node_breakpoint(path):  # a swarm agent's node stops after, not before
                bp = next(bp for bp in self.session.breakpoints if bp.kind == "node" and bp.node == path)
                self.notify(f"breakpoint: {bp.label} (B lists them)")
            else:
                self.notify(f"breakpoint removed from {path}")
            self.drain()  # the mark now: after a burst Textual's timer skips ticks, up to 100 ms

    def action_breakpoints(self) -> None:
        from .screens.breakpoints import BreakpointsScreen

        self.app.push_screen(BreakpointsScreen(self.session))  # its changes notify the session's listeners

    def action_model_calls(self) -> None:
        from .screens.model_call import ModelCallsScreen

        path = self.query_one(TreePane).selected_path
        calls = self.session.model_calls(path) if path else []
        title = f"model calls of {path}"
        if not calls:
            calls, title = self.session.model_calls(), "model calls of this run"
        self.app.push_screen(ModelCallsScreen(title, calls, self.session.model_call, self.session))

    async def action_compare(self) -> None:
        from .screens.compare import ComparePicker

        try:
            choices = await answered(self.session.compare_targets)
        except EditError as exc:
            self.notify(str(exc), severity="error")
            return
        if not choices:
            self.notify("nothing to compare with: replay or fork (f) for a second branch, or record another run",
                        severity="warning")
            return
        self.app.push_screen(ComparePicker(self.session.frame.branch, choices), self._compare_with)

    async def _compare_with(self, target: Any) -> None:
        from .screens.compare import CompareScreen

        if target is None:
            return
        try:
            comparison = await answered(self.session.compare, target)
        except EditError as exc:
            self.notify(str(exc), severity="error")
            return
        self.app.push_screen(CompareScreen(comparison))

    def action_edit_bindings(self) -> None:
        path = self._selected_path()
        if path is None:
            return
        if not self.session.node_detail(path).ports:
            self.notify(f"{path} has no ports to bind", severity="warning")
            return
        from .screens.bindings_editor import BindingsEditor

        self.app.push_screen(BindingsEditor(self.session, path), self._edited)

    def _edited(self, applied: bool | None) -> None:
        if applied:
            self.notify("bindings staged: f forks with them" if self.session.viewing is not None
                        else "bindings applied: the next tick reads the new keys")

    @on(EventsPane.Chosen)
    async def _event_chosen(self, chosen: EventsPane.Chosen) -> None:
        """Enter on an event: a model call's event opens that call, any other event shows whole."""
        from .screens.model_call import ModelCallScreen
        from .screens.value import ValueScreen

        event = chosen.event
        call = next((call for call in self.session.model_calls() if event.seq in call.seqs
                     and call.run_id == event.run_id and call.branch in (None, event.branch)), None)
        tool_call = getattr(self.session, "tool_call", None)
        recorded = await answered(tool_call, chosen.event) if call is None and tool_call is not None else None
        if call is not None:
            self.app.push_screen(ModelCallScreen(await answered(self.session.model_call, call), self.session))
        elif recorded is not None:
            from .screens.tool_call import ToolCallScreen

            self.app.push_screen(ToolCallScreen(recorded, self.session))
        else:
            self.app.push_screen(ValueScreen(f"event {event.seq}: {event.type}", {
                "seq": event.seq, "type": event.type, "node": event.node, "tick": event.tick,
                "branch": event.branch, "run_id": event.run_id, "payload": event.payload}))

    @on(StatePane.EditRequested)
    def _edit_state(self, event: StatePane.EditRequested) -> None:
        from .screens.state_editor import StateEditor

        self.app.push_screen(StateEditor(self.session, event.namespace, event.key, event.value), self._edited_state)

    @on(NodeDetailPane.ValuesRequested)
    def _show_node_values(self, event: NodeDetailPane.ValuesRequested) -> None:
        from .screens.value import ValueScreen

        self.app.push_screen(ValueScreen(f"{event.detail.view.path}: values", full_values(event.detail)))

    @on(StatePane.ValueRequested)
    def _show_value(self, event: StatePane.ValueRequested) -> None:
        from .screens.value import ValueScreen

        self.app.push_screen(ValueScreen(f"{event.namespace + '.' if event.namespace else ''}{event.key}",
                                         event.value))

    def _edited_state(self, applied: bool | None) -> None:
        if applied:
            self.notify("state edited" + (" (staged): f forks with it" if self.session.viewing is not None else ""))

    def action_filter_events(self) -> None:
        from .screens.prompt import PromptScreen

        pane = self.query_one(EventsPane)
        example = self.filter_example
        self.app.push_screen(
            PromptScreen("filter events", f"for example: {example}   (empty: show all)",
                         value=pane.filter.text, placeholder=example),
            self._refilter)

    def _refilter(self, text: str | None) -> None:
        """The events pane filtered anew from the log, which holds the events buffered since the last drain
        too: they are not added again (they showed twice)."""
        if text is not None:
            self._events, self._dirty = [], True
            self.query_one(EventsPane).refilter(text, self.session.frame_events())

    @property
    def filter_example(self) -> str:
        """An events filter built from this tree's own node names."""
        return filter_example(self.session.node_views().names)

    def action_help(self) -> None:
        from .screens.help import HelpScreen

        self.app.push_screen(HelpScreen([b for b in self.BINDINGS if isinstance(b, Binding)], self.filter_example))

    def action_approvals(self) -> None:
        pending = self.session.pending_approvals()
        if pending:
            from .screens.approval import ApprovalScreen

            self.app.push_screen(ApprovalScreen(pending[0], getattr(self.session, "check_arguments", None)), self._decided)
        else:
            self.notify("no tool call is waiting for approval", title="approve")

    def _decided(self, decision: Decision | None) -> None:
        if decision is None:
            return
        try:
            if decision.approved:
                self.session.approve(decision.approval_id, decision.arguments)
            else:
                self.session.deny(decision.approval_id, decision.reason)
        except (EditError, KeyError) as exc:
            self.notify(str(exc), severity="error")

    # -- the past ------------------------------------------------------------------
    @on(Timeline.Chosen)
    def _checkpoint_chosen(self, event: Timeline.Chosen) -> None:
        self.view_checkpoint(event.checkpoint_id)

    def view_checkpoint(self, checkpoint_id: Any) -> None:
        try:
            self.session.select_checkpoint(_checkpoint_key(checkpoint_id))
        except (ValueError, KeyError) as exc:
            self.notify(str(exc), severity="error")
        self._dirty = True
        self.drain()  # now, not at the next timer tick (up to 50 ms later)

    def action_live(self) -> None:
        self.session.select_live()
        self._dirty = True
        self.drain()  # now, not at the next timer tick

    def action_replay_fork(self) -> None:
        from .screens.choice import ChoiceScreen

        viewing = self.session.viewing
        table = self.query_one(Timeline)
        if viewing is not None:
            checkpoint_id = field_of(viewing, "id")
        elif table.row_count:
            checkpoint_id = _checkpoint_key(table.cursor_key)
        else:
            self.notify("no checkpoint yet: step first", severity="warning")
            return
        self.app.push_screen(
            ChoiceScreen(f"from checkpoint {checkpoint_id}",
                         "Replay re-runs with the recorded model and tool I/O (same trajectory).\n"
                         "Fork continues on a new branch with your edits (state values, bindings).",
                         {"replay": "Replay", "fork": "Fork", "cancel": "Cancel"}),
            partial(self._replay_or_fork, checkpoint_id))

    def _replay_or_fork(self, checkpoint_id: Any, choice: str | None) -> None:
        from .screens.choice import ChoiceScreen

        staged = len(self.session.staged)
        if choice == "replay" and staged:  # a replay would drop them: ask first
            self.app.push_screen(
                ChoiceScreen(f"{staged} staged edit{'s' if staged > 1 else ''}",
                             "A replay re-runs the recorded trajectory and drops the staged edits.\n"
                             "A fork applies them on a new branch.",
                             {"replay-anyway": "Replay without them", "fork": "Fork with them", "cancel": "Cancel"}),
                partial(self._replay_or_fork, checkpoint_id))
            return
        choice = "replay" if choice == "replay-anyway" else choice
        if choice in ("replay", "fork"):
            method = getattr(self.session, f"{choice}_from")
            self._intent(partial(method, checkpoint_id))


def _retitle(pane: Widget, title: str, warning: bool = False) -> None:
    """A pane's border title, set only when it changes: setting it repaints the whole pane, and the
    terminal is sent every cell of it again (the tree pane's ~3,000 at 160x48, at every step).
    A warning title is coloured in its own text: a pane's `border_title_color` repaints every
    widget inside it too (the tree's lines and the search box, ~7 ms of each enter and esc)."""
    content = Content.styled(title, "$warning") if warning else Content(title)
    if pane.border_title != content.markup:
        pane.border_title = content


def _checkpoint_key(value: Any) -> Any:
    """Timeline row keys are strings; checkpoint ids are ints when they look like ints."""
    return int(value) if isinstance(value, str) and value.isdigit() else value


class StudioApp(App[None]):
    """The studio on one `DebugSession`."""

    CSS_PATH = "studio.tcss"
    TITLE = "Jianmu Studio"
    COMMANDS = App.COMMANDS | {StudioCommands}

    def __init__(self, session: DebugSession) -> None:
        super().__init__()
        self.session = session
        self.sub_title = str(session.loaded.path)
        self._signals = contextlib.ExitStack()

    def on_mount(self) -> None:
        """SIGTERM and SIGHUP (a closed terminal, systemd) stop the studio as Ctrl-C would: studio/stopping.py."""
        with contextlib.suppress(ValueError, RuntimeError):  # (not the main thread: the host handles signals)
            self._signals.enter_context(on_signals(lambda signum: self.run_worker(self._stop_on_signal(signum))))

    def on_unmount(self) -> None:
        self._signals.close()

    def notify(self, message: str, *, title: str = "", severity: Any = "information", timeout: float | None = None,
               markup: bool = True) -> None:
        """Never read as markup (a widget's `notify` asks for it by default): the studio writes none,
        and its notes quote node paths, values and errors (`drawn_text`)."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    async def _stop_on_signal(self, signum: int) -> None:
        """The live run recorded as interrupted and stopped with its MCP servers, then the terminal restored
        as at any exit, and the exit status 128 + the signal's number."""
        if isinstance(self.session, DebugSession):  # (attached: the run is the other process's)
            await interrupt_session(self.session, f"interrupted by {signal.Signals(signum).name}")
        self.exit(return_code=exit_status(signum))

    async def action_quit(self) -> None:
        """Quitting while the live run goes on is the studio's Ctrl-C (Textual's ctrl+c only says how to
        quit): the run is recorded as interrupted and stopped with its MCP servers, as a signal stops it.
        A paused run is left as it stands (its writer gone, it reads as abandoned)."""
        if isinstance(self.session, DebugSession) and self.session.busy:
            await interrupt_session(self.session, "interrupted: the studio quit")
        await super().action_quit()

    def get_default_screen(self) -> Screen:
        return MainScreen(self.session)

    def get_driver_class(self) -> type[Driver]:
        """Textual's Linux driver with esc read after $ESCDELAY (studio/terminal_driver.py)."""
        driver = super().get_driver_class()
        if driver.__name__ != "LinuxDriver":  # Windows, or $TEXTUAL_DRIVER
            return driver
        from .terminal_driver import StudioDriver  # imports termios: not on Windows

        return StudioDriver

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        """The palette's screenshot goes to ~/Downloads when there is one, else to the working directory.

        Textual would write into a Downloads folder that does not exist (and fail); the
        notification then names the file where it really is.
        """
        downloads = user_downloads_path()
        return super().deliver_screenshot(filename, path or str(downloads if downloads.is_dir() else Path.cwd()),
                                          time_format)

    @property
    def main(self) -> MainScreen:
        return self.screen_stack[0]

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every key of the main screen that applies now is also a palette command."""
        yield from super().get_system_commands(screen)
        if isinstance(screen, MainScreen):
            seen = {"app.quit"}  # Textual's own commands already quit
            for binding in Binding.make_bindings(screen.BINDINGS):
                if binding.action in seen:
                    continue
                seen.add(binding.action)
                if screen.check_action(binding.action, ()):
                    yield SystemCommand(f"{binding.description} ({self.get_key_display(binding)})",
                                        binding.tooltip, partial(screen.run_action, binding.action))
