"""Suspend and resume: a node asks the outside world for input (an approval, an answer).

Pending requests live in state (`InteractionKeys.PENDING`), so a checkpoint taken while a
run waits still knows what it waits for. The runner treats a RUNNING tree with pending
requests as *suspended*: `run()` returns and a later `run()` carries on once the request
is resolved.
"""

from __future__ import annotations

import uuid
from typing import Any

from ..state import InteractionKeys, StateManager


class InteractionController:
    def __init__(self, state_manager: StateManager, node: Any = None):
        self._state = state_manager
        self._node_path = getattr(node, "path", None)

    def pending(self) -> dict[str, dict[str, Any]]:
        return self._state.get(InteractionKeys.PENDING) or {}

    def request(self, kind: str, payload: dict[str, Any] | None = None, request_id: str | None = None) -> str:
        """Register what the run waits for; returns the request id (reused if already pending)."""
        pending = self.pending()
        request_id = request_id or uuid.uuid4().hex[:8]
        pending[request_id] = {"kind": kind, "payload": payload or {}, "node": self._node_path}
        # signal: a runner idling on the wake must tick once to notice that it is suspended
        self._state.update({InteractionKeys.PENDING: pending})
        return request_id

    def resolve(self, request_id: str, response: Any = None) -> None:
        """Answer a pending request and wake the runner."""
        pending = self.pending()
        if request_id not in pending:
            raise KeyError(f"no pending interaction with id {request_id!r}")
        del pending[request_id]
        responses = self._state.get(InteractionKeys.RESPONSES) or {}
        responses[request_id] = response
        self._state.update({InteractionKeys.PENDING: pending, InteractionKeys.RESPONSES: responses})

    def cancel(self, request_id: str) -> None:
        """Forget a request that no longer matters (its node was stopped)."""
        pending = self.pending()
        if pending.pop(request_id, None) is not None:
            self._state.update({InteractionKeys.PENDING: pending}, signal=False)

    def response(self, request_id: str, default: Any = None) -> Any:
        return (self._state.get(InteractionKeys.RESPONSES) or {}).get(request_id, default)

    @property
    def suspended(self) -> bool:
        return bool(self._state.get(InteractionKeys.PENDING))


__all__ = ["InteractionController"]
