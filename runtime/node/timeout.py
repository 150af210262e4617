"""`Timeout`: fail a child that is still RUNNING after `duration` seconds.

A timer armed in `initialise()` wakes the runner at the deadline, so an idle tree notices
the expiry without polling; the child is stopped (its task cancelled) on the way out.
"""

from __future__ import annotations

import asyncio

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

    def initialise(self) -> None:
        loop = asyncio.get_running_loop()
        self.expiry_time = loop.time() + self.duration
        self._cancel_timer()
        self._timer = loop.call_at(self.expiry_time, self.wake)

    def update(self) -> Status:
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


__all__ = ["Timeout"]
