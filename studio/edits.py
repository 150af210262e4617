"""Edits made while a past checkpoint is shown are *staged*: the past frame shows them, and only a
fork from that checkpoint applies them (a replay never does). A live edit is the debugger's
(`runtime.debug.Debugger.edit_state`, `edit_binding`): it changes the runner at once and is
recorded as an event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.debug.edits import EditRefused

EditError = EditRefused
"""An edit (binding, state value) that was rejected; the message is the reason. The checks are
the runtime's (`runtime.debug.edits`), so an attached studio refuses exactly what a local one does."""


@dataclass
class StagedEdits:
    """Edits made while a past checkpoint is shown: the past frame shows them, a fork applies them."""

    values: dict[tuple[str, str], Any] = field(default_factory=dict)  # (namespace, key) -> value
    bindings: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (path, "in"/"out", port) -> key

    def __len__(self) -> int:
        return len(self.values) + len(self.bindings)

    def updates(self) -> dict[str, Any]:
        """The state edits as a fork takes them: `key` (global) or `namespace.key`."""
        return {f"{ns}.{key}" if ns else key: value for (ns, key), value in self.values.items()}

    def binding_changes(self) -> dict[str, dict[str, dict[str, str]]]:
        """The port edits as a fork takes them: `{path: {"inputs": {port: key}, "outputs": {...}}}`."""
        out: dict[str, dict[str, dict[str, str]]] = {}
        for (path, direction, port), key in self.bindings.items():
            out.setdefault(path, {}).setdefault("inputs" if direction == "in" else "outputs", {})[port] = key
        return out

    def over(self, path: str, bindings: tuple[dict[str, str], dict[str, str]]) -> tuple[dict[str, str], dict[str, str]]:
        """A node's (inputs, outputs) bindings with its staged port edits applied."""
        inputs, outputs = dict(bindings[0]), dict(bindings[1])
        for (node, direction, port), key in self.bindings.items():
            if node == path:
                (inputs if direction == "in" else outputs)[port] = key
        return inputs, outputs


__all__ = ["EditError", "StagedEdits"]
