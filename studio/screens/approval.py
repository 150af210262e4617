"""A tool call waiting for a human: what it would do, and approve (maybe with corrected
arguments, checked against the tool's schema) or deny (with a reason the model reads).

The dialog opens over whatever the user was doing, often while they step with `n` or `c`, so it
opens with the focus on the dialog itself, not in a text box: a key meant for the main screen
edits nothing and decides nothing. tab reaches the arguments editor. ctrl+o approves and ctrl+n
denies wherever the focus is: neither edits text (a TextArea's ctrl+a is line start and its
ctrl+d deletes, so those stay the editor's). Enter in the reason box denies with that reason; esc
decides later.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static, TextArea

from runtime.debug.bounded import loads

KEYS = "ctrl+o approve · ctrl+n deny · enter in the reason box denies · esc later"


@dataclass
class Decision:
    approval_id: str
    approved: bool
    reason: str = ""
    arguments: dict[str, Any] | None = None  # set when the human changed them


class ApprovalScreen(ModalScreen[Decision | None]):
    """Shows one pending `ApprovalRequest`; dismisses with a `Decision`, or None for "later".

    `check(request, arguments)` raises `ValueError` when edited arguments do not fit the tool.
    """

    BINDINGS = [Binding("escape", "dismiss(None)", "Later", id="approval-later"),
                Binding("ctrl+o", "decide(True)", "Approve", id="approval-approve", priority=True),
                Binding("ctrl+n", "decide(False)", "Deny", id="approval-deny", priority=True)]

    def __init__(self, request: Any, check: Callable[[Any, Any], None] | None = None) -> None:
        super().__init__()
        self.request = request
        self._check = check
        self._original = json.dumps(request.arguments, indent=2, ensure_ascii=False, default=str)

    def compose(self) -> ComposeResult:
        request = self.request
        with VerticalScroll(classes="dialog wide") as dialog:  # scrolls on a small terminal
            dialog.border_title = Content(f"approve tool call: {request.tool}")
            dialog.border_subtitle = KEYS
            yield Label(f"tool       {request.tool}", markup=False)
            yield Label(f"node       {request.node or '-'}", markup=False)
            yield Label(f"why asked  {request.reason or '-'}", markup=False)
            yield Label("arguments (tab to edit them and approve a corrected call; checked against the tool's schema)",
                        classes="hint")
            yield TextArea(self._original, language="json", id="approval-arguments")
            yield Static("", id="approval-error", classes="error", markup=False)
            yield Input(placeholder="reason (for a denial; enter denies)", id="approval-reason")
            with Horizontal(classes="buttons"):
                yield Button("Approve", variant="success", id="approve")
                yield Button("Deny", variant="error", id="deny")
                yield Button("Later", id="later")

    def on_mount(self) -> None:  # the call's tool, node and reason stay in view above the editor
        self.query_one(VerticalScroll).focus(scroll_visible=False)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "later":
            self.dismiss(None)
        else:
            self.action_decide(event.button.id == "approve")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_decide(False)

    def action_decide(self, approved: bool) -> None:
        reason = self.query_one("#approval-reason", Input).value.strip()
        arguments = None
        if approved:
            try:
                arguments = self._edited_arguments()
            except ValueError as exc:
                self.query_one("#approval-error", Static).update(f"✘ {exc}")
                return
        self.dismiss(Decision(self.request.id, approved, reason, arguments))

    def _edited_arguments(self) -> dict[str, Any] | None:
        """The arguments when the human changed them (checked), None when they did not."""
        text = self.query_one("#approval-arguments", TextArea).text
        if text.strip() == self._original.strip():
            return None
        try:
            arguments = loads(text)  # bounded: 3,000 nested brackets are an error line, not a RecursionError
        except json.JSONDecodeError as exc:
            raise ValueError(f"arguments are not JSON: {exc.msg} (line {exc.lineno})") from None
        if self._check is not None:
            self._check(self.request, arguments)
        elif not isinstance(arguments, dict):
            raise ValueError("arguments must be a JSON object")
        return arguments
