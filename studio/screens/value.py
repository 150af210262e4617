"""A value in full: long text wrapped, structures as pretty JSON, scrollable; esc closes."""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import to_jsonable_python
from rich.json import JSON
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static


def full_view(value: Any):
    """What the viewer draws: a string as itself, anything else as indented JSON."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return Text(value)
        if not isinstance(parsed, dict | list):
            return Text(value)
        value = parsed
    return JSON.from_data(to_jsonable_python(value, fallback=repr), indent=2, ensure_ascii=False)


class ValueScreen(ModalScreen[None]):
    """Shows one value whole (a state value, a message, a tool schema, a config)."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close", id="value-close")]

    def __init__(self, title: str, value: Any) -> None:
        super().__init__()
        self._title, self.value = title, value

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog wide tall", id="value-view") as dialog:
            dialog.border_title = Content(self._title)
            dialog.border_subtitle = "esc to close · arrows/pgup/pgdn scroll"
            yield Static(full_view(self.value), id="value-body")

    def on_mount(self) -> None:
        self.query_one("#value-view").focus()


__all__ = ["ValueScreen", "full_view"]
