"""Why a run failed, in one line, and which tool calls failed on the way.

The status line, the node pane, the headless CLI's error line and its `--json` `error`
all read the same `Failure`, so a run tells one story everywhere: the failing node, the
first line of its error, and the run's termination reason (`error`, `max_iterations`,
`budget_exhausted`) as `AgentResult` names it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from py_trees.common import Status


@dataclass(frozen=True)
class Failure:
    """A failed run: where (`node`), why (`error`, maybe several lines) and its termination `reason`."""

    node: str | None
    error: str
    reason: str

    @property
    def first_line(self) -> str:
        text = self.error.strip()
        return text.splitlines()[0] if text else self.reason

    @property
    def line(self) -> str:
        """`node: first line of the error` (what a user reads first)."""
        return f"{self.node}: {self.first_line}" if self.node else self.first_line

    @property
    def headline(self) -> str:
        """`budget_exhausted at Squares: token budget spent…` (the status line and the CLI's stderr)."""
        reason = "failed" if self.reason in ("error", "completed") else self.reason
        where = f" at {self.node}" if self.node else ""
        return f"{reason}{where}: {self.first_line}"


def failure_of(agent: Any, runner: Any) -> Failure | None:
    """The failure of a finished run, or None when the root did not fail."""
    if runner.status != Status.FAILURE:
        return None
    result = agent.result_from(runner)
    failed = agent.failed_node(runner)
    if failed is not None:
        return Failure(failed[0], failed[1], result.termination_reason)
    termination = agent.termination(runner)
    node = termination.get("node") or _deepest_failure(runner)
    if result.error:
        error = result.error
    elif termination.get("reason") == "max_iterations":
        error = f"max_iterations: {termination.get('iterations')} of {termination.get('max_iterations')} used"
    else:
        error = f"{node or 'the tree'} returned FAILURE"
    return Failure(node, error, result.termination_reason)


def _deepest_failure(runner: Any) -> str | None:
    """The deepest node that returned FAILURE without raising (a condition, a plain py_trees node)."""
    return next((path for path, node in reversed(runner.nodes.items()) if node.status == Status.FAILURE), None)


@dataclass(frozen=True)
class ToolFailure:
    """One tool call that failed or was refused: which call, with what arguments, and why."""

    run_id: str | None
    tick: int
    tool: str
    call_id: str | None
    arguments: Any
    error: str


__all__ = ["Failure", "ToolFailure", "failure_of"]
