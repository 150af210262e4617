"""`Timeout`: fail a child that is still RUNNING after `duration` seconds.

A timer armed in `initialise()` wakes the runner at the deadline, so an idle tree notices
the expiry without polling; the child is stopped (its task cancelled) on the way out.
A checkpoint keeps the time left; a restored RUNNING Timeout re-arms its timer for that
time instead of expiring at once: at the restore, so the timer can end the wait for a
restarted child, or at its next tick when the restore happened outside an event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import py_trees
from py_trees.common import Status

from ..engine.behaviour import Decorator


class Timeout(Decorator):
    def __init__(self, name: str, child: py_trees.behaviour.Behaviour, duration: float,
                 namespace: str | None = None):
        if duration <= 0:
            raise ValueError(f"Timeout {name!r}: duration must be positive, not {duration}")
        super().__init__(name=name, child=child, namespace=namespace)
        self.duration = duration
        self.expiry_time = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._clock: Callable[[], float] | None = None  # the loop time the timer runs on
        self._restored_remaining: float | None = None  # seconds left, restored outside an event loop

    def initialise(self) -> None:
        self._restored_remaining = None
        self._arm(self.duration)

    def _arm(self, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        self._cancel_timer()
        self._clock = loop.time
        self.expiry_time = loop.time() + seconds
        self._timer = loop.call_at(self.expiry_time, self.wake)

    def update(self) -> Status:
        if self._restored_remaining is not None:  # restored outside a loop: the clock runs on from now
            self._arm(self._restored_remaining)
            self._restored_remaining = None
        child = self.decorated.status
        if child in (Status.SUCCESS, Status.FAILURE):
            return child
        if asyncio.get_running_loop().time() >= self.expiry_time:
            self.emit("node.timeout", {"duration": self.duration})
            return Status.FAILURE
        return Status.RUNNING

    def terminate(self, new_status: Status) -> None:
        self._cancel_timer()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # resume data for checkpoints: the time left while the timer is armed
    def dump_resume_state(self) -> dict[str, Any]:
        if self._timer is not None and self._clock is not None:
            return {"remaining": max(0.0, self.expiry_time - self._clock())}
        if self._restored_remaining is not None:
            return {"remaining": self._restored_remaining}
        return {}

    def restore_resume_state(self, data: dict[str, Any]) -> None:
        self._cancel_timer()
        self._restored_remaining = None
        if data.get("remaining") is None:
            return
        try:
            self._arm(float(data["remaining"]))
        except RuntimeError:  # no running event loop: arm at the next tick
            self._restored_remaining = float(data["remaining"])


__all__ = ["Timeout"]
