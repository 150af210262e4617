"""Stable node paths: the identity a node keeps across processes.

`Behaviour.id` is a fresh uuid4 per process and names need not be unique (pitfall 8), so
checkpoints, events and the studio name a node by its path from the root:
`Root/Loop/Sequence/Leaf`, with `#2`, `#3`… on siblings that share a name. Two nodes never
share a path: a name holding `/` is refused, and a number is skipped where a sibling is named so.
"""

from __future__ import annotations

from collections.abc import Iterator

import py_trees


class TreeShapeError(ValueError):
    """A root that is not a tree (`shape.check_shape`), or whose nodes cannot each be named by a path
    of their own; `str()` is the one line to show."""


class NameHoldsSlash(TreeShapeError):
    """A node whose name holds a `/`: its own kind, so a tree file names it as the file's fault (the
    shape check raises it when a builder makes its Agent), not as the builder's crash."""


def iter_paths(root: py_trees.behaviour.Behaviour, prefix: str = "") -> Iterator[tuple[py_trees.behaviour.Behaviour, str]]:
    """Depth-first (node, path) pairs, parents before children; `TreeShapeError` naming the node
    whose name holds a `/` (that name and a child of a sibling would share one path)."""
    path = f"{prefix}/{_checked(root, prefix or None)}" if prefix else _checked(root, None)
    stack = [(root, path)]
    while stack:
        node, path = stack.pop()
        yield node, path
        stack.extend(reversed(_child_paths(node, path)))


def _child_paths(node: py_trees.behaviour.Behaviour, path: str) -> list[tuple[py_trees.behaviour.Behaviour, str]]:
    """Each child with its path: its name, then `#2`, `#3`… on later siblings of the same name, a
    number skipped when a sibling is literally named so (`Same`, `Same`, `Same#2` → `Same`,
    `Same#3`, `Same#2`): unique by construction."""
    names = [_checked(child, path) for child in node.children]
    taken = set(names)
    seen: dict[str, int] = {}
    named = []
    for child, name in zip(node.children, names, strict=True):
        count = seen.get(name, 0) + 1
        if count > 1:
            while f"{name}#{count}" in taken:
                count += 1
            taken.add(f"{name}#{count}")
        seen[name] = count
        named.append((child, f"{path}/{name}" if count == 1 else f"{path}/{name}#{count}"))
    return named


def _checked(node: py_trees.behaviour.Behaviour, parent: str | None) -> str:
    name = node.name
    if "/" in name:
        where = f" under {parent!r}" if parent else ""
        raise NameHoldsSlash(f"node {name!r}{where}: a name may not hold '/' (it separates the names of a path); "
                             "rename it")
    return name


def parent_path(path: str) -> str | None:
    head, sep, _ = path.rpartition("/")
    return head if sep else None


__all__ = ["NameHoldsSlash", "TreeShapeError", "iter_paths", "parent_path"]
