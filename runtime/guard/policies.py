"""Guard policies: small rules that each answer DENY, PENDING or "no opinion" (None) for a call."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable

from runtime.guard.decision import Decision, GuardRequest, GuardResult


class Policy(ABC):
    """Base policy: `check` gives an opinion, `record` counts a call that actually ran."""

    @property
    def name(self) -> str:
        return type(self).__name__

    @abstractmethod
    def check(self, request: GuardRequest) -> GuardResult | None: ...

    def record(self, tool: str) -> None:  # noqa: B027 - optional hook
        """Stateless policies ignore executed calls."""

    def _result(self, decision: Decision, reason: str) -> GuardResult:
        return GuardResult(decision, reason, self.name)


class AllowList(Policy):
    """Only the named tools may run."""

    def __init__(self, names: Iterable[str]):
        self.names = frozenset(names)

    def check(self, request: GuardRequest) -> GuardResult | None:
        if request.tool in self.names:
            return None
        return self._result(Decision.DENY, f"tool '{request.tool}' is not in the allow list")


class DenyList(Policy):
    """The named tools may never run."""

    def __init__(self, names: Iterable[str]):
        self.names = frozenset(names)

    def check(self, request: GuardRequest) -> GuardResult | None:
        if request.tool not in self.names:
            return None
        return self._result(Decision.DENY, f"tool '{request.tool}' is denied")


class RequireConfirmation(Policy):
    """The named tools run only after a human approves the call."""

    def __init__(self, names: Iterable[str]):
        self.names = frozenset(names)

    def check(self, request: GuardRequest) -> GuardResult | None:
        if request.tool not in self.names or request.approved:
            return None
        return self._result(Decision.PENDING, f"tool '{request.tool}' requires confirmation")


class DenyEffects(Policy):
    """Tools with any of the effect `tags` may not run; with `after`, only once the run's
    `tool_effects` hold one of those (no `network` after `reads_secrets`, say)."""

    def __init__(self, tags: Iterable[str], *, after: Iterable[str] | None = None):
        self.tags = frozenset(tags)
        self.after = frozenset(after) if after is not None else None

    def check(self, request: GuardRequest) -> GuardResult | None:
        hit = sorted(self.tags & request.effect_tags)
        if not hit:
            return None
        if self.after is None:
            return self._result(Decision.DENY, f"tool '{request.tool}' has the denied effect {', '.join(hit)}")
        earlier = sorted(self.after & request.tool_effects)
        if not earlier:
            return None
        return self._result(Decision.DENY, f"tool '{request.tool}' ({', '.join(hit)}) may not run after a tool "
                                           f"with the effect {', '.join(earlier)}")


class RateLimit(Policy):
    """At most `max_calls` calls of `tool` in any sliding window of `per_seconds`."""

    def __init__(self, tool: str, max_calls: int, per_seconds: float, *,
                 clock: Callable[[], float] = time.monotonic):
        self.tool = tool
        self.max_calls = max_calls
        self.per_seconds = per_seconds
        self._clock = clock
        self._calls: deque[float] = deque()

    def _in_window(self) -> int:
        horizon = self._clock() - self.per_seconds
        while self._calls and self._calls[0] <= horizon:
            self._calls.popleft()
        return len(self._calls)

    def check(self, request: GuardRequest) -> GuardResult | None:
        if request.tool != self.tool or self._in_window() < self.max_calls:
            return None
        return self._result(Decision.DENY, f"rate limit: tool '{self.tool}' allows "
                                           f"{self.max_calls} calls per {self.per_seconds:g}s")

    def record(self, tool: str) -> None:
        if tool == self.tool:
            self._calls.append(self._clock())


class Budget(Policy):
    """Caps on the number of tool calls run so far and on the tokens the request reports."""

    def __init__(self, max_calls: int | None = None, max_tokens: int | None = None):
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self.calls = 0

    def check(self, request: GuardRequest) -> GuardResult | None:
        if self.max_calls is not None and self.calls >= self.max_calls:
            return self._result(Decision.DENY, f"budget: {self.calls} tool calls used (max {self.max_calls})")
        if self.max_tokens is not None and request.usage_tokens >= self.max_tokens:
            return self._result(Decision.DENY, f"budget: {request.usage_tokens} tokens used "
                                               f"(max {self.max_tokens})")
        return None

    def record(self, tool: str) -> None:
        self.calls += 1


__all__ = ["AllowList", "Budget", "DenyEffects", "DenyList", "Policy", "RateLimit", "RequireConfirmation"]
