"""What a guard is asked (`GuardRequest`) and what it answers (`Decision`, `GuardResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from runtime.messages import ToolCall


class Decision(StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    PENDING = "pending"  # a human must approve first


@dataclass(frozen=True)
class GuardResult:
    decision: Decision
    reason: str | None = None
    policy: str | None = None

    @property
    def allowed(self) -> bool:
        return self.decision is Decision.ALLOW


@dataclass(frozen=True)
class GuardRequest:
    """One tool call about to run.

    `usage_tokens` is the run's token usage so far; `approved` is set once a human has
    approved this very call, so confirmation policies stop asking. `effect_tags` are the
    tool's own effects, `tool_effects` those of the tools already run (the state key the
    executor merges them into after each round), so a policy can refuse by effect.
    """

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None
    usage_tokens: int = 0
    node: str | None = None
    approved: bool = False
    effect_tags: frozenset[str] = frozenset()
    tool_effects: frozenset[str] = frozenset()

    @classmethod
    def from_call(cls, call: ToolCall, **kwargs: Any) -> GuardRequest:
        return cls(tool=call.name, arguments=dict(call.arguments), call_id=call.id, **kwargs)


__all__ = ["Decision", "GuardRequest", "GuardResult"]
