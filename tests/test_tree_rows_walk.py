"""The tree pane's rows walked in line order (what the tree search finds first, `NameIndex`): depth first,
children in the order their rows come, a node listed after the host tree (a swarm agent's root) under
the node that spawned it, not at the end."""

from __future__ import annotations

from py_trees.common import Status

from studio.node_views import NodeColumns, NodeView
from studio.widgets.tree_pane import NameIndex
from studio.widgets.tree_rows import TreeRows


def view(path: str) -> NodeView:
    parent = path.rpartition("/")[0] or None
    return NodeView(path, path.rpartition("/")[2], "Node", path.count("/"), parent, [], Status.INVALID, None, None, False)


ROWS = ["r", "r/a", "r/a/x", "r/a/y", "r/b", "r/b/z", "r/c", "r/a/@agent", "r/a/@agent/k", "r/b/w"]
LINES = ["r", "r/a", "r/a/x", "r/a/y", "r/a/@agent", "r/a/@agent/k", "r/b", "r/b/z", "r/b/w", "r/c"]


def expected_order(rows: TreeRows, row: int = 0) -> list[int]:
    return [row, *(line for kid in rows.kids(row) for line in expected_order(rows, kid))]


def test_rows_walk_in_line_order_with_later_rows_under_earlier_nodes():
    rows = TreeRows(NodeColumns.of(map(view, ROWS)))
    order = rows.walk()
    assert order == expected_order(rows)
    assert [rows.paths[row] for row in order] == LINES
    assert TreeRows(NodeColumns.of([])).walk() == []


def test_the_search_goes_through_the_names_in_line_order():
    rows = TreeRows(NodeColumns.of(map(view, ROWS)))
    order = rows.walk()
    index = NameIndex([rows.paths[row] for row in order], [rows.names[row] for row in order])
    assert index.find("@agent") == "r/a/@agent"
    assert index.find("w") == "r/b/w" and index.find("w", after="r/b/w") == "r/b/w"  # wrapped round to itself
    assert index.find("z", after="r/b/z") == "r/b/z" and index.find("k", after="r/a") == "r/a/@agent/k"
    assert index.find("c", after="r/b/w") == "r/c"
