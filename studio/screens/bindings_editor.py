"""Rebind a node's ports to other state keys, each key checked against the state schema as typed:
its name, and its type against the port's."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from ..session import DebugSession, EditError


class BindingsEditor(ModalScreen[bool]):
    """One input per port; Apply rebinds the ports that changed (effective at the next tick)."""

    BINDINGS = [Binding("escape", "dismiss(False)", "Cancel", id="bindings-cancel"),
                Binding("ctrl+s", "apply(True)", "Apply and save", id="bindings-save")]

    def __init__(self, session: DebugSession, path: str) -> None:
        super().__init__()
        self.session, self.path = session, path
        self.ports = session.node_detail(path).ports

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide") as dialog:
            dialog.border_title = Content(f"bindings of {self.path}")
            when = ("staged: a fork (f) from this checkpoint applies it" if self.session.viewing is not None
                    else "applied at the next tick")
            yield Label(f"each port → a state key (field of the schema, or ns.key); {when}", classes="hint")
            with Grid(id="ports"):
                for i, port in enumerate(self.ports):
                    yield Label(f"{port.direction:>3}  {port.port}", classes="port-name", markup=False)
                    yield Input(port.key, id=f"port-{i}", classes="port-key")
                    yield Static("✔", id=f"port-check-{i}", classes="port-check ok", markup=False)
            yield Static("", id="bindings-error", classes="error", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Apply", variant="primary", id="apply")
                yield Button("Apply and save", id="save")
                yield Button("Cancel", id="cancel")

    @on(Input.Changed, ".port-key")
    def _check(self, event: Input.Changed) -> None:
        index = event.input.id.rpartition("-")[2]
        check = self.query_one(f"#port-check-{index}", Static)
        port = self.ports[int(index)]
        try:
            self.session.validate_binding(self.path, port.direction, port.port, event.value)
        except EditError as exc:
            check.update(f"✘ {exc}")
            check.set_classes("port-check error")
        else:
            check.update("✔")
            check.set_classes("port-check ok")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "cancel":
            self.dismiss(False)
        else:
            self.action_apply(save=event.button.id == "save")

    def action_apply(self, save: bool = False) -> None:
        """Check every changed port first, then rebind them all; a refusal keeps the editor open."""
        changes = [(port, self.query_one(f"#port-{i}", Input).value.strip()) for i, port in enumerate(self.ports)]
        changes = [(port, key) for port, key in changes if key != port.key]
        try:
            for port, key in changes:
                self.session.validate_binding(self.path, port.direction, port.port, key)
            for port, key in changes:
                self.session.edit_binding(self.path, port.direction, port.port, key)
            if save:
                self.notify(f"bindings saved to {self.session.save_bindings()}")
        except (EditError, OSError) as exc:
            self.query_one("#bindings-error", Static).update(f"✘ {exc}")
            return
        self.dismiss(True)
