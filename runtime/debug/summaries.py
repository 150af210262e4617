"""A timeline row's summary from the tick that saved its checkpoint, not from the store.

A row says how many node statuses and which state keys its checkpoint changed since its parent
(`past.checkpoint_summary`). Read from the store, that is a checkpoint decoded per row (~100 us
a row: more than a small tree's tick, for every tick of a recording run). The tick that saved it
knows as much: its report's changes, and the keys written since the checkpoint before it. So the
server notes them as the run ticks, and decodes only the checkpoints it could not follow: one
saved between ticks (an edit, a suspension: the parent is not the tick before's), a swarm's (its
agents change with it), one whose keys a list value changed (stored by reference, not by value),
or whose order it cannot tell (a key new beside another change: the store lists new keys last).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from ..engine.record import TickReport
from .names import StateNames

KEPT = 10_000  # ticks noted and not summed up yet (a client far behind: the older ones are decoded)


class TickSummaries:
    def __init__(self, names: StateNames):
        self.names = names
        self._noted: OrderedDict[int, tuple[int | None, int, list[str]]] = OrderedDict()  # id -> (parent, nodes, keys)
        self._head: int | None = None  # the checkpoint the last tick saved
        self._written: dict[tuple[str, str], tuple[Any, Any]] = {}  # (namespace, key) -> (old, new) since then
        self._followed = True  # nothing written since then that the store compares otherwise

    def wrote(self, namespace: str, changes: Mapping[str, tuple[Any, Any]]) -> None:
        for key, (old, new) in changes.items():
            if isinstance(old, list) or isinstance(new, list) or new is None:
                self._followed = False
            first = self._written.get((namespace, key))
            self._written[namespace, key] = (old if first is None else first[0], new)

    def saved(self, head: int | None, report: TickReport, *, followed: bool) -> None:
        """The tick of `report` saved checkpoint `head` (`followed`: nothing else changes with it)."""
        if head is not None and head != self._head and followed and self._followed:
            changed = {}
            for (namespace, key), (old, new) in self._written.items():
                if old != new:
                    changed.setdefault(namespace, {})[key] = (old, new)
            if sum(map(len, changed.values())) < 2 or not any(
                    old is None for values in changed.values() for old, _ in values.values()):
                keys = [f"{ns}.{key}" if ns else key
                        for ns, values in self.names.state(changed, parsed=True).items() for key in values]
                nodes = len(report.changed) + sum(1 for path in report.transient if path not in report.changed)
                self._noted[head] = (self._head, nodes, keys)
                while len(self._noted) > KEPT:
                    self._noted.popitem(last=False)
        self._head, self._written, self._followed = head, {}, True

    def take(self, checkpoint_id: int, parent_id: int | None) -> tuple[int, list[str]] | None:
        """(statuses changed, keys changed) of a checkpoint noted, whose parent is the one the tick
        before saved; None: read it from the store."""
        noted = self._noted.pop(checkpoint_id, None)
        if noted is None or parent_id is None or noted[0] != parent_id:
            return None
        return noted[1], noted[2]


__all__ = ["TickSummaries"]
