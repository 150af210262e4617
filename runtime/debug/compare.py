"""Two runs, or two branches of one, side by side: each tick as each side recorded it, what differed
there (`runtime.check.diff`, the same words as `jianmu-studio diff`), and the two states' difference
at any tick.

Computed where the checkpoint store is: in a local studio's process, or, for an attached studio, by
the debug server of the run it is attached to, which sends it as JSON (`comparison_json`) and the
states' difference at a tick when it is asked for (`tick_state`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..check.compare import Difference, Sides, state_differences
from ..check.diff import Side, diff_runs
from ..memory.checkpoint import CheckpointError, CheckpointInfo, CheckpointStore
from ..memory.checkpoint.lineage import lineage


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
class Cell:
    """One side's checkpoint at a tick, as its cell shows it."""

    id: int
    status: str
    summary: str


@dataclass(frozen=True)
class Row:
    """One tick: each side's checkpoint there (None: that side never reached it) and what differed."""

    tick: int
    a: Cell | None
    b: Cell | None
    differences: tuple[Difference, ...]


@dataclass
class Comparison:
    """Two sides compared tick by tick; `first` is the tick of the first divergence (None: the same),
    `first_line` what differs there. `states(row)`: every state key whose value differs between the two
    sides at the row's tick (a list, or an awaitable of one when the store is another process's)."""

    a: Target
    b: Target
    first: int | None
    first_line: str | None
    rows: list[Row]
    states: Callable[[Row], Any] = field(repr=False, compare=False)


def compare(store: CheckpointStore, run_id: str, branch: str, target: Target,
            summary: Callable[[CheckpointInfo], str]) -> Comparison:
    """(run `run_id`, `branch`) and `target` side by side; `summary(info)`: what a cell says of a checkpoint.
    The store's `CheckpointError`/`StoreError` when it cannot tell."""
    a = Target(run_id, branch, branch if target.run_id == run_id else f"run {run_id[:8]} {branch}")
    for side in (a, target):
        if store.latest(side.run_id, side.branch) is None:
            raise CheckpointError(f"run {side.run_id[:8]} has no branch {side.branch!r} in the store (deleted?)")
    report = diff_runs(Side(store, a.run_id, a.branch, a.label), Side(store, target.run_id, target.branch, target.label))
    last = [{info.tick: info for info in lineage(store, side.run_id, side.branch)} for side in (a, target)]

    def cell(info: CheckpointInfo | None) -> Cell | None:
        return None if info is None else Cell(info.id, info.status, summary(info))

    rows = [Row(tick, cell(last[0].get(tick)), cell(last[1].get(tick)), tuple(report.ticks.get(tick, ())))
            for tick in sorted({*last[0], *last[1]})]
    first = report.first
    return Comparison(a, target, first.tick if first is not None else None, first.line if first is not None else None,
                      rows, lambda row: tick_state(store, a.label, target.label, row.tick, row.a and row.a.id,
                                                   row.b and row.b.id))


def tick_state(store: CheckpointStore, a: str, b: str, tick: int, a_id: int | None,
               b_id: int | None) -> list[Difference]:
    """Every state key whose value differs between checkpoints `a_id` (side `a`) and `b_id` at `tick` (not
    only where it starts to differ, as the tick's differences say); none when a side has no checkpoint."""
    if a_id is None or b_id is None:
        return []
    old, new = (store.get(checkpoint_id).state for checkpoint_id in (a_id, b_id))
    return state_differences(tick, old, new, Sides(a, b))


# -- as the debug protocol carries them ------------------------------------------------------
def target_json(target: Target) -> dict[str, str]:
    return {"run_id": target.run_id, "branch": target.branch, "label": target.label}


def target_of(data: Any) -> Target:
    """`target_json` read back; `ValueError` naming the field when it is not one."""
    if not isinstance(data, dict):
        raise ValueError(f"a comparison's side is {{run_id, branch, label}}, not {data!r:.60}")
    for name in ("run_id", "branch", "label"):
        if not isinstance(data.get(name), str):
            raise ValueError(f"a comparison's side needs a string {name!r}")
    return Target(data["run_id"], data["branch"], data["label"])


def differences_json(differences: Any) -> list[list[Any]]:
    return [[d.tick, d.node, d.what, d.summary, list(d.detail)] for d in differences]


def differences_of(data: Any) -> list[Difference]:
    return [Difference(tick, node, what, summary, tuple(detail)) for tick, node, what, summary, detail in data]


def comparison_json(comparison: Comparison) -> dict[str, Any]:
    """A comparison's rows as the debug server sends them (a cell as `[id, status, summary]`)."""
    def cell(c: Cell | None) -> list[Any] | None:
        return None if c is None else [c.id, c.status, c.summary]

    return {"a": target_json(comparison.a), "b": target_json(comparison.b), "first": comparison.first,
            "first_line": comparison.first_line,
            "rows": [[row.tick, cell(row.a), cell(row.b), differences_json(row.differences)] for row in comparison.rows]}


def comparison_of(data: dict[str, Any], states: Callable[[Row], Any]) -> Comparison:
    """`comparison_json` read back, the states' difference at a tick told by `states`."""
    def cell(c: Any) -> Cell | None:
        return None if c is None else Cell(*c)

    rows = [Row(tick, cell(a), cell(b), tuple(differences_of(found))) for tick, a, b, found in data["rows"]]
    return Comparison(target_of(data["a"]), target_of(data["b"]), data["first"], data["first_line"], rows, states)


__all__ = ["Cell", "Comparison", "Row", "Target", "compare", "comparison_json", "comparison_of", "differences_json",
           "differences_of", "target_json", "target_of", "targets", "tick_state"]
