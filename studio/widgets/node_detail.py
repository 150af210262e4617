"""Everything about the selected node: where it is, what its ports read and write now,
how its status moved; its last error and failed tool calls come first, the traceback last."""

from __future__ import annotations

from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.visual import visualize
from textual.widgets import Static

from ..session import NodeDetail
from .marks import not_yet_text, status_text
from .values import preview


def _grid() -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()
    return grid


def render_failures(detail: NodeDetail) -> list:
    """The node's last error and its failed tool calls: first, because they are why one looks."""
    parts: list = []
    if detail.error:
        parts += [Text("✘ last error", "bold red"), Text(detail.error, "red")]
    if detail.failed_calls:
        calls = _grid()
        for failed in detail.failed_calls[-5:]:
            arguments = preview(failed.arguments, 40) if failed.arguments is not None else ""
            call = Text.assemble((failed.tool, "bold"), ("(", "dim"), arguments, (")", "dim"))
            calls.add_row(f"tick {failed.tick}", Text.assemble(call, "  ", (failed.error, "red")))
        title = f"✘ tool calls that failed ({len(detail.failed_calls)})"
        parts += [Text(title, "bold red"), calls]
    return parts


def render_detail(detail: NodeDetail) -> Group:
    view = detail.view
    facts = _grid()
    facts.add_row("class", Text(view.class_name, "bold"))
    facts.add_row("path", Text(view.path))  # (a str cell is read as markup: `Q[b]x` showed as Qx)
    facts.add_row("namespace", Text(view.namespace or "(global)", "magenta"))
    status = not_yet_text(view.status) if view.pending else status_text(view.status)
    if view.counter:
        status.append(f"   {view.counter}", "cyan")
    facts.add_row("status", status)
    parts: list = [*render_failures(detail), facts]
    for direction, title in (("in", "inputs"), ("out", "outputs")):
        ports = [p for p in detail.ports if p.direction == direction]
        if ports:
            table = _grid()
            for port in ports:
                table.add_row(Text(port.port), Text.assemble(("→ " if direction == "in" else "← ", "dim"),
                                                       (port.key, "cyan"), " = ", preview(port.value, 60)))
            parts += [Text(title, "bold underline"), table]
    if detail.history:
        history = _grid()
        for tick, old, new in detail.history[-8:]:
            history.add_row(f"tick {tick}", Text.assemble(status_text(old), " → ", status_text(new)))
        parts += [Text("status history", "bold underline"), history]
    if detail.traceback:
        parts += [Text("traceback of the last error", "bold underline"), Text(detail.traceback.rstrip(), "dim")]
    return Group(*parts)


def full_values(detail: NodeDetail) -> dict[str, Any]:
    """What the pane shortens, whole: every port's key and value, the last error, the failed calls."""
    values: dict[str, Any] = {"path": detail.view.path}
    for direction, title in (("in", "inputs"), ("out", "outputs")):
        ports = {p.port: {"key": p.key, "value": p.value} for p in detail.ports if p.direction == direction}
        if ports:
            values[title] = ports
    if detail.error:
        values["last error"] = detail.error
    if detail.failed_calls:
        values["tool calls that failed"] = [{"tick": f.tick, "tool": f.tool, "call_id": f.call_id,
                                             "arguments": f.arguments, "error": f.error} for f in detail.failed_calls]
    return values


class DrawnOnce:
    """A renderable drawn once for each width: the pane measures the detail's height (by drawing it)
    and then draws it, and its tables cost milliseconds each time (each search key, step, enter, esc)."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable
        self._drawn: dict[int, list[Segment]] = {}

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        drawn = self._drawn.get(options.max_width)
        if drawn is None:  # the detail's tables and texts read nothing of the options but the width
            drawn = self._drawn[options.max_width] = list(console.render(self.renderable, options))
        return drawn

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.renderable)


class NodeDetailPane(VerticalScroll):
    """Shows `session.node_detail(path)` for one node; redrawn when that node may have changed.
    Enter asks for its values whole (`ValuesRequested`): the pane shortens long ones."""

    BINDINGS = [Binding("enter", "values", "Values whole", show=False)]

    class ValuesRequested(Message):
        def __init__(self, detail: NodeDetail) -> None:
            super().__init__()
            self.detail = detail

    DEFAULT_CSS = """
    NodeDetailPane > #node-detail-body {
        min-height: 100%;
    }
    """

    detail: NodeDetail | None = None

    def compose(self):
        yield Static("select a node in the tree", id="node-detail-body")

    def show(self, detail: NodeDetail | None) -> None:
        if detail is not None and detail == self.detail:  # a step that left the node as it was
            return
        self.detail = detail
        body = self.query_one("#node-detail-body", Static)
        content = DrawnOnce(render_detail(detail)) if detail is not None else "select a node in the tree"
        body.update(content, layout=self._resizes(body, content))

    def _resizes(self, body: Static, content: RenderableType) -> bool:
        """Whether the body takes another height for `content`. It is at least as tall as the pane
        (DEFAULT_CSS), so a detail that fits, as most do, leaves it as it was: Static.update's layout
        would lay the whole screen out again at each enter and esc (the root's history grows)."""
        if not body.size:
            return True
        height = visualize(body, content).get_height(body.styles, body.size.width)
        return max(height, self.scrollable_content_region.height) != body.size.height

    def action_values(self) -> None:
        if self.detail is not None:
            self.post_message(self.ValuesRequested(self.detail))
