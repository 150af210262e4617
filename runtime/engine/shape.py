"""`check_shape`: a root that is a tree, refused in one line naming the node when it is not; and the
tree's index (each node's path, in tree order) that its runner starts from, made by the same walk.

Everything that walks a tree (paths, checkpoints, ticking itself) recurses or loops over
`children`: a node that is its own ancestor (built by appending a parent to its child's
`children`) sends them into a bare RecursionError or a loop without end, a node under two parents
gets two paths (and one parent pointer), a child that is not a behaviour fails deep inside
py_trees, a tree deeper than Python's stack can tick ends the same way, and a name holding a lone
surrogate fails the first save with a traceback (no store can encode it). The walks here are iterative.

A launch at 100,000 nodes walks the tree here once (Agent's check; its runner starts from the index),
so the walk that indexes does per node only what paths need (each path its parent's joined once with
the name, `iter_paths`' strings and order) and checks the rest a parent's children at a time (their
names: no `/`, text; their identities: a node met twice or its own ancestor), or once for the tree:
its classes (`Behaviour` is an ABC: `isinstance` costs ~1 us a node) and all the names' storability
(one encode of the paths).
Anything out of the ordinary there and `_fault` walks the tree again node by node, to name the first
node at fault as it meets it (its line from the root: what only an error needs).
"""

from __future__ import annotations

from itertools import repeat
from operator import attrgetter
from typing import Any, NamedTuple

import py_trees

from .tree import TreeShapeError, _child_paths, iter_paths

MAX_DEPTH = 200
"""Levels below the root: a tick nests a generator frame or more per level, and Python's stack holds
about a thousand (a real agent's tree is a dozen deep)."""

_END = object()
_TEXT = {str}
_BEHAVIOURS: set[type] = set()  # classes found to be behaviours (a class's answer never changes)


class TreeIndex(NamedTuple):
    """A tree's nodes in tree order (parents before children, as `iter_paths` gives them), their paths,
    their classes and the nodes that have children (what the runner would otherwise walk for); and the
    names the paths were made of (a node renamed since has a path of its old name: `renamed`)."""

    nodes: list[Any]
    paths: list[str]
    kinds: list[type]
    parents: list[Any]
    names: list[Any]

    @classmethod
    def of(cls, pairs: list[tuple[Any, str]]) -> TreeIndex:
        """The index of (node, path) pairs in tree order (`iter_paths`')."""
        nodes = [node for node, _ in pairs]
        return cls(nodes, [path for _, path in pairs], list(map(type, nodes)), [node for node in nodes if node.children],
                   list(map(attrgetter("name"), nodes)))

    def renamed(self) -> bool:
        """Whether a node has been given another name since the index was made (user code naming a node
        after `Agent()` checked its tree): its path here holds the old one."""
        return list(map(attrgetter("name"), self.nodes)) != self.names


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


def _behaviours(classes: set[type]) -> bool:
    if classes <= _BEHAVIOURS:
        return True
    if not all(issubclass(cls, py_trees.behaviour.Behaviour) for cls in classes):
        return False
    _BEHAVIOURS.update(classes)
    return True


def _indexed(root: Any) -> TreeIndex | None:
    """The tree's index, None when a node is out of the ordinary (at fault, or a name that is no text
    or holds a `/`): then `_fault` names it, or the runner indexes the tree as paths do."""
    if type(root.name) is not str or "/" in root.name:
        return None
    nodes: list[Any] = []
    paths: list[str] = []
    parents: list[Any] = []
    all_names: list[str] = []
    stack = [(root, root.name, root.name, 0)]  # (node, its name, its path, its depth)
    pop, add_node, add_path, add_parent, add_name = stack.pop, nodes.append, paths.append, parents.append, all_names.append
    try:
        seen = {root}  # (by the node's own hash, no int a node; a node that hashes otherwise: `_fault` walks it)
        while stack:
            node, name, path, depth = pop()
            add_node(node)
            add_name(name)
            add_path(path)
            children = node.children
            if not children:
                continue
            if depth == MAX_DEPTH:
                return None
            add_parent(node)
            known = len(seen)
            seen.update(children)
            names = [child.name for child in children]
            if len(seen) != known + len(children) or set(map(type, names)) != _TEXT or "/" in "\0".join(names):
                return None  # (a str subclass too: `iter_paths` formats it, which may not be its text)
            if len(set(names)) == len(names):
                prefix = path + "/"
                child_paths = [prefix + name for name in names]
            else:  # siblings that share a name: numbered as `iter_paths` numbers them
                child_paths = [child_path for _, child_path in _child_paths(node, path)]
            stack.extend(zip(reversed(children), reversed(names), reversed(child_paths), repeat(depth + 1)))
    except (AttributeError, TypeError):  # a child that is no behaviour, a name that is no text, a node unhashable
        return None
    kinds = list(map(type, nodes))
    if not _behaviours(set(kinds)):
        return None
    try:
        "\n".join(paths).encode("utf-8")
    except UnicodeEncodeError:
        return None
    return TreeIndex(nodes, paths, kinds, parents, all_names)


def _fault(root: Any) -> tuple[bool, bool]:
    """Raise for the first node at fault as a depth-first walk meets it; whether a name holds a `/`, and
    whether every name is a text."""
    line = [root]  # the root down to the node being walked
    on_line = {id(root)}
    seen = {id(root): root.name}  # every node walked: its path, for a node met twice
    slashed, texts = "/" in str(root.name), isinstance(root.name, str)
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
        texts = texts and isinstance(child.name, str)
        line.append(child)
        on_line.add(id(child))
        seen[id(child)] = _path(line)
        children.append(iter(child.children))
    return slashed, texts


def index_tree(root: Any) -> TreeIndex:
    """The index of a tree checked before and grown since (a subtree compiled mid-run): no check raises,
    a tree the fast walk gives up on is indexed as `iter_paths` indexes it."""
    return _indexed(root) or TreeIndex.of(list(iter_paths(root)))


def check_shape(root: Any) -> TreeIndex | None:
    """Raise `TreeShapeError` for a cycle, a node met twice, a child that is not a behaviour, a tree
    deeper than `MAX_DEPTH`, or a name no store can keep; `NameHoldsSlash` for a name holding `/`.
    Returns the tree's index, None for a tree with a name that is no text (its runner walks it itself, and
    `iter_paths` says what it says of the name)."""
    if not isinstance(root, py_trees.behaviour.Behaviour):
        raise TreeShapeError(f"the root is a {type(root).__name__}, not a behaviour")
    if not _storable(root.name):
        raise TreeShapeError(f"node {root.name!r}: a name that is no text a store can keep (a lone surrogate)")
    index = _indexed(root)
    if index is not None:
        return index
    slashed, texts = _fault(root)
    if not (slashed or texts):
        return None
    pairs = list(iter_paths(root))  # (a `/` in a name raises here, named as the paths name it: numbered siblings)
    return TreeIndex.of(pairs) if texts else None  # (a node that hashes otherwise, say)


__all__ = ["MAX_DEPTH", "TreeIndex", "TreeShapeError", "check_shape", "index_tree"]
