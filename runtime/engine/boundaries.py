"""Node boundaries: the points inside a tick just before a node's own tick starts.

A tick is a py_trees generator (pitfall 2), and composites pass up whatever their
children yield. So to make a tick interruptible before a node, that node's `tick` is
wrapped to yield a `Marker` first: the runner, which drives the root generator, sees the
marker before the node's `initialise()`/`update()`/async work has started, and can hold
the generator there and resume it later from that exact point.

Only the nodes someone asked about are wrapped (and the wrappers are removed when nobody
asks any more), so a tick with no boundary requested runs exactly the code it always ran.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import py_trees


@dataclass(frozen=True)
class NodeBoundary:
    """Where the runner holds a tick: before the node at `path` ticks in tick `tick`.

    The node's `initialise()`, `update()` and async work for this tick have not started;
    state and bindings edited now are what it sees when the tick resumes.
    """

    tick: int
    path: str


class Marker:
    """What a wrapped node yields before it ticks (never leaves the runner)."""

    __slots__ = ("node",)

    def __init__(self, node: py_trees.behaviour.Behaviour):
        self.node = node


class BoundaryWraps:
    """The set of nodes whose tick is wrapped to yield a `Marker` first."""

    def __init__(self) -> None:
        self._wrapped: dict[int, tuple[py_trees.behaviour.Behaviour, object]] = {}

    def __bool__(self) -> bool:
        return bool(self._wrapped)

    def sync(self, nodes: Iterable[py_trees.behaviour.Behaviour]) -> None:
        """Wrap exactly `nodes`: wrap the new ones, unwrap the ones no longer wanted."""
        wanted = {id(node): node for node in nodes}
        for key in [key for key in self._wrapped if key not in wanted]:
            self._unwrap(key)
        for key, node in wanted.items():
            if key not in self._wrapped:
                self._wrap(node)

    def _wrap(self, node: py_trees.behaviour.Behaviour) -> None:
        previous = vars(node).get("tick")  # an instance-level tick someone else installed
        original = node.tick
        marker = Marker(node)

        def tick_after_boundary() -> Iterator[object]:
            yield marker
            yield from original()

        node.tick = tick_after_boundary
        self._wrapped[id(node)] = (node, previous)

    def _unwrap(self, key: int) -> None:
        node, previous = self._wrapped.pop(key)
        if previous is None:
            del node.tick
        else:
            node.tick = previous


__all__ = ["BoundaryWraps", "Marker", "NodeBoundary"]
