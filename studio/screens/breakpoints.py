"""Every breakpoint in one list, with its hit count: add, enable/disable, before/after, remove.

The list is the session's; every change is saved at once beside the store (see
`studio.persist`), so the same breakpoints are there after a restart of the studio.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from runtime.debug.breakpoints import Breakpoint, BreakpointError

from ..session import DebugSession
from .prompt import PromptScreen

ADD_HINT = ("a node path or name (before it runs), after:NODE (when its status changes), "
            "event:TYPE (e.g. event:tool.call.failed), or a condition over state (rounds >= 2)")
SHORT_PATH = 36  # wider paths are shown as their first and last parts
KEYS = "a add · space enable/disable · o before/after · d delete · esc close"


def add_breakpoint(session: DebugSession, text: str) -> Breakpoint:
    """Add the breakpoint `text` describes (see `ADD_HINT`); `BreakpointError` says why not."""
    text = text.strip()
    kind, sep, rest = text.partition(":")
    if sep and kind in ("event", "before", "after") and rest.strip():
        if kind == "event":
            return session.add_event_breakpoint(rest)
        return session.add_node_breakpoint(node_path(session, rest.strip()), on=kind)
    path = node_path(session, text, required=False)
    if path is not None:
        return session.add_node_breakpoint(path)
    return session.add_condition_breakpoint(text)


def node_path(session: DebugSession, text: str, required: bool = True) -> str | None:
    """A node's path from its path or its (unique) name."""
    views = session.node_views()
    if text in views.paths:
        return text
    named = [path for path, name in zip(views.paths, views.names, strict=True) if name == text]
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        raise BreakpointError(f"{len(named)} nodes are named {text!r}: give the path ({named[0]}, …)")
    if required:
        raise BreakpointError(f"no node named {text!r}")
    return None


class BreakpointsScreen(ModalScreen[None]):
    """A table of the session's breakpoints; the keys act on the highlighted row."""

    BINDINGS = [Binding("escape", "dismiss", "Close", id="breakpoints-close"),
                Binding("a", "add", "Add", id="breakpoints-add", tooltip="Add a breakpoint"),
                Binding("space", "toggle", "Enable/disable", id="breakpoints-toggle",
                        tooltip="Enable or disable the highlighted breakpoint"),
                Binding("o", "moment", "Before/after", id="breakpoints-moment",
                        tooltip="Switch a node breakpoint between before it runs and after its status changes"),
                Binding("d,delete", "remove", "Delete", id="breakpoints-remove",
                        tooltip="Remove the highlighted breakpoint")]

    def __init__(self, session: DebugSession) -> None:
        super().__init__()
        self.session = session

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide") as dialog:
            dialog.border_title = "breakpoints"
            dialog.border_subtitle = KEYS
            yield Label(self.session.breakpoints_kept, classes="hint", id="breakpoints-file", markup=False)
            yield DataTable(id="breakpoints-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="breakpoints-message", classes="error", markup=False)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("on", "hits", "kind", "stops", "where")  # the path last: only it may be cut, never the rest
        self.refresh_rows()
        table.focus()

    def refresh_rows(self, cursor: int | None = None) -> None:
        table = self.query_one(DataTable)
        row = table.cursor_row if cursor is None else cursor
        table.clear()
        for index, bp in enumerate(self.session.breakpoints):
            table.add_row(Text("●", "bold red") if bp.enabled else Text("○", "dim"), str(bp.hits), Text(bp.kind),
                          _stops(bp), Text(_short(bp.where) if bp.kind == "node" else bp.where), key=str(index))
        if not self.session.breakpoints:
            table.add_row("", "", "", "", Text("no breakpoints: a adds one (b on a tree node, too)", "dim"))
        table.move_cursor(row=max(0, min(row, len(self.session.breakpoints) - 1)))

    def _selected(self) -> Breakpoint | None:
        breakpoints = self.session.breakpoints
        row = self.query_one(DataTable).cursor_row
        return breakpoints[row] if 0 <= row < len(breakpoints) else None

    def _say(self, text: str) -> None:
        self.query_one("#breakpoints-message", Static).update(text)

    def action_add(self) -> None:
        self.app.push_screen(PromptScreen("add a breakpoint", ADD_HINT, apply=self._add), self._added)

    def _add(self, text: str) -> None:
        add_breakpoint(self.session, text)  # BreakpointError is a ValueError: the prompt shows it

    def _added(self, text: str | None) -> None:
        if text:
            self.refresh_rows(cursor=len(self.session.breakpoints) - 1)
            self._say("")

    def action_toggle(self) -> None:
        bp = self._selected()
        if bp is not None:
            self.session.set_breakpoint(bp, enabled=not bp.enabled)
            self.refresh_rows()

    def action_moment(self) -> None:
        bp = self._selected()
        if bp is None:
            return
        if bp.kind != "node":
            self._say(f"✘ {bp.label}: only a node breakpoint stops before or after")
            return
        self.session.set_breakpoint(bp, on="after" if bp.on == "before" else "before")
        self.refresh_rows()

    def action_remove(self) -> None:
        bp = self._selected()
        if bp is not None:
            self.session.remove_breakpoint(bp)
            self.refresh_rows()


def _short(path: str, width: int = SHORT_PATH) -> str:
    """A long node path as its first and last parts (`Calculator/…/Calculator.llm`), so it fits at 80 columns."""
    head, _, rest = path.partition("/")
    tail = rest.rpartition("/")[2]
    return path if len(path) <= width or "/" not in rest else f"{head}/…/{tail}"


def _stops(bp: Breakpoint) -> str:
    """When it stops, short enough that the column fits beside a long path at 80 columns."""
    if bp.kind == "node":
        return "before it runs" if bp.on == "before" else "after it changes"
    return "after its tick" if bp.kind == "event" else "when it turns true"


__all__ = ["ADD_HINT", "BreakpointsScreen", "add_breakpoint", "node_path"]
