"""A one-line question (a breakpoint condition, an event filter) that is checked before it closes."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static


class PromptScreen(ModalScreen[str | None]):
    """Asks for one line; `apply(text)` may raise `ValueError` to refuse it with a reason."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt-cancel")]

    def __init__(self, title: str, hint: str, value: str = "", apply: Callable[[str], object] | None = None,
                 placeholder: str = "") -> None:
        super().__init__()
        self._title, self._hint, self._value, self._apply, self._placeholder = title, hint, value, apply, placeholder

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog") as dialog:
            dialog.border_title = Content(self._title)
            yield Label(self._hint, classes="hint", markup=False)
            yield Input(self._value, placeholder=self._placeholder, id="prompt-input")
            yield Static("", id="prompt-error", classes="error", markup=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            if self._apply is not None:
                self._apply(event.value)
        except ValueError as exc:
            self.query_one("#prompt-error", Static).update(f"✘ {exc}")
            return
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
