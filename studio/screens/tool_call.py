"""One recorded tool call: the tool, its arguments, the result it gave (or its error); with a session
that offers it, a fork from just before the call with the result edited (w)."""

from __future__ import annotations

import json
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from ..whatifs import ToolCall
from .whatif import ask_what_if


def tool_call_view(call: ToolCall) -> Table:
    facts = Table.grid(padding=(0, 1))
    facts.add_column(style="dim", no_wrap=True)
    facts.add_column()
    facts.add_row("tool", Text(call.name, "bold"))
    facts.add_row("node", Text(call.ref.node))  # (a str cell is read as markup: names and arguments are data)
    facts.add_row("round", Text(f"{call.ref.round}   call {call.ref.index}   tick {call.tick}   branch {call.ref.branch}"))
    facts.add_row("arguments", Text(json.dumps(call.arguments, ensure_ascii=False, indent=2)))
    facts.add_row("result", Text(f"✘ {call.error}", "red") if call.error is not None else Text(str(call.result)))
    return facts


class ToolCallScreen(ModalScreen[None]):
    """A tool call as the run recorded it."""

    BINDINGS = [Binding("escape", "dismiss", "Close", id="tool-call-close"),
                Binding("w", "what_if", "What if", id="tool-call-what-if",
                        tooltip="Fork from just before this call with its result edited")]

    def __init__(self, call: ToolCall, session: Any = None) -> None:
        super().__init__()
        self.call, self.session = call, session

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return callable(getattr(self.session, "what_if", None)) if action == "what_if" else True

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide") as dialog:
            dialog.border_title = Content(f"tool call: {self.call.title}")
            offer = " · w: what if (fork, result edited)" if self.check_action("what_if", ()) else ""
            dialog.border_subtitle = f"esc: close{offer}"
            with VerticalScroll(id="tool-call-view"):
                yield Static(tool_call_view(self.call), id="tool-call-body")

    def action_what_if(self) -> None:
        call = self.call
        ask_what_if(self, self.session, call.ref, call.result if call.error is None else "", call.title)


__all__ = ["ToolCallScreen", "tool_call_view"]
