"""A re-sent model call: the recorded answer and the new one side by side, and the request sent."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from runtime.memory.checkpoint.whatif_marks import Mark

from .messages import message_block


def answer_block(title: str, answer: Any) -> Group:
    """One answer under its title: the message the model gave, or the error it failed with."""
    head = Text(title, "bold underline")
    if isinstance(answer, dict) and "error" in answer and "message" not in answer:
        return Group(head, Text(f"✘ {answer['error']}", "red"))
    message = answer.get("message") if isinstance(answer, dict) else None
    return Group(head, message_block(message) if isinstance(message, dict) else Text(str(answer)))


class ResentScreen(ModalScreen[None]):
    """What the model answered then, beside what it answers now to the request as edited."""

    BINDINGS = [Binding("escape", "dismiss", "Close", id="resent-close")]

    def __init__(self, title: str, mark: Mark) -> None:
        super().__init__()
        self._title, self.mark = title, mark

    def compose(self) -> ComposeResult:
        mark = self.mark
        settings = {k: v for k, v in (mark.edited.get("config") or {}).items()
                    if k != "tools" and v not in (None, {}, [], False)}
        tools = [(t.get("function") or t).get("name") for t in (mark.edited.get("config") or {}).get("tools") or ()]
        with Vertical(classes="dialog wide tall") as dialog:
            dialog.border_title = Content(f"re-sent: {self._title}")
            dialog.border_subtitle = "esc: close · the run is not touched"
            yield Label(f"{len(mark.edited.get('messages') or ())} messages sent · tools offered: "
                        f"{', '.join(tools) or '(none)'} · " + (", ".join(f"{k}={v}" for k, v in settings.items())
                                                               or "no settings"), classes="hint", markup=False)
            with Horizontal(id="resent-answers"):
                with VerticalScroll(id="resent-recorded"):
                    yield Static(answer_block("recorded", mark.recorded))
                with VerticalScroll(id="resent-new"):
                    model = mark.answer.get("model") if isinstance(mark.answer, dict) else None
                    yield Static(answer_block("re-sent" + (f" ({model})" if model else ""), mark.answer))


__all__ = ["ResentScreen", "answer_block"]
