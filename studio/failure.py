"""Why a run failed, in one line, and which tool calls failed on the way.

The status line, the node pane, the headless CLI's error line and its `--json` `error`
all read the same `Failure`, so a run tells one story everywhere: the failing node, the
first line of its error, and the run's termination reason (`error`, `max_iterations`,
`budget_exhausted`) as `AgentResult` names it. The analysis is the runtime's
(`runtime.agent.Agent.failure`): a debug server sends it with `finished`, so an attached
studio tells the same story.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runtime.agent import Agent, Failure
from runtime.engine.runner import ReactiveRunner


def failure_of(agent: Agent, runner: ReactiveRunner) -> Failure | None:
    """The failure of a finished run (the runtime's own analysis, `Agent.failure`), or None."""
    return agent.failure(runner)


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
