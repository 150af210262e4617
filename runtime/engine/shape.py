"""`check_shape`: a root that is a tree, refused in one line naming the node when it is not.

Everything that walks a tree (paths, checkpoints, ticking itself) recurses or loops over
`children`: a node that is its own ancestor (built by appending a parent to its child's
`children`) sends them into a bare RecursionError or a loop without end, a node under two parents
gets two paths (and one parent pointer), a child that is not a behaviour fails deep inside
py_trees, a tree deeper than Python's stack can tick ends the same way, and a name holding a lone
surrogate fails the first save with a traceback (no store can encode it). The walk here is iterative, so it names the first such node before anything else walks.
It also finds a name holding `/` (two nodes would share a path): then `iter_paths` walks again to
name it as paths do, so a tree file is walked once when it loads (Agent's check), not twice.
A root checked is marked so that the runner made from it next (`check_shape_once`) does not walk
the same 100,000 nodes again a moment later (~0.3 s at that size).
"""

from __future__ import annotations

import collections
import contextlib
import weakref
from typing import Any

import py_trees

from .tree import TreeShapeError, iter_paths

MAX_DEPTH = 200
"""Levels below the root: a tick nests a generator frame or more per level, and Python's stack holds
about a thousand (a real agent's tree is a dozen deep)."""

_END = object()
_CHECKED: dict[int, weakref.ref] = {}  # roots checked that no runner has been made from yet, by identity
# (a node class may define __eq__ without __hash__, and two equal roots are still two trees)


def _path(line: list[Any]) -> str:
    """The names from the root down, the middle left out of a long line (`Root/…/C/D/E`)."""
    names = [str(node.name) for node in line]
    return "/".join(names if len(names) <= 6 else [names[0], "…", *names[-3:]])


def _storable(name: Any) -> bool:
    try:
        str(name).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_shape(root: Any) -> None:
    """Raise `TreeShapeError` for a cycle, a node met twice, a child that is not a behaviour, a tree
    deeper than `MAX_DEPTH`, or a name no store can keep; `NameHoldsSlash` for a name holding `/`."""
    if not isinstance(root, py_trees.behaviour.Behaviour):
        raise TreeShapeError(f"the root is a {type(root).__name__}, not a behaviour")
    if not _storable(root.name):
        raise TreeShapeError(f"node {root.name!r}: a name that is no text a store can keep (a lone surrogate)")
    line = [root]  # the root down to the node being walked
    on_line = {id(root)}
    seen = {id(root): root.name}  # every node walked: its path, for a node met twice
    slashed = "/" in str(root.name)
    children = [iter(root.children)]
    while children:
        child = next(children[-1], _END)
        if child is _END:
            children.pop()
            on_line.discard(id(line.pop()))
            continue
        if not isinstance(child, py_trees.behaviour.Behaviour):
            raise TreeShapeError(f"node {_path(line)}: a child that is a {type(child).__name__}, not a behaviour")
        if id(child) in on_line:
            raise TreeShapeError(f"node {child.name!r} is its own ancestor ({_path([*line, child])}): "
                                 "a behaviour tree has no cycles")
        if id(child) in seen:
            raise TreeShapeError(f"node {child.name!r} is in the tree twice ({seen[id(child)]} and "
                                 f"{_path([*line, child])}): a node has one parent")
        if len(line) > MAX_DEPTH:
            raise TreeShapeError(f"node {_path(line)}: the tree is deeper than {MAX_DEPTH} levels")
        if not _storable(child.name):
            raise TreeShapeError(f"node {_path([*line, child])}: a name that is no text a store can keep "
                                 "(a lone surrogate)")
        slashed = slashed or "/" in str(child.name)
        line.append(child)
        on_line.add(id(child))
        seen[id(child)] = _path(line)
        children.append(iter(child.children))
    if slashed:  # named as the paths name it (`iter_paths`: the parent's path, numbered siblings)
        collections.deque(iter_paths(root), maxlen=0)
    key = id(root)
    with contextlib.suppress(TypeError):  # (no weak reference to it: a runner checks it again)
        _CHECKED[key] = weakref.ref(root, lambda _: _CHECKED.pop(key, None))


def check_shape_once(root: Any) -> None:
    """`check_shape`, unless it has just passed on this root (an Agent's, before its runner is made):
    the mark is used up, so a later runner on the same root walks it again."""
    marked = _CHECKED.pop(id(root), None)
    if marked is None or marked() is not root:
        check_shape(root)


__all__ = ["MAX_DEPTH", "TreeShapeError", "check_shape", "check_shape_once"]
