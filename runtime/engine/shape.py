"""`check_shape`: a root that is a tree, refused in one line naming the node when it is not; and, in
the same walk, the tree's index (each node's path, in tree order) that its runner starts from.

Everything that walks a tree (paths, checkpoints, ticking itself) recurses or loops over
`children`: a node that is its own ancestor (built by appending a parent to its child's
`children`) sends them into a bare RecursionError or a loop without end, a node under two parents
gets two paths (and one parent pointer), a child that is not a behaviour fails deep inside
py_trees, a tree deeper than Python's stack can tick ends the same way, and a name holding a lone
surrogate fails the first save with a traceback (no store can encode it). The walk here is iterative, so it names the first such node before anything else walks.
It also finds a name holding `/` (two nodes would share a path): then `iter_paths` walks again to
name it as paths do.

One walk at 100,000 nodes is a launch's share of the runtime (Agent's check, then its runner's
index): so each node's path is its parent's joined once with its name (`iter_paths`' paths, the
same strings), a node's class is checked once a class (`Behaviour` is an ABC: `isinstance` on it
costs a node ~1 us), the names' storability is one encode of all the paths, and a node's line from
the root is made only to name it in an error (from the parent each node was met under).
"""

from __future__ import annotations

import collections
from typing import Any, NamedTuple

import py_trees

from .tree import TreeShapeError, _child_paths, iter_paths

MAX_DEPTH = 200
"""Levels below the root: a tick nests a generator frame or more per level, and Python's stack holds
about a thousand (a real agent's tree is a dozen deep)."""

_BEHAVIOURS: set[type] = set()  # classes found to be behaviours (a class's `isinstance` answer never changes)


class TreeIndex(NamedTuple):
    """A tree's nodes in tree order (parents before children, as `iter_paths` gives them) and their paths."""

    nodes: list[Any]
    paths: list[str]


def _path(line: list[Any]) -> str:
    """The names from the root down, the middle left out of a long line (`Root/…/C/D/E`)."""
    names = [str(node.name) for node in line]
    return "/".join(names if len(names) <= 6 else [names[0], "…", *names[-3:]])


def _line(node: Any, parents: dict[int, Any]) -> list[Any]:
    """The root down to `node`, along the parent each node was first met under."""
    line = [node]
    while (node := parents[id(node)]) is not None:
        line.append(node)
    return line[::-1]


def _storable(name: Any) -> bool:
    try:
        str(name).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _unstorable(nodes: list[Any], parents: dict[int, Any]) -> TreeShapeError | None:
    """The first of `nodes` whose name no store can keep, named as the walk names it."""
    node = next((node for node in nodes if not _storable(node.name)), None)
    if node is None:
        return None
    return TreeShapeError(f"node {_path(_line(node, parents))}: a name that is no text a store can keep "
                          "(a lone surrogate)")


def _met_again(node: Any, parent: Any, parents: dict[int, Any]) -> TreeShapeError:
    """A node walked already: its own ancestor (a cycle), or under a second parent."""
    line = [*_line(parent, parents), node]
    if any(above is node for above in line[:-1]):
        return TreeShapeError(f"node {node.name!r} is its own ancestor ({_path(line)}): a behaviour tree has no cycles")
    return TreeShapeError(f"node {node.name!r} is in the tree twice ({_path(_line(node, parents))} and "
                          f"{_path(line)}): a node has one parent")


def _walk(root: Any, nodes: list[Any], paths: list[str], parents: dict[int, Any]) -> tuple[bool, bool]:
    """Fill `nodes`, `paths` (tree order) and `parents` (id -> the parent first met under); raise the
    first node at fault as it is met. Returns whether a name holds a `/` and whether one is no text (then
    `paths` are not the tree's)."""
    slashed, texts = "/" in str(root.name), isinstance(root.name, str)
    plain = texts and not slashed
    stack = [(root, root.name if plain else "", None, 0)]  # (node, its path, its parent, its depth)
    while stack:
        node, path, parent, depth = stack.pop()
        cls = type(node)
        if cls not in _BEHAVIOURS:
            if not isinstance(node, py_trees.behaviour.Behaviour):
                raise TreeShapeError(f"node {_path(_line(parent, parents))}: a child that is a {cls.__name__}, "
                                     "not a behaviour")
            _BEHAVIOURS.add(cls)
        if id(node) in parents:
            raise _met_again(node, parent, parents)
        if depth > MAX_DEPTH:
            raise TreeShapeError(f"node {_path(_line(parent, parents))}: the tree is deeper than {MAX_DEPTH} levels")
        parents[id(node)] = parent
        nodes.append(node)
        paths.append(path)
        children = node.children
        if not children:
            continue
        names = [getattr(child, "name", "") for child in children]  # (not a behaviour: refused when popped)
        try:
            slashed = "/" in "\0".join(names) or slashed
        except TypeError:  # a name that is no text (`iter_paths` says what it says of it)
            texts = False
            slashed = any("/" in str(name) for name in names) or slashed
        plain = texts and not slashed
        if not plain:
            child_paths = names  # (not used: the paths are made again)
        elif len(set(names)) == len(names):
            prefix = path + "/"
            child_paths = [prefix + name for name in names]
        else:  # siblings that share a name: numbered as `iter_paths` numbers them
            try:
                child_paths = [child_path for _, child_path in _child_paths(node, path)]
            except AttributeError:  # a child that is no behaviour (refused when popped)
                child_paths = names
        depth += 1
        stack.extend((child, child_path, node, depth)
                     for child, child_path in zip(reversed(children), reversed(child_paths), strict=True))
    return slashed, not texts


def check_shape(root: Any) -> TreeIndex | None:
    """Raise `TreeShapeError` for a cycle, a node met twice, a child that is not a behaviour, a tree
    deeper than `MAX_DEPTH`, or a name no store can keep; `NameHoldsSlash` for a name holding `/`.
    Returns the tree's index, None for a tree with a name that is no text (its runner walks it itself)."""
    if not isinstance(root, py_trees.behaviour.Behaviour):
        raise TreeShapeError(f"the root is a {type(root).__name__}, not a behaviour")
    if not _storable(root.name):
        raise TreeShapeError(f"node {root.name!r}: a name that is no text a store can keep (a lone surrogate)")
    nodes: list[Any] = []
    paths: list[str] = []
    parents: dict[int, Any] = {}
    try:
        slashed, untexted = _walk(root, nodes, paths, parents)
    except TreeShapeError as exc:  # a name met before it is at fault first
        raise _unstorable(nodes, parents) or exc from None
    if not slashed and not untexted:
        try:
            "\n".join(paths).encode("utf-8")
        except UnicodeEncodeError:
            raise _unstorable(nodes, parents) from None
        return TreeIndex(nodes, paths)
    if (unstorable := _unstorable(nodes, parents)) is not None:
        raise unstorable
    if slashed:
        collections.deque(iter_paths(root), maxlen=0)  # names the node as paths do (`NameHoldsSlash`)
    return None


__all__ = ["MAX_DEPTH", "TreeIndex", "TreeShapeError", "check_shape"]
