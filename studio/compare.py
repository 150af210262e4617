"""Two runs, or two branches of one, side by side: each tick as each side recorded it, what differed
there (`runtime.check.diff`, the same words as `jianmu-studio diff`), and the two states' difference
at any tick."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from runtime.check.compare import Difference, Sides, state_differences
from runtime.check.diff import Side, diff_runs
from runtime.memory.checkpoint import CheckpointInfo, CheckpointStore
from runtime.memory.checkpoint.lineage import lineage


@dataclass(frozen=True)
class Target:
    """One side of a comparison: a run's branch, and what the view calls it."""

    run_id: str
    branch: str
    label: str


def targets(store: CheckpointStore, run_id: str, branch: str) -> list[Target]:
    """What (run `run_id`, `branch`) can be compared with: the run's other branches, then the other
    runs of the store (newest first), each branch of them."""
    out = [Target(run_id, other, other) for other in store.branches(run_id) if other != branch]
    for run in reversed(store.runs()):
        if run.run_id != run_id:
            out += [Target(run.run_id, other, f"run {run.run_id[:8]} {other}") for other in run.branches]
    return out


@dataclass(frozen=True)
class Row:
    """One tick: each side's checkpoint there (None: that side never reached it) and what differed."""

    tick: int
    a: CheckpointInfo | None
    b: CheckpointInfo | None
    differences: tuple[Difference, ...]


class Comparison:
    """Two sides compared tick by tick; `first` is the tick of the first divergence (None: the same)."""

    def __init__(self, store: CheckpointStore, a: Target, b: Target, summary: Callable[[CheckpointInfo], str]):
        self.store, self.a, self.b, self.summary = store, a, b, summary
        self.report = diff_runs(Side(store, a.run_id, a.branch, a.label), Side(store, b.run_id, b.branch, b.label))
        last = [{info.tick: info for info in lineage(store, side.run_id, side.branch)} for side in (a, b)]
        self.rows = [Row(tick, last[0].get(tick), last[1].get(tick), tuple(self.report.ticks.get(tick, ())))
                     for tick in sorted({*last[0], *last[1]})]
        first = self.report.first
        self.first = first.tick if first is not None else None

    def state_differences(self, row: Row) -> list[Difference]:
        """Every state key whose value differs between the two sides at the row's tick (not only where
        it starts to differ, as the tick's differences say)."""
        if row.a is None or row.b is None:
            return []
        old, new = (self.store.get(info.id).state for info in (row.a, row.b))
        return state_differences(row.tick, old, new, Sides(self.a.label, self.b.label))


__all__ = ["Comparison", "Row", "Target", "targets"]
