"""What a checkpoint changed since its parent: state keys, node statuses, and its timeline row's summary.

A local studio (`studio.timeline`) and an attached one (`runtime.debug.past`, the server's rows) each
show a row a checkpoint with `3 nodes; messages, rounds`: worked out here once, so the two cannot
count differently (a node changed inside its tick only, a list held by reference, a run's first row).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from operator import is_not
from typing import Any

from ..memory.checkpoint import CheckpointInfo
from .names import State


def changed_keys(old: State, new: State) -> list[list[Any]]:
    """`[qualified key, old, new]` for every key added, changed or removed between two states."""
    out = []
    for ns in dict.fromkeys([*old, *new]):
        before, after = old.get(ns, {}), new.get(ns, {})
        for key in dict.fromkeys([*before, *after]):
            if before.get(key) != after.get(key) or (key in before) != (key in after):
                out.append([f"{ns}.{key}" if ns else key, before.get(key), after.get(key)])
    return out


class TakenStatuses(Mapping):
    """Every node's status as a tick left them, taken as one list (~1 ms at 100,000 nodes, where a
    `{path: status}` dict costs ~15 ms): named per path only when first read as a mapping (a headless
    run never; a timeline row compares two takes of one tree list to list)."""

    def __init__(self, paths: list[str], statuses: list[Any]):
        self.paths, self.statuses = paths, statuses  # never changed
        self._named: dict[str, str] | None = None

    def _by_path(self) -> dict[str, str]:
        if self._named is None:
            self._named = {path: status.value for path, status in zip(self.paths, self.statuses, strict=True)}
        return self._named

    def __getitem__(self, path: str) -> str:
        return self._by_path()[path]

    def __iter__(self):
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)


def changed_only_within(transient: Iterable[str], statuses: Mapping[str, str], before: Mapping[str, str]) -> int:
    """How many of a tick's `transient` nodes (`Returns.transient`: they returned a status they did not
    end it with) ended it as the parent checkpoint had them: changed inside the tick only, so a row
    counts them beside the nodes whose status differs from the parent's."""
    return sum(1 for path in transient if statuses.get(path, "INVALID") == before.get(path, "INVALID"))


def changed_nodes(statuses: Mapping[str, str], before: Mapping[str, str], transient: Iterable[str]) -> int:
    """How many nodes changed status since `before` (INVALID where `before` has none): at the tick's
    end, or only inside it (`transient`, few). Two takes of one tree compare list to list, naming neither."""
    if type(statuses) is type(before) is TakenStatuses and statuses.paths == before.paths:
        changed = sum(map(is_not, statuses.statuses, before.statuses))
    else:
        changed = sum(1 for path, status in statuses.items() if before.get(path, "INVALID") != status)
    return changed + changed_only_within(transient, statuses, before)


def row_numbers(statuses: Mapping[str, str], transient: Iterable[str], state: State,
                parent: tuple[Mapping[str, str], State] | None) -> tuple[int, list[str]]:
    """(nodes changed, state keys changed) of a checkpoint's row since its `parent` (statuses, state);
    a run's first (no parent): the nodes it holds. The states name keys as the studio shows them and
    hold a stored list by its reference, so a row never reads a list."""
    if parent is None:
        return len(statuses), []
    before, parent_state = parent
    return (changed_nodes(statuses, before, transient),
            [key for key, _, _ in changed_keys(parent_state, state)])  # keys in the state pane's order


def checkpoint_summary(info: CheckpointInfo, nodes: int, keys: list[str]) -> str:
    """A timeline row's `changed`, local and attached alike: `3 nodes; messages, rounds` (statuses and
    state keys changed since the parent); a run's first row: `input`, or the nodes it holds."""
    counted = f"{nodes:,} node" + ("" if nodes == 1 else "s")
    if info.parent_id is None:
        return "input" if info.tick == 0 else counted
    shown = ", ".join(keys[:4]) + (" …" if len(keys) > 4 else "")
    source = f"{info.source}: " if info.source not in ("loop", "input") else ""
    return source + counted + (f"; {shown}" if shown else "")


__all__ = ["TakenStatuses", "changed_keys", "changed_nodes", "changed_only_within", "checkpoint_summary",
           "row_numbers"]
