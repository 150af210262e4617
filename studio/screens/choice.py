"""Pick one of a few named answers (replay or fork), or none with escape."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Label


class ChoiceScreen(ModalScreen[str | None]):
    """Buttons for `choices` ({id: label}); dismisses with the id pressed."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="choice-cancel")]

    def __init__(self, title: str, text: str, choices: dict[str, str]) -> None:
        super().__init__()
        self._title, self._text, self._choices = title, text, choices

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog") as dialog:
            dialog.border_title = Content(self._title)
            yield Label(self._text, classes="hint", markup=False)
            with Horizontal(classes="buttons"):
                for choice_id, label in self._choices.items():
                    yield Button(label, id=choice_id)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id)
