"""Edits a user makes to a run: port bindings and state values, live or staged in the past.

A live edit changes the runner at once (the next tick sees it) and is recorded as an
event. An edit made while a past checkpoint is shown is *staged*: the past frame shows it,
and only a fork from that checkpoint applies it (a replay never does).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.debug.edits import EditRefused, StateFacts, check_binding_key, check_port, check_state_key
from runtime.engine.behaviour import JianmuNodeMixin
from runtime.engine.events import EventType
from runtime.state import StateValidationError

from .persist import read_json, tree_file, write_json

if TYPE_CHECKING:
    from .session import DebugSession


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


class EditsMixin:
    """The edit intents of `DebugSession` (kept apart: they touch the runner only through these)."""

    def known_namespaces(self: DebugSession) -> set[str]:
        """Namespaces of the tree's nodes and of the state (a subtree may add more as it compiles)."""
        return set(StateFacts.of(self.runner).namespaces)

    def validate_binding_key(self: DebugSession, path: str, key: str) -> str:
        """The normalised state key, or `EditError` saying why the key cannot be bound.

        A key is bindable when the schema declares it, the state already holds it, the
        runtime owns it (`StateKeys`), or it is `<namespace>.<field>` for a known namespace.
        """
        node = self._node(path)
        return check_binding_key(StateFacts.of(self.runner), key, getattr(node, "namespace", None))

    def edit_binding(self: DebugSession, path: str, direction: str, port: str, key: str) -> None:
        """Rebind one port; it takes effect at the next tick and is recorded as an event.
        While a past checkpoint is shown the edit is staged for a fork from there."""
        node = self._node(path)
        if not isinstance(node, JianmuNodeMixin):
            raise EditError(f"{path} is a plain py_trees node: it has no ports")
        check_port(path, direction, port, [[way, name, None] for way, declared, bound in (
            ("in", node.input_ports, node.input_bindings), ("out", node.output_ports, node.output_bindings))
            for name in dict.fromkeys([*declared, *bound])])
        key = self.validate_binding_key(path, key)
        if self.viewing is not None:
            self.staged.bindings[(path, direction, port)] = key
            self._show(f"binding staged: fork (f) from checkpoint {self.viewing.id} applies it")
            return
        if self.recorded_run is not None:
            raise EditError("this is a recording: fork (f) from a checkpoint to edit it")
        old = (node.resolve_input_port if direction == "in" else node.resolve_output_port)(port)
        node.bind(**({"inputs": {port: key}} if direction == "in" else {"outputs": {port: key}}))
        self.bus.publish(EventType.BINDING_CHANGED, {"direction": direction, "port": port, "old": old, "new": key},
                         node=path)
        self._notify("changed")

    def bindings(self: DebugSession) -> dict[str, dict[str, dict[str, str]]]:
        """Every explicit binding of the tree, by node path."""
        out = {}
        for path, node in self.runner.nodes.items():
            if isinstance(node, JianmuNodeMixin) and (node.input_bindings or node.output_bindings):
                out[path] = {"inputs": node.input_bindings, "outputs": node.output_bindings}
        return out

    @property
    def bindings_file(self: DebugSession) -> Path:
        """Where "apply and save" keeps this tree's bindings: beside the store, never in the source tree."""
        return tree_file(self.store, self.loaded.path, self.loaded.function, "bindings")

    def save_bindings(self: DebugSession) -> Path:
        return write_json(self.bindings_file, self.bindings())

    def apply_bindings_file(self: DebugSession, path: Path | None = None) -> list[str]:
        """Apply a saved bindings file (this tree's by default); one line per entry that does not fit."""
        path = path or self.bindings_file
        try:
            data = read_json(path)
        except ValueError as exc:
            return [f"{exc}; ignored"]
        if data is None:
            return []
        if not isinstance(data, dict):
            return [f"{path}: not an object of node paths ({type(data).__name__}); ignored"]
        warnings = []
        for node_path, ports in data.items():
            if not isinstance(ports, dict):
                warnings.append(f"{path.name}: {node_path}: not an object of inputs/outputs; ignored")
                continue
            for direction, field_name in (("in", "inputs"), ("out", "outputs")):
                entries = ports.get(field_name) or {}
                if not isinstance(entries, dict):
                    warnings.append(f"{path.name}: {node_path} {field_name}: not an object; ignored")
                    continue
                for port, key in entries.items():
                    try:
                        self.edit_binding(node_path, direction, port, key)
                    except EditError as exc:
                        warnings.append(f"{path.name}: {node_path} {port}: {exc}")
        return warnings

    def edit_state(self: DebugSession, namespace: str | None, key: str, value: Any) -> None:
        """Set one state value (validated by the schema); recorded as a `state.edited` event.
        While a past checkpoint is shown the edit is staged for a fork from there."""
        if self.busy:
            raise EditError("pause the run before editing state")
        namespace = self._editable(namespace, key)
        try:
            value = self.runner.state_manager.validate(key, value, namespace)
        except (StateValidationError, ValueError) as exc:
            raise EditError(str(exc)) from None
        if self.viewing is not None:
            self.staged.values[(namespace or "", key)] = value
            self._show(f"edit staged: fork (f) from checkpoint {self.viewing.id} applies it")
            return
        if self.recorded_run is not None:
            raise EditError("this is a recording: fork (f) from a checkpoint to edit it")
        self._ensure_started()  # an edit before the first tick edits this run's input, not a state it resets
        sm = self.runner.state_manager
        old = sm.get(key, namespace)
        sm.load({key: value}, namespace, signal=True)
        self.bus.publish(EventType.STATE_EDITED, {"namespace": namespace, "key": key,
                                                  "old": _preview(old), "new": _preview(value)})
        self._notify("changed")

    def _editable(self: DebugSession, namespace: str | None, key: str) -> str | None:
        """The normalised namespace of an edit to `key`, or `EditError`: only keys the state
        schema declares, the runtime owns, or the state already holds can be edited."""
        return check_state_key(StateFacts.of(self.runner), namespace, key)


def _preview(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["EditError", "EditsMixin", "StagedEdits"]
