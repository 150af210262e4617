"""Breakpoints: on a node, on an event type, or on a condition over state.

Conditions are small Python expressions (`rounds >= 2`, `len(messages) > 3 and not done`,
`agent.rounds == 1` for a namespaced key), compiled by `runtime.debug.conditions` (shared
with the debug server); a bad expression is a `BreakpointError` with a reason, never a crash.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from runtime.debug.conditions import Condition
from runtime.debug.conditions import ConditionError as BreakpointError
from runtime.engine.events import RuntimeEvent
from runtime.engine.runner import TickReport


@dataclass
class Breakpoint:
    """One breakpoint. `kind` says which of `node` / `event_type` / `condition` applies."""

    kind: Literal["node", "event", "condition"]
    node: str | None = None
    on: Literal["tick", "status"] = "tick"
    event_type: str | None = None
    condition: Condition | None = None
    enabled: bool = True
    _was_true: bool = field(default=False, repr=False)

    @property
    def label(self) -> str:
        if self.kind == "node":
            return f"node {self.node} ({'ticked' if self.on == 'tick' else 'status changes'})"
        if self.kind == "event":
            return f"event {self.event_type}"
        return f"when {self.condition.source}"

    def hit_by_tick(self, report: TickReport) -> bool:
        if self.kind != "node":
            return False
        return self.node in (report.ticked if self.on == "tick" else report.changed)

    def hit_by_event(self, event: RuntimeEvent) -> bool:
        return self.kind == "event" and event.type == self.event_type

    def hit_by_state(self, snapshot: Mapping[str, Mapping[str, Any]]) -> bool:
        """Edge-triggered: true once when the condition becomes true, not on every tick it stays so."""
        if self.kind != "condition":
            return False
        now = self.condition.evaluate(snapshot)
        hit = now and not self._was_true
        self._was_true = now
        return hit


__all__ = ["Breakpoint", "BreakpointError", "Condition"]
