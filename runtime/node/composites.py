"""`LoopUntilSuccess`, plus py_trees' own composites re-exported for one import line.

LoopUntilSuccess turns its child's FAILURE into another iteration: it resets the child to
INVALID, resets the step-scoped state of every namespace under it (its own and those of
the nodes it holds), wakes the runner itself (a decorator returning RUNNING with no task
pending would otherwise deadlock an event-driven runner, pitfall 4) and returns RUNNING.

`abort_condition()` is asked before every tick of the child, the first one included (seed
000: a spent budget must not run the child once more; an abort true from the start runs
nothing), and again when the child has just failed, before another iteration starts. It
answers falsy (go on), True (reason `"aborted"`) or a reason string (`"budget_exhausted"`);
an abort is logged at ERROR. The loop fails, writing structured termination metadata to
`InteractionKeys.TERMINATION` in its own namespace, on an abort or when its iterations are
spent: `max_iterations`, or fewer when the run's host caps every loop
(`RunContext.max_iterations_hard_limit`, seed 003: the smaller of the two applies). The
metadata is cleared when the loop starts again, so it always describes this run.

`answer_node` names the node whose outputs are the loop's result (a ReAct loop's LLM
node); `Agent` uses it to find the agents of a tree.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import py_trees
from py_trees.common import Status
from py_trees.composites import Parallel, Selector, Sequence

from ..engine.behaviour import Decorator, JianmuNodeMixin
from ..engine.user_code import FAILURES, PASSED_ON, failure
from ..state import InteractionKeys

log = logging.getLogger(__name__)

AbortCondition = Callable[[], bool | str | None]


class LoopUntilSuccess(Decorator):
    def __init__(self, name: str, child: py_trees.behaviour.Behaviour, max_iterations: int = 10,
                 abort_condition: AbortCondition | None = None, namespace: str | None = None):
        if max_iterations < 1:
            raise ValueError(f"LoopUntilSuccess {name!r}: max_iterations must be >= 1, not {max_iterations}")
        super().__init__(name=name, child=child, namespace=namespace)
        self.max_iterations = max_iterations
        self.abort_condition = abort_condition
        self.iteration_count = 0
        self.answer_node: py_trees.behaviour.Behaviour | None = None

    def initialise(self) -> None:
        self.iteration_count = 0
        if self.read_state(InteractionKeys.TERMINATION) is not None:  # a previous run's
            self._require_state().load({InteractionKeys.TERMINATION: None}, self.namespace)

    @property
    def effective_max_iterations(self) -> int:
        """`max_iterations`, or the host's cap on every loop of the run when that is lower."""
        cap = self.ctx.max_iterations_hard_limit if self.ctx is not None else None
        return self.max_iterations if cap is None else min(self.max_iterations, cap)

    def tick(self) -> Iterator[py_trees.behaviour.Behaviour]:
        """Ask `abort_condition` before the child runs, on the loop's first tick too; an abort fails
        the loop without ticking the child."""
        if self.status != Status.RUNNING:
            if not self._initialised():
                yield self
                return
            self.status = Status.RUNNING  # initialised: the decorator's own tick must not do it again
        try:
            reason = self._abort_reason()
        except PASSED_ON:
            raise
        except FAILURES as exc:  # the user's abort condition, sys.exit() in it too (runtime.engine.user_code)
            self._fail(failure(exc))
            reason = "aborted"
        if reason is not None:
            self.stop(self._terminate_with(reason))
            yield self
            return
        yield from super().tick()

    def update(self) -> Status:
        child = self.decorated.status
        if child == Status.SUCCESS:
            return Status.SUCCESS
        if child != Status.FAILURE:
            return Status.RUNNING
        reason = self._abort_reason()
        if reason is not None:
            return self._terminate_with(reason)
        self.iteration_count += 1
        if self.iteration_count >= self.effective_max_iterations:
            return self._terminate_with("max_iterations")
        self.decorated.stop(Status.INVALID)
        state = self._require_state()
        for namespace in self.namespaces_within():
            state.reset_ephemeral("step", namespace)
        self.emit("loop.iteration", {"iteration": self.iteration_count,
                                     "max_iterations": self.effective_max_iterations})
        state.signal()
        return Status.RUNNING

    def namespaces_within(self) -> list[str | None]:
        """The namespaces of this loop and of every Jianmu node under it, each once."""
        seen = dict.fromkeys(node.namespace for node in self.iterate() if isinstance(node, JianmuNodeMixin))
        return list(seen)

    def _abort_reason(self) -> str | None:
        if self.abort_condition is None:
            return None
        verdict = self.abort_condition()
        if not verdict:
            return None
        reason = verdict if isinstance(verdict, str) else "aborted"
        log.error("loop %s aborted after %d of %d iterations: %s", self.path, self.iteration_count,
                  self.effective_max_iterations, reason)
        return reason

    def _terminate_with(self, reason: str) -> Status:
        self.write_state({InteractionKeys.TERMINATION: {
            "reason": reason, "node": self.path,
            "iterations": self.iteration_count, "max_iterations": self.effective_max_iterations}}, signal=False)
        return Status.FAILURE

    # resume data for checkpoints: the only thing a restored loop cannot re-derive
    def dump_resume_state(self) -> dict[str, Any]:
        return {"iteration_count": self.iteration_count}

    def restore_resume_state(self, data: dict[str, Any]) -> None:
        self.iteration_count = int(data.get("iteration_count", 0))


def loop_counter(node: Any, status: Status, iteration_count: int | None = None) -> str | None:
    """What a debugger shows of a loop: "iter k/N", k the attempt it is on or ended on (None: not a
    loop). `iteration_count` (the node's own when not given: a checkpoint's resume data for a past
    frame) counts failed attempts, so a loop that succeeded on its second attempt has counted one."""
    if not isinstance(node, LoopUntilSuccess):
        return None
    count = node.iteration_count if iteration_count is None else iteration_count
    most = node.effective_max_iterations
    under_way = status != Status.INVALID and count < most  # a loop that used up its attempts has counted
    # the last one already
    return f"iter {count + 1 if under_way else count}/{most}"


__all__ = ["AbortCondition", "LoopUntilSuccess", "Parallel", "Selector", "Sequence", "loop_counter"]
