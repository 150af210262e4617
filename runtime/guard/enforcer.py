"""`GuardEnforcer`: runs every policy on a call and combines their opinions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from runtime.guard.decision import Decision, GuardRequest, GuardResult
from runtime.guard.policies import (
    AllowList,
    Budget,
    DenyEffects,
    DenyList,
    Policy,
    RateLimit,
    RequireConfirmation,
)

_CONSTRAINT_KEYS = ("allow", "deny", "deny_effects", "require_confirmation", "rate_limits", "max_tool_calls",
                    "max_tokens")


class GuardEnforcer:
    """The first DENY wins; otherwise any PENDING; otherwise ALLOW.

    `check` has no side effects: call `record_call(tool)` when a call actually runs, so
    rate limits and budgets count executions, not questions.
    """

    def __init__(self, policies: Iterable[Policy] = (), *, constraints: Mapping[str, Any] | None = None):
        self.policies: list[Policy] = [*policies, *policies_from_constraints(constraints or {})]

    @classmethod
    def from_constraints(cls, constraints: GuardEnforcer | Mapping[str, Any] | Iterable[Policy] | None
                         ) -> GuardEnforcer:
        """Accept what a node's `constraints=` may hold: an enforcer, a dict, policies, or None."""
        if isinstance(constraints, GuardEnforcer):
            return constraints
        if isinstance(constraints, Mapping):
            return cls(constraints=constraints)
        return cls(constraints or ())

    def check(self, request: GuardRequest) -> GuardResult:
        pending: GuardResult | None = None
        for policy in self.policies:
            result = policy.check(request)
            if result is None:
                continue
            if result.decision is Decision.DENY:
                return result
            if result.decision is Decision.PENDING and pending is None:
                pending = result
        return pending or GuardResult(Decision.ALLOW)

    def record_call(self, tool: str) -> None:
        for policy in self.policies:
            policy.record(tool)


def policies_from_constraints(constraints: Mapping[str, Any]) -> list[Policy]:
    """Policies for a dict such as
    `{"allow": [...], "deny": [...], "deny_effects": [tag, ...], "require_confirmation": [...],
    "rate_limits": {tool: (n, seconds)}, "max_tool_calls": n, "max_tokens": n}`.
    """
    unknown = set(constraints) - set(_CONSTRAINT_KEYS)
    if unknown:
        raise ValueError(f"unknown guard constraint(s) {', '.join(sorted(unknown))}; "
                         f"expected some of {', '.join(_CONSTRAINT_KEYS)}")
    policies: list[Policy] = []
    if constraints.get("deny"):
        policies.append(DenyList(constraints["deny"]))
    if constraints.get("deny_effects"):
        policies.append(DenyEffects(constraints["deny_effects"]))
    if constraints.get("allow") is not None:
        policies.append(AllowList(constraints["allow"]))
    for tool, (max_calls, per_seconds) in constraints.get("rate_limits", {}).items():
        policies.append(RateLimit(tool, max_calls, per_seconds))
    if constraints.get("max_tool_calls") is not None or constraints.get("max_tokens") is not None:
        policies.append(Budget(constraints.get("max_tool_calls"), constraints.get("max_tokens")))
    if constraints.get("require_confirmation"):
        policies.append(RequireConfirmation(constraints["require_confirmation"]))
    return policies


__all__ = ["GuardEnforcer", "policies_from_constraints"]
