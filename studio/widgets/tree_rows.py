"""The tree pane's model: every node a row of parallel arrays, not an object per node.

A 100,000-node tree kept as a `NodeView` per node (its children list, its parent's path made anew,
a dict entry, a set entry while stale) cost the studio ~500 bytes a node for lines mostly never
built. Here a node is its row number: its path, name and class are references to strings the
runner already holds, its parent and its first child and next sibling are 4-byte ints, its status
a byte; the few nodes with a loop counter, a
namespace, a breakpoint, a rebound port or a pending return are kept aside, by row. A line's
`NodeView` is made when the line is drawn (`view`), for the rows on screen.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import repeat
from operator import itemgetter
from typing import Any

from py_trees.common import Status

from ..node_views import NodeColumns, NodeView

NONE = -1  # no parent, no child, no next sibling
_STATUS_CODES = {id(status): code for code, status in enumerate(Status)}  # members live as long as the process


class TreeRows:
    """The nodes of `views` (the first the root) as rows, in their order, its columns taken as they are;
    children in the order their rows come (a swarm agent's root, listed after the host tree, last under
    the node that spawned it)."""

    def __init__(self, views: NodeColumns) -> None:
        count = len(views)
        self.paths = views.paths
        places = views.places  # (the runner's own index, when every row is one of its nodes: not made again)
        runners = places is not None and len(places) == count
        self.index = index = places if runners else dict(zip(self.paths, range(count), strict=True))
        self._in_line_order = runners  # (the runner's index is depth-first, children in order: its rows are lines')
        self.names, self.classes = views.names, views.classes
        self.namespaces, self.counters = dict(views.namespaces), dict(views.counters)
        self.breakpoints, self.pending, self.rebound = (self.marked(views.breakpoints), self.marked(views.pending),
                                                        self.marked(views.rebound))
        self._kinds: list[Any] = list(Status)  # the statuses met, by code: py_trees' (by identity, no
        self._codes: dict[Any, int] = {}  # Python-level Enum hash a row), then any other (a recorded string)
        codes = list(map(_STATUS_CODES.get, map(id, views.statuses)))
        self.status = bytearray(codes) if None not in codes else bytearray(map(self.code, views.statuses))
        parents = list(map(index.get, views.parents, repeat(NONE)))
        first, after = [NONE] * count, [NONE] * count
        for row in range(count - 1, 0, -1):  # from the last: each row goes before its later siblings
            up = parents[row]
            if up != NONE:
                after[row], first[up] = first[up], row
        if parents:
            parents[0] = NONE  # the root (views[0]) hangs under nothing
        self.parent, self.first_kid, self.next_kid = array("i", parents), array("i", first), array("i", after)

    def __len__(self) -> int:
        return len(self.paths)

    def code(self, status: Any) -> int:
        """The byte a status is kept as."""
        code = _STATUS_CODES.get(id(status))
        if code is None:
            code = self._codes.get(status)
            if code is None:
                code = self._codes[status] = len(self._kinds)
                self._kinds.append(status)
        return code

    def status_of(self, row: int) -> Any:
        return self._kinds[self.status[row]]

    def kids(self, row: int) -> Iterator[int]:
        kid = self.first_kid[row]
        while kid != NONE:
            yield kid
            kid = self.next_kid[kid]

    def has_kids(self, row: int) -> bool:
        return self.first_kid[row] != NONE

    def kid_paths(self, path: str) -> list[str]:
        paths = self.paths
        return [paths[kid] for kid in self.kids(self.index[path])]

    def restatus(self, statuses: Mapping[str, Any]) -> None:
        """Every row's status from `statuses` (every node's), the codes made in C."""
        try:
            self.status = bytearray(map(_STATUS_CODES.__getitem__, map(id, map(statuses.__getitem__, self.paths))))
        except KeyError:  # a status that is no py_trees member (a recorded string)
            self.status = bytearray(self.code(statuses[path]) for path in self.paths)

    def take_changes(self, changed: Mapping[str, tuple[Any, Any]]) -> None:
        """The new status of each changed node (path -> (old, new)): rows and codes looked up and stored in
        C (a step at 100,000 nodes changes ~10,000: a store each in Python cost ~2 ms)."""
        codes = list(map(_STATUS_CODES.get, map(id, map(itemgetter(1), changed.values()))))
        if None in codes:  # a status that is no py_trees member (a recorded string)
            codes = [self.code(new) for _, new in changed.values()]
        deque(map(self.status.__setitem__, map(self.index.__getitem__, changed), codes), maxlen=0)

    def marked(self, paths: Iterable[str]) -> set[int]:
        """The rows of `paths` (a tag's set: breakpoints, pending, rebound)."""
        index = self.index
        return {index[path] for path in paths if path in index}

    def refetch(self, row: int, fetch: Callable[[str], NodeView]) -> None:
        """A loop's row read again (`fetch`: the session's view of one node): its counter moves."""
        view = fetch(self.paths[row])
        self.status[row] = self.code(view.status)
        if view.counter is None:
            self.counters.pop(row, None)
        else:
            self.counters[row] = view.counter

    def walk(self) -> list[int]:
        """Every row, in line order (as if the whole tree were expanded): a row's next sibling waits on
        the stack under its first child (a search's first key at 100,000 nodes listed each row's
        children anew, ~100 ms of it); the runner's own rows are in that order already (~40 ms less)."""
        if self._in_line_order:
            return list(range(len(self.paths)))
        first, after, order = self.first_kid, self.next_kid, []
        stack = [0] if self.paths else []
        pop, push, visit = stack.pop, stack.append, order.append
        while stack:
            row = pop()
            visit(row)
            if row and after[row] != NONE:  # (the root's siblings, none, are not its lines')
                push(after[row])
            if first[row] != NONE:
                push(first[row])
        return order

    def view(self, row: int) -> NodeView:
        """What the row's line shows, as the label is drawn from (its children and depth left out)."""
        return NodeView(self.paths[row], self.names[row], self.classes[row], 0, None, [], self.status_of(row),
                        self.namespaces.get(row), self.counters.get(row), row in self.breakpoints,
                        row in self.pending, row in self.rebound)


__all__ = ["TreeRows"]
