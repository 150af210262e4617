"""Edit an answer or a request before it is used: a what-if's edited answer, a re-send's request.

The text is JSON (a value that is not JSON is taken as plain text); `apply` does the work with it
(a fork, a re-send) and may take time, so it runs in a worker. What `apply` refuses (an answer that
is not one, an endpoint not configured) is shown in the dialog in one line, and the text is kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static, TextArea

from ..edits import EditError
from ..session.api import answered


def as_text(value: Any) -> str:
    """A value as the editor shows it: text as itself, anything else as indented JSON."""
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)


def parsed(text: str) -> Any:
    """The editor's text as a value: JSON when it is JSON, else the text itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


class AnswerEditor(ModalScreen[Any]):
    """A text to edit, and the button that applies it; dismisses with what `apply` returned."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="answer-cancel"),
                Binding("ctrl+s", "apply", "Apply", id="answer-apply", priority=True)]

    def __init__(self, title: str, hint: str, value: Any, apply: Callable[[Any], Any], action: str) -> None:
        super().__init__()
        self._title, self._hint, self._value, self._apply, self._action = title, hint, value, apply, action

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide tall") as dialog:
            dialog.border_title = Content(self._title)
            dialog.border_subtitle = f"ctrl+s: {self._action.lower()} · esc: cancel"
            yield Label(self._hint, classes="hint", markup=False)
            yield TextArea(as_text(self._value), id="answer-text", soft_wrap=True)
            yield Static("", id="answer-error", classes="error", markup=False)
            with Horizontal(classes="buttons"):
                yield Button(self._action, variant="primary", id="apply")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "apply":
            self.action_apply()
        else:
            self.dismiss(None)

    def action_apply(self) -> None:
        self.query_one("#answer-error", Static).update(f"{self._action.lower()}…")
        self._applying(parsed(self.query_one(TextArea).text))

    @work(exclusive=True, group="answer", exit_on_error=False)
    async def _applying(self, value: Any) -> None:
        try:
            result = await answered(self._apply, value)
        except (EditError, ValueError) as exc:
            self.query_one("#answer-error", Static).update(f"✘ {exc}")
            return
        self.dismiss(result)


__all__ = ["AnswerEditor", "as_text", "parsed"]
