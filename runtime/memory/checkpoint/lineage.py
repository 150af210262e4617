"""The checkpoints a branch went through: its own, then those of the branches it forked from."""

from __future__ import annotations

from .model import CheckpointInfo
from .naming import display_name
from .store import CheckpointError, CheckpointStore


def lineage(store: CheckpointStore, run_id: str, branch: str = "main") -> list[CheckpointInfo]:
    """The checkpoints a branch went through, oldest first (into the branch it forked from)."""
    found = list(reversed(store.history(run_id, branch)))
    if not found:
        if not store.list(run_id):
            raise CheckpointError(f"{display_name(store.location)}: no run {run_id!r}")
        raise CheckpointError(f"{display_name(store.location)}: run {run_id} has no branch {branch!r} "
                              f"(branches: {', '.join(store.branches(run_id))})")
    return found


__all__ = ["lineage"]
