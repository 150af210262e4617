"""The session's breakpoint list: add, toggle, enable and remove, kept beside the store.

Kept apart from `DebugSession` like the edits: these intents touch the runner only through
its node-boundary seam (`stop_before`) and the list the stepping code reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .breakpoints import NODE_MOMENTS, Breakpoint, BreakpointError, Condition
from .children import refused_moment, split_child_path
from .edits import EditError
from .persist import read_json, tree_file, write_json

if TYPE_CHECKING:
    from .session import DebugSession


class BreakpointListMixin:
    """The breakpoint intents of `DebugSession`."""

    @property
    def breakpoints_file(self: DebugSession) -> Path:
        """Where this tree's breakpoints are kept: beside the store, never in the source tree."""
        return tree_file(self.store, self.loaded.path, self.loaded.function, "breakpoints")

    @property
    def breakpoints_kept(self: DebugSession) -> str:
        """Where the breakpoints live, as the breakpoints screen says it."""
        return (f"kept beside the store, in {self.breakpoints_file.parent.name}/ (never in the source tree); "
                "they come back when this tree is opened again")

    def _load_breakpoints(self: DebugSession) -> list[str]:
        """The breakpoints saved for this tree; one warning per entry (or file) that cannot be used."""
        try:
            saved = read_json(self.breakpoints_file) or []
        except ValueError as exc:
            return [f"{exc}; breakpoints not loaded"]
        warnings = []
        for data in saved if isinstance(saved, list) else []:
            try:
                self.breakpoints.append(Breakpoint.from_json(data if isinstance(data, dict) else {}))
            except BreakpointError as exc:
                warnings.append(f"{self.breakpoints_file.name}: {exc}; skipped")
        self._sync_stops()
        return warnings

    def _breakpoints_changed(self: DebugSession) -> None:
        self._sync_stops()
        try:
            write_json(self.breakpoints_file, [bp.to_json() for bp in self.breakpoints])
        except OSError as exc:
            self.message = f"breakpoints not saved: {self.breakpoints_file}: {exc.strerror}"
        self._notify("changed")

    def _sync_stops(self: DebugSession) -> None:
        """The runner stops before the nodes of enabled before-breakpoints (its node boundaries)."""
        self.runner.stop_before = {bp.node for bp in self.breakpoints if bp.enabled and bp.kind == "node"
                                   and bp.on == "before" and split_child_path(bp.node) is None}

    def toggle_node_breakpoint(self: DebugSession, path: str, on: str = "before") -> bool:
        """Add or remove a node breakpoint; True when one is now set."""
        self._node(path)
        existing = [bp for bp in self.breakpoints if bp.kind == "node" and bp.node == path]
        if existing:
            for bp in existing:
                self.breakpoints.remove(bp)
            self._breakpoints_changed()
            return False
        self.add_node_breakpoint(path, "after" if split_child_path(path) is not None else on)
        return True

    def add_node_breakpoint(self: DebugSession, path: str, on: str = "before") -> Breakpoint:
        """Stop before the node runs (`before`, the default) or after its status changes (`after`)."""
        if on not in NODE_MOMENTS:
            raise BreakpointError(f"a node breakpoint stops 'before' the node runs or 'after' it changes, not {on!r}")
        try:
            self._node(path)
        except EditError:
            raise BreakpointError(f"no node at path {path!r}") from None
        if (refused := refused_moment(path, on)) is not None:
            raise BreakpointError(refused)
        bp = Breakpoint("node", node=path, on=on)
        self.breakpoints.append(bp)
        self._breakpoints_changed()
        return bp

    def add_event_breakpoint(self: DebugSession, event_type: str) -> Breakpoint:
        event_type = event_type.strip()
        if not event_type:
            raise BreakpointError("an event breakpoint needs an event type, for example tool.call.failed")
        bp = Breakpoint("event", event_type=event_type)
        self.breakpoints.append(bp)
        self._breakpoints_changed()
        return bp

    def add_condition_breakpoint(self: DebugSession, expression: str) -> Breakpoint:
        """A condition over state; its names must be state fields, keys or namespaces of the tree."""
        condition = Condition(expression)
        sm = self.runner.state_manager
        known = {*sm.schema.model_fields, *sm.view(None), *(ns.split(".")[0] for ns in self.known_namespaces()),
                 "True", "False", "None"}
        unknown = sorted(condition.names() - known)
        if unknown:
            raise BreakpointError(f"condition {condition.source!r}: no state key {unknown[0]!r}")
        snapshot = {ns or "": sm.view(ns) for ns in sm.namespaces()}
        bp = Breakpoint("condition", condition=condition)
        bp._was_true = condition.evaluate(snapshot)  # validates names now, and fires on the next change
        self.breakpoints.append(bp)
        self._breakpoints_changed()
        return bp

    def set_breakpoint(self: DebugSession, bp: Breakpoint, *, enabled: bool | None = None, on: str | None = None) -> None:
        """Enable or disable a breakpoint, or switch a node breakpoint between before and after."""
        if enabled is not None:
            bp.enabled = enabled
        if on is not None:
            if bp.kind != "node" or on not in NODE_MOMENTS:
                raise BreakpointError(f"only a node breakpoint stops before or after, not {bp.label}")
            bp.on = on
        self._breakpoints_changed()

    def remove_breakpoint(self: DebugSession, bp: Breakpoint) -> None:
        if bp in self.breakpoints:
            self.breakpoints.remove(bp)
            self._breakpoints_changed()


__all__ = ["BreakpointListMixin"]
