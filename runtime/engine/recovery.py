"""`CheckpointRecoveryFacade`: the one recovery entry point of a custom node.

Business progress belongs in ordinary state. Only a non-idempotent external effect (a
payment, an email, a file write outside the run) needs a record: `begin()` before it,
`complete()` after it. A node restored mid-effect asks `status()` and reconciles instead
of doing the effect twice. The records live in state, so every checkpoint carries them.
It lives in the engine because every node reaches it (`node.recovery`); the checkpoint
package re-exports it under the seed's name (`runtime.memory.checkpoint`).
"""

from __future__ import annotations

import time
from typing import Any, Literal

from ..state import StateManager

EFFECTS_KEY = "recovery.effects"

EffectStatus = Literal["started", "completed", "failed"]


class CheckpointRecoveryFacade:
    def __init__(self, state_manager: StateManager, node: Any):
        self._state = state_manager
        self._owner = getattr(node, "path", None) or getattr(node, "name", "?")

    def _records(self) -> dict[str, dict[str, Any]]:
        return self._state.get(EFFECTS_KEY) or {}

    def _write(self, effect_id: str, **fields: Any) -> None:
        records = self._records()
        key = f"{self._owner}::{effect_id}"
        records[key] = {**records.get(key, {}), **fields, "time": time.time()}
        self._state.update({EFFECTS_KEY: records}, signal=False)

    def begin(self, effect_id: str, detail: Any = None) -> None:
        """Record that the effect is about to happen."""
        self._write(effect_id, status="started", detail=detail)

    def complete(self, effect_id: str, result: Any = None) -> None:
        self._write(effect_id, status="completed", result=result)

    def fail(self, effect_id: str, error: str) -> None:
        self._write(effect_id, status="failed", error=error)

    def status(self, effect_id: str) -> EffectStatus | None:
        """None: never started; "started": it may or may not have happened (reconcile)."""
        record = self._records().get(f"{self._owner}::{effect_id}")
        return record["status"] if record else None

    def record(self, effect_id: str) -> dict[str, Any] | None:
        return self._records().get(f"{self._owner}::{effect_id}")


__all__ = ["EFFECTS_KEY", "CheckpointRecoveryFacade"]
