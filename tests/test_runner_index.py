"""The runner's index of a tree (node -> path): keyed by the node itself where its class hashes as `object`
does (no int a node, ~32 B a node less at 100,000 nodes), by identity otherwise."""

import tracemalloc

import py_trees
import pytest
from py_trees.composites import Sequence
from pydantic import BaseModel

from runtime import Agent
from runtime.engine import ReactiveRunner
from sample_trees import large_tree
from studio.loader import LoadedTree
from studio.node_views import NodeColumns
from studio.session import DebugSession, open_store
from studio.widgets.tree_rows import TreeRows


class Empty(BaseModel):
    pass


class SameByName(py_trees.behaviours.Success):
    """Equal when named alike, and unhashable (`__eq__` without `__hash__`): indexed by identity all the same."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SameByName) and other.name == self.name

    __hash__ = None  # type: ignore[assignment]


async def test_nodes_equal_to_each_other_keep_their_own_paths():
    twins = [SameByName("t"), SameByName("t")]
    runner = ReactiveRunner(Sequence("root", memory=True, children=twins), Empty)
    assert [runner.path_of(node) for node in twins] == ["root/t", "root/t#2"]
    report = await runner.step(detailed=True)
    assert report.returns.paths == ["root/t", "root/t#2", "root"]


def test_the_runner_indexes_a_tree_in_under_220_bytes_a_node():
    """Paths (~90 B a node here) and the path and node indexes: ~190 B a node. A plain leaf's guard is
    its class's tick, nothing on the leaf (a partial on each leaf came to ~380 B a node). The tree's
    py_trees `iterator`s, which the runner drops, are dropped before measuring."""
    leaves = 20
    root = Sequence("root", memory=True, children=[
        Sequence(f"branch{b}", memory=True, children=[py_trees.behaviours.Success(f"branch{b}.leaf{leaf}")
                                                      for leaf in range(leaves)])
        for b in range(500)])
    for node in root.iterate():
        del node.iterator
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        runner = ReactiveRunner(root, Empty)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown / len(runner.nodes) < 220, grown / len(runner.nodes)


async def test_one_index_of_the_tree_by_place_serves_the_checkpoint_writer_and_the_studios_tree_rows(tmp_path):
    """A path -> place dict is ~70 B a node (7 MB at 100,000): the runner makes it once a tree shape, and the
    checkpoint writer's returns and the studio's tree rows read that one instead of each making their own."""
    agent = Agent(large_tree.build_root(2_000, stages=2), state_schema=large_tree.LargeState)
    session = DebugSession(LoadedTree(agent, tmp_path / "large.py", "build"), store=open_store(tmp_path / "runs.db"))
    await session.step()
    runner = session.runner
    places = runner.places
    assert list(places) == list(runner.nodes) and list(places.values()) == list(range(len(runner.nodes)))
    assert runner.places is places  # made once for this shape
    assert runner.checkpoints._tree.places is places
    assert TreeRows(session.node_views()).index is places
    runner.refresh_tree()  # a new shape (here the same nodes, indexed again): a new index
    assert runner.places is not places and runner.places == places


def test_a_tree_grown_mid_run_is_indexed_again_as_paths_index_it():
    """`refresh_tree` (a subtree compiled mid-run) indexes by the same walk as the shape check, falling back
    to `iter_paths` for what that walk gives up on: the same paths, and a name holding `/` refused as before."""
    from runtime.engine.tree import NameHoldsSlash, iter_paths

    root = Sequence("root", memory=True, children=[py_trees.behaviours.Success("a")])
    runner = ReactiveRunner(root, Empty)
    grown = Sequence("grown", memory=True, children=[py_trees.behaviours.Success("a"), py_trees.behaviours.Success("a")])
    root.add_child(grown)
    runner.refresh_tree()
    assert list(runner.nodes) == [path for _, path in iter_paths(root)] == [
        "root", "root/a", "root/grown", "root/grown/a", "root/grown/a#2"]
    assert runner.path_of(grown.children[1]) == "root/grown/a#2"
    shared = grown.children[0]
    root.children.append(shared)  # behind py_trees' back: a node under two parents, indexed as before
    runner.refresh_tree()
    assert list(runner.nodes)[-1] == "root/a#2"
    root.add_child(py_trees.behaviours.Success("x/y"))
    with pytest.raises(NameHoldsSlash):
        runner.refresh_tree()


def test_the_runners_rows_are_in_line_order_and_walked_without_following_their_links(tmp_path):
    """The search's index lists names in line order once the tree is drawn (a walk of 100,000 rows' links:
    ~40 ms of the first frame's work); the runner's index is depth-first, children in order, so its rows are
    that order as they come, and only rows it does not hold (a swarm agent's, after the host's) are walked."""
    agent = Agent(large_tree.build_root(2_000, stages=2), state_schema=large_tree.LargeState)
    session = DebugSession(LoadedTree(agent, tmp_path / "large.py", "build"))
    views = session.node_views()
    linked = TreeRows(NodeColumns.of(list(views)))  # the same rows, not the runner's index: walked by their links
    assert linked.walk() == list(range(len(views)))
    rows = TreeRows(views)
    rows.first_kid = rows.next_kid = None  # (not followed)
    assert rows.walk() == linked.walk()
