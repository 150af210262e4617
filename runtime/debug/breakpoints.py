"""Breakpoints: on a node (before it runs, or after its status changes), on an event type, or on a
condition over state; each counts its hits and can be disabled without being lost.

One semantics and one form for every front end: a local studio keeps them in a file beside its
store, an attached one sends them over the debug protocol (docs/protocol.md), and both carry the
same JSON (`to_json`, `from_json`): `{"kind": "node", "node": path, "when": "before" | "after"}`,
`{"kind": "event", "event": type}` or `{"kind": "condition", "condition": text}`, each with
`enabled`. Conditions are small Python expressions (`rounds >= 2`, `len(messages) > 3 and not
done`, `agent.rounds == 1` for a namespaced key) compiled by `runtime.debug.conditions`; a bad
expression is a `BreakpointError` with a reason, never a crash.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..engine.events import RuntimeEvent
from ..engine.runner import TickReport
from .conditions import Condition
from .conditions import ConditionError as BreakpointError

NodeMoment = Literal["before", "after"]
NODE_MOMENTS: tuple[NodeMoment, ...] = ("before", "after")
KINDS = ("node", "event", "condition")


@dataclass(eq=False)
class Breakpoint:
    """One breakpoint. `kind` says which of `node` / `event_type` / `condition` applies.

    A node breakpoint stops *before* the node runs (inside the tick, at the runner's node
    boundary: its update and async work not started, so state and bindings can be edited
    first), or *after* its status changes (at the end of that tick: a change inside the tick counts,
    a loop's round returning FAILURE before the loop resets it). An event breakpoint stops
    at the end of the tick that published the event, or before the next tick when the event
    came between ticks (async work finishing); a condition likewise, when it *becomes* true.
    """

    kind: Literal["node", "event", "condition"]
    node: str | None = None
    on: NodeMoment = "before"
    event_type: str | None = None
    condition: Condition | None = None
    enabled: bool = True
    hits: int = 0
    id: int = 0  # the debugger's number for it (0 until a debugger holds it): the protocol names it so
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

    @property
    def checks_ticks(self) -> bool:
        """An enabled after-breakpoint: it reads each completed tick's report (`hit_by_tick`)."""
        return self.enabled and self.kind == "node" and self.on == "after"

    def hit_by_tick(self, report: TickReport) -> bool:
        """An after-breakpoint: its node's status changed in this (completed) tick, by the tick's end or
        at a return the end does not show (a loop's round that failed: `TickReport.moved`)."""
        return self.checks_ticks and report.moved(self.node)

    def hit_by_event(self, event: RuntimeEvent) -> bool:
        return self.enabled and self.kind == "event" and event.type == self.event_type

    def hit_by_state(self, snapshot: Mapping[str, Mapping[str, Any]]) -> bool:
        """Edge-triggered: true once when the condition becomes true, not on every tick it stays so."""
        if self.kind != "condition" or not self.enabled:
            return False
        now = self.condition.evaluate(snapshot)
        hit = now and not self._was_true
        self._was_true = now
        return hit

    def arm(self, snapshot: Mapping[str, Mapping[str, Any]]) -> None:
        """A condition set (or enabled) now fires on its next change to true, not because it holds now."""
        if self.kind == "condition":
            self._was_true = self.condition.evaluate(snapshot)

    # -- the one form: the breakpoints file and the debug protocol -----------------------
    def to_json(self) -> dict[str, Any]:
        """What a breakpoint is, as the breakpoints file keeps it and a `break` request sends it."""
        if self.kind == "node":
            what = {"node": self.node, "when": self.on}
        elif self.kind == "event":
            what = {"event": self.event_type}
        else:
            what = {"condition": self.condition.source}
        return {"kind": self.kind, **what, "enabled": self.enabled}

    def describe(self) -> dict[str, Any]:
        """`to_json` with the debugger's id and the hits so far: how the protocol shows one."""
        return {"id": self.id, **self.to_json(), "hits": self.hits}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Breakpoint:
        """One breakpoint from its JSON; `BreakpointError` saying what is wrong when it is not one.
        Files saved before the one form (`on`, `event_type`) are read too."""
        if not isinstance(data, Mapping):
            raise BreakpointError(f"a breakpoint is an object with a 'kind', not {type(data).__name__} {data!r:.40}")
        kind = data.get("kind")
        enabled = data.get("enabled", True)
        if not isinstance(enabled, bool):
            raise BreakpointError(f"a breakpoint's 'enabled' is true or false, not {enabled!r:.40}")
        if kind == "node":
            node, when = data.get("node"), data.get("when", data.get("on", "before"))
            if not isinstance(node, str) or not node:
                raise BreakpointError("a node breakpoint needs 'node', the node's path")
            if when not in NODE_MOMENTS:
                raise BreakpointError(f"a node breakpoint stops 'before' the node runs or 'after' it changes, "
                                      f"not {when!r:.40}")
            return cls("node", node=node, on=when, enabled=enabled)
        if kind == "event":
            event = data.get("event", data.get("event_type"))
            if not isinstance(event, str) or not event.strip():
                raise BreakpointError("an event breakpoint needs an event type, for example tool.call.failed")
            return cls("event", event_type=event.strip(), enabled=enabled)
        if kind == "condition":
            text = data.get("condition")
            if not isinstance(text, str):
                raise BreakpointError("a condition breakpoint needs 'condition', an expression over state")
            return cls("condition", condition=Condition(text), enabled=enabled)
        raise BreakpointError(f"breakpoint kind is node, event or condition, not {kind!r:.40}")


def check_names(condition: Condition, known: Iterable[str]) -> None:
    """`BreakpointError` naming the first name the condition reads that is not a `known` state field,
    key or namespace: a typo is said when the breakpoint is set, not left to be false for ever."""
    unknown = sorted(condition.names() - {*known, "True", "False", "None"})
    if unknown:
        raise BreakpointError(f"condition {condition.source!r}: no state key {unknown[0]!r}")


def marked_nodes(breakpoints: Iterable[Breakpoint]) -> set[str]:
    """The nodes a view marks as having a breakpoint: those an enabled one watches (a disabled one stops
    nothing, so a mark for it would say the run stops where it does not)."""
    return {bp.node for bp in breakpoints if bp.kind == "node" and bp.enabled and bp.node}


__all__ = ["KINDS", "NODE_MOMENTS", "Breakpoint", "BreakpointError", "Condition", "NodeMoment", "check_names",
           "marked_nodes"]
