"""What the tree pane shows of the nodes: a `NodeView` for one, `NodeColumns` for a whole frame.

A frame of a 100,000-node tree made a `NodeView` per node (its children's paths listed, its depth
counted) for a first frame that draws ~50 lines: half of its time. `NodeColumns` holds the same as a
list per field (most of them references to strings the runner holds already), the rare fields (a
namespace, a loop's counter) by row; it is still a sequence of `NodeView`, each made when asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

from py_trees.common import Status


@dataclass(slots=True)
class NodeView:
    """What the tree pane shows of one node."""

    path: str
    name: str
    class_name: str
    depth: int
    parent: str | None
    children: list[str]
    status: Status
    namespace: str | None
    counter: str | None  # "iter 2/10" for loops
    breakpoint: bool
    pending: bool = False  # a tick is held inside and this node has not returned in it yet (`status`: its last)
    rebound: bool = False  # its bindings differ from the tree file's (a debugger edited them)


class NodeColumns(Sequence[NodeView]):
    """A frame's nodes, the first its root, as columns; `view` makes a row's `NodeView` (by path) for the
    rows not added as views (`add`)."""

    def __init__(self, paths: list[str], names: list[str], classes: list[str], statuses: list[Any],
                 parents: list[str | None], namespaces: dict[int, str], counters: dict[int, str],
                 breakpoints: Set[str], pending: Set[str], view: Callable[[str], NodeView],
                 places: Mapping[str, int] | None = None) -> None:
        self.paths, self.names, self.classes, self.statuses, self.parents = paths, names, classes, statuses, parents
        self.places = places  # path -> row of the first rows, when the frame has that index (its runner's)
        self.namespaces, self.counters = namespaces, counters  # row -> its namespace, its loop's counter (the few)
        self.breakpoints, self.pending = set(breakpoints), set(pending)
        self.rebound: set[str] = set()
        self._view = view
        self._views: dict[int, NodeView] = {}  # the rows added as views

    @classmethod
    def of(cls, views: Iterable[NodeView]) -> NodeColumns:
        """Columns of views already made (an attached session's, a swarm agent's)."""
        columns = cls([], [], [], [], [], {}, {}, (), (), _no_view)
        columns.add(views)
        return columns

    def add(self, views: Iterable[NodeView]) -> None:
        """Rows after the others, from their views (kept: asked for, they are these)."""
        for view in views:
            row = len(self.paths)
            self._views[row] = view
            self.paths.append(view.path)
            self.names.append(view.name)
            self.classes.append(view.class_name)
            self.statuses.append(view.status)
            self.parents.append(view.parent)
            if view.namespace:
                self.namespaces[row] = view.namespace
            if view.counter is not None:
                self.counters[row] = view.counter
            for marked, tag in ((view.breakpoint, self.breakpoints), (view.pending, self.pending),
                                (view.rebound, self.rebound)):
                if marked:
                    tag.add(view.path)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[row] for row in range(*index.indices(len(self)))]
        row = range(len(self))[index]  # (IndexError past the end; a negative index from the end)
        view = self._views.get(row)
        return view if view is not None else self._view(self.paths[row])

    def __iter__(self) -> Iterator[NodeView]:
        return map(self.__getitem__, range(len(self)))


def _no_view(path: str) -> NodeView:
    raise KeyError(path)  # (columns `of` views: every row is one)


__all__ = ["NodeColumns", "NodeView"]
