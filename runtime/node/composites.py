"""`LoopUntilSuccess`, plus py_trees' own composites re-exported for one import line.

LoopUntilSuccess turns its child's FAILURE into another iteration: it resets the child to
INVALID, resets the step-scoped state of its namespace, wakes the runner itself (a
decorator returning RUNNING with no task pending would otherwise deadlock an
event-driven runner, pitfall 4) and returns RUNNING. It fails, writing structured
termination metadata to `InteractionKeys.TERMINATION`, when `max_iterations` failures
have happened or when `abort_condition()` says so (for example a spent token budget).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import py_trees
from py_trees.common import Status
from py_trees.composites import Parallel, Selector, Sequence

from ..engine.behaviour import Decorator
from ..state import InteractionKeys


class LoopUntilSuccess(Decorator):
    def __init__(self, name: str, child: py_trees.behaviour.Behaviour, max_iterations: int = 10,
                 abort_condition: Callable[[], bool] | None = None, namespace: str | None = None):
        if max_iterations < 1:
            raise ValueError(f"LoopUntilSuccess {name!r}: max_iterations must be >= 1, not {max_iterations}")
        super().__init__(name=name, child=child, namespace=namespace)
        self.max_iterations = max_iterations
        self.abort_condition = abort_condition
        self.iteration_count = 0

    def initialise(self) -> None:
        self.iteration_count = 0

    def update(self) -> Status:
        if self.abort_condition is not None and self.abort_condition():
            return self._terminate_with("aborted")
        child = self.decorated.status
        if child == Status.SUCCESS:
            return Status.SUCCESS
        if child != Status.FAILURE:
            return Status.RUNNING
        self.iteration_count += 1
        if self.iteration_count >= self.max_iterations:
            return self._terminate_with("max_iterations")
        self.decorated.stop(Status.INVALID)
        self.state_manager.reset_ephemeral("step", self.namespace)
        self.emit("loop.iteration", {"iteration": self.iteration_count, "max_iterations": self.max_iterations})
        self.state_manager.signal()
        return Status.RUNNING

    def _terminate_with(self, reason: str) -> Status:
        # a global key the runtime owns, wherever the loop lives (InteractionKeys)
        self.state_manager.update({InteractionKeys.TERMINATION: {
            "reason": reason, "node": self.path,
            "iterations": self.iteration_count, "max_iterations": self.max_iterations}}, signal=False)
        return Status.FAILURE

    # resume data for checkpoints: the only thing a restored loop cannot re-derive
    def dump_resume_state(self) -> dict[str, Any]:
        return {"iteration_count": self.iteration_count}

    def restore_resume_state(self, data: dict[str, Any]) -> None:
        self.iteration_count = int(data.get("iteration_count", 0))


__all__ = ["LoopUntilSuccess", "Parallel", "Selector", "Sequence"]
