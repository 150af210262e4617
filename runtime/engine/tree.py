"""Stable node paths: the identity a node keeps across processes.

`Behaviour.id` is a fresh uuid4 per process and names need not be unique (pitfall 8), so
checkpoints, events and the studio name a node by its path from the root:
`Root/Loop/Sequence/Leaf`, with `#2`, `#3`… on siblings that share a name.
"""

from __future__ import annotations

from collections.abc import Iterator

import py_trees


def iter_paths(root: py_trees.behaviour.Behaviour, prefix: str = "") -> Iterator[tuple[py_trees.behaviour.Behaviour, str]]:
    """Depth-first (node, path) pairs, parents before children."""
    path = f"{prefix}/{root.name}" if prefix else root.name
    stack = [(root, path)]
    while stack:
        node, path = stack.pop()
        yield node, path
        seen: dict[str, int] = {}
        named = []
        for child in node.children:
            count = seen.get(child.name, 0) + 1
            seen[child.name] = count
            named.append((child, f"{path}/{child.name}" if count == 1 else f"{path}/{child.name}#{count}"))
        stack.extend(reversed(named))


def parent_path(path: str) -> str | None:
    head, sep, _ = path.rpartition("/")
    return head if sep else None


__all__ = ["iter_paths", "parent_path"]
