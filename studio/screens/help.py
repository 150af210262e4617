"""Keys and what the panes show, generated from the app's own bindings so it cannot drift."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

ABOUT = """\
Moving: tab / shift+tab go from pane to pane; arrows move inside one; enter opens what is under the cursor
Tree: ✔ success  ✘ failure  ● running  ○ not ticked   ◆ breakpoint   highlighted: ticked by the last tick
  paused inside a tick (s, a breakpoint before a node): what returned so far shows what it returned,
  ◌ not yet ticked in this tick
Node: its last error and failed tool calls first, then ports, status history (every return, a loop's
  failed round too) and the traceback;
  enter shows its port values, error and failed calls whole
State: ● marks keys the last tick changed (old → new); enter shows a value whole; space opens a structure;
  e edits the selected key
Events: / filters — {example}
  up/down pick an event (end follows the newest again); enter opens it, a model call's event opens that call
Timeline: enter on a checkpoint views the past (read-only); f replays or forks from it; esc returns live
Breakpoints: b stops before the selected node runs; B lists them all (hits, enable/disable, before/after)
ctrl+p: jump to a node or checkpoint, add a conditional or event breakpoint, change theme, screenshot"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close", id="help-close")]

    def __init__(self, bindings: list[Binding], filter_example: str) -> None:
        super().__init__()
        self.keys = bindings
        self.filter_example = filter_example

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold cyan")
        table.add_column()
        for binding in self.keys:
            keys = " / ".join(self.app.get_key_display(key) for key in Binding.make_bindings([binding]))
            table.add_row(keys, binding.tooltip or binding.description)
        with VerticalScroll(classes="dialog wide") as dialog:
            dialog.border_title = "Jianmu Studio — help (esc to close)"
            yield Static(table)
            yield Static(ABOUT.format(example=self.filter_example), classes="hint", markup=False)  # (names in it)
