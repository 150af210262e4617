"""Runs that wait for an approval, and where one goes on from: what `Agent.resume` and
`jianmu-studio resume` read.

A run goes on from its last checkpoint, in whatever process resumes it, when no live process
writes it any more (it suspended, or its writer died or stopped) and it has not ended. A run
a live writer still holds is refused: two processes appending to one run would each run the
approved call. For the same reason the process that resumes takes the run over first, in one
compare-and-set of the run's facts (`ResumePoint.take`): of two that resume it at once (two
clicks on "approve", two workers), one goes on and the other is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...guard.approval import ApprovalRequest
from ...state import GLOBAL, InteractionKeys
from .liveness import RUNNING, SUSPENDED, run_liveness
from .model import CheckpointInfo
from .naming import display_name
from .store import CheckpointError, CheckpointStore, RunSummary

ENDED = ("completed", "failed")


def why_not_resumable(run: RunSummary) -> str | None:
    """Why `run` cannot go on in another process now (one line), or None when it can."""
    liveness = run_liveness(run)
    if liveness.state == RUNNING:
        writer = run.writer
        where = f" (process {writer.pid} on {writer.host})" if writer is not None else ""
        return f"run {run.run_id} is still being written{where}: resume it once it suspends"
    if liveness.state in ENDED:
        return f"run {run.run_id} has ended ({run.last_status}): nothing waits"
    return None


@dataclass(frozen=True)
class ResumePoint:
    """Where a run left by its writer goes on from, and its facts as read then (to take it over)."""

    checkpoint: CheckpointInfo
    facts: str | None

    def take(self, store: CheckpointStore) -> None:
        """Make this process the run's writer; `CheckpointError` when another one took it since."""
        if not store.take_over(self.checkpoint.run_id, self.facts):
            raise CheckpointError(f"run {self.checkpoint.run_id} was taken over by another process just now")


def resume_point(store: CheckpointStore, run_id: str) -> ResumePoint:
    """Where run `run_id` goes on from (its last checkpoint); `CheckpointError` saying why it cannot."""
    facts = store.get_meta(f"run:{run_id}")  # before the liveness: taking it over compares with these
    runs = store.runs(run_id)
    if not runs:
        raise CheckpointError(f"{display_name(store.location)}: no run {run_id!r}")
    why = why_not_resumable(runs[0])
    if why is not None:
        raise CheckpointError(why)
    return ResumePoint(store.latest(run_id), facts)


def waiting_approvals(store: CheckpointStore, run_id: str) -> list[ApprovalRequest]:
    """The approvals run `run_id` waits for at its last checkpoint, when this process may resume it
    (none when a live process writes it, or it has ended): what a view of the recording offers."""
    runs = store.runs(run_id)
    if not runs or why_not_resumable(runs[0]) is not None:
        return []
    last = store.get(store.latest(run_id).id, read_lists=False)
    pending = last.state.get(GLOBAL, {}).get(InteractionKeys.PENDING) or {}
    return [ApprovalRequest(id=approval_id, node=entry.get("node"), **{
        key: entry["payload"].get(key) for key in ("tool", "arguments", "call_id", "reason")})
            for approval_id, entry in pending.items() if entry.get("kind") == "approval"]


def waiting_runs(store: CheckpointStore) -> list[str]:
    """The runs of `store` that suspended for an approval and wait for it still, oldest first."""
    return [run.run_id for run in store.runs() if run_liveness(run).state == SUSPENDED]


__all__ = ["ResumePoint", "resume_point", "waiting_approvals", "waiting_runs", "why_not_resumable"]
