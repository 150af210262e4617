"""What a runner drops of py_trees' per-node objects: what py_trees makes a node and never reads.

py_trees gives each node an `iterator`: an unstarted generator of the node's own tick, made at
construction and again at each py_trees `stop()`, read nowhere in py_trees and not among a
behaviour's documented attributes. It is ~240 B a node, a quarter of a py_trees leaf (24 MB of a
100,000-node tree), so a runner drops it from its tree when it indexes the tree and after it
stops the tree (a restart, a load: the stops that reach every node). A stop py_trees makes inside a
tick (a composite starting again stops its children) makes one again, for that subtree only.
"""

from __future__ import annotations

from collections.abc import Iterable

import py_trees


def drop_iterators(nodes: Iterable[py_trees.behaviour.Behaviour]) -> None:
    """Delete each node's own `iterator` (a node without one, or whose class defines it, is left as it is)."""
    for node in nodes:
        try:
            del node.iterator
        except AttributeError:  # (`contextlib.suppress` costs a node ~10x more: 100,000 a stop)
            continue


__all__ = ["drop_iterators"]
