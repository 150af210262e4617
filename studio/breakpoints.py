"""Breakpoints: on a node (before it runs, or after its status changes), on an event type,
or on a condition over state; each counts its hits and can be disabled without being lost.

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

NodeMoment = Literal["before", "after"]
NODE_MOMENTS: tuple[NodeMoment, ...] = ("before", "after")


@dataclass
class Breakpoint:
    """One breakpoint. `kind` says which of `node` / `event_type` / `condition` applies.

    A node breakpoint stops *before* the node runs (inside the tick, at the runner's node
    boundary: its update and async work not started, so state and bindings can be edited
    first), or *after* its status changes (at the end of that tick: a change inside the tick counts,
    a loop's round returning FAILURE before the loop resets it).
    """

    kind: Literal["node", "event", "condition"]
    node: str | None = None
    on: NodeMoment = "before"
    event_type: str | None = None
    condition: Condition | None = None
    enabled: bool = True
    hits: int = 0
    _was_true: bool = field(default=False, repr=False)

    @property
    def label(self) -> str:
        if self.kind == "node":
            return f"{self.on} {self.node}" if self.on == "before" else f"after {self.node} changes status"
        if self.kind == "event":
            return f"event {self.event_type}"
        return f"when {self.condition.source}"

    @property
    def where(self) -> str:
        """What it watches: a node path, an event type, a condition's text."""
        if self.kind == "node":
            return self.node or ""
        if self.kind == "event":
            return self.event_type or ""
        return self.condition.source

    def stops_before(self, path: str) -> bool:
        return self.enabled and self.kind == "node" and self.on == "before" and self.node == path

    def hit_by_tick(self, report: TickReport) -> bool:
        """An after-breakpoint: its node's status changed in this (completed) tick, by the tick's end or
        at a return the end does not show (a loop's round that failed: `TickReport.moved`)."""
        return self.kind == "node" and self.on == "after" and report.moved(self.node)

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


    # -- kept across restarts (see `studio.persist`) -----------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "enabled": self.enabled, **self._what(when="on", event="event_type")}

    def to_protocol(self) -> dict[str, Any]:
        """The fields of the debug protocol's `break` request (docs/protocol.md)."""
        return {"kind": self.kind, **self._what(when="when", event="event")}

    def _what(self, *, when: str, event: str) -> dict[str, Any]:
        """Where it stops, under the field names of the saved file or of the protocol."""
        if self.kind == "node":
            return {"node": self.node, when: self.on}
        if self.kind == "event":
            return {event: self.event_type}
        return {"condition": self.condition.source}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Breakpoint:
        """One saved breakpoint; `BreakpointError` when it is not one."""
        kind = data.get("kind")
        enabled = bool(data.get("enabled", True))
        if kind == "node" and isinstance(data.get("node"), str) and data.get("on", "before") in NODE_MOMENTS:
            return cls("node", node=data["node"], on=data.get("on", "before"), enabled=enabled)
        if kind == "event" and isinstance(data.get("event_type"), str):
            return cls("event", event_type=data["event_type"], enabled=enabled)
        if kind == "condition" and isinstance(data.get("condition"), str):
            return cls("condition", condition=Condition(data["condition"]), enabled=enabled)
        raise BreakpointError(f"not a breakpoint: {dict(data)!r}")


__all__ = ["NODE_MOMENTS", "Breakpoint", "BreakpointError", "Condition", "NodeMoment"]
