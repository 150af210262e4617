"""A tool call waiting for a human: what it would do, and approve or deny (with a reason)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static


@dataclass
class Decision:
    approval_id: str
    approved: bool
    reason: str = ""


class ApprovalScreen(ModalScreen[Decision | None]):
    """Shows one pending `ApprovalRequest`; dismisses with a `Decision`, or None for "later"."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Later", id="approval-later"),
                Binding("ctrl+a", "decide(True)", "Approve", id="approval-approve"),
                Binding("ctrl+d", "decide(False)", "Deny", id="approval-deny")]

    def __init__(self, request: Any) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(classes="dialog wide") as dialog:
            dialog.border_title = f"approve tool call: {request.tool}"
            yield Label(f"tool       {request.tool}")
            yield Label(f"node       {request.node or '-'}")
            yield Label(f"why asked  {request.reason or '-'}")
            yield Static(json.dumps(request.arguments, indent=2, ensure_ascii=False, default=str),
                         id="approval-arguments")
            yield Input(placeholder="reason (for a denial)", id="approval-reason")
            with Horizontal(classes="buttons"):
                yield Button("Approve", variant="success", id="approve")
                yield Button("Deny", variant="error", id="deny")
                yield Button("Later", id="later")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "later":
            self.dismiss(None)
        else:
            self.action_decide(event.button.id == "approve")

    def action_decide(self, approved: bool) -> None:
        reason = self.query_one("#approval-reason", Input).value.strip()
        self.dismiss(Decision(self.request.id, approved, reason))
