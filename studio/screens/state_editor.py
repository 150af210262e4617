"""Change one state value; the session validates it against the schema and records the edit."""

from __future__ import annotations

import json
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from runtime.debug.bounded import TooLarge, parse_value

from ..session import DebugSession, EditError


class StateEditor(ModalScreen[bool]):
    """Edits `namespace.key`; a value the schema refuses is shown with the reason."""

    BINDINGS = [Binding("escape", "dismiss(False)", "Cancel", id="state-cancel")]

    def __init__(self, session: DebugSession, namespace: str, key: str, value: Any) -> None:
        super().__init__()
        self.session, self.namespace, self.key, self.value = session, namespace, key, value

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide") as dialog:
            dialog.border_title = Content(f"edit {self.namespace + '.' if self.namespace else ''}{self.key}")
            yield Label("a JSON value (text that is not JSON is taken as a string); "
                        "the edit is checked by the state schema and recorded", classes="hint")
            yield Input(json.dumps(self.value, ensure_ascii=False, default=str), id="state-value")
            yield Static("", id="state-error", classes="error", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Apply", variant="primary", id="apply")
                yield Button("Cancel", id="cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "apply":
            self._apply()
        else:
            self.dismiss(False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._apply()

    def _apply(self) -> None:
        try:
            value = parse_value(self.query_one("#state-value", Input).value)  # JSON, or the text itself
            self.session.edit_state(self.namespace or None, self.key, value)
        except (EditError, TooLarge) as exc:
            self.query_one("#state-error", Static).update(f"✘ {exc}")
            return
        self.dismiss(True)
