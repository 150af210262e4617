"""What a large tree's first step no longer pays for, and that nothing was lost on the way.

The runner hands its wake-up only to the nodes that take injections (listed when it indexes
the tree, including a subtree compiled later); the checkpointer indexes the tree when it
attaches, so the tree's own port bindings are those it had then, not at the first save.
"""

from __future__ import annotations

import asyncio

import py_trees
from py_trees.common import Status
from pydantic import BaseModel

from runtime.engine import ReactiveRunner
from runtime.memory.checkpoint import InMemoryCheckpointStore
from runtime.node import AsyncNode, Node, Sequence


class State(BaseModel):
    n: int = 0
    m: int = 0


class Wakes(AsyncNode):
    """Notes whether it holds the runner's live wake-up while its work runs."""

    seen: list = []

    async def update_async(self) -> Status:
        await asyncio.sleep(0)
        Wakes.seen.append(self._wake_up)
        return Status.SUCCESS


class Write(Node):
    output_ports = ("out",)

    def update(self) -> Status:
        self.write_port("out", 1)
        return Status.SUCCESS


def test_only_jianmu_nodes_take_the_live_wake_up_and_give_it_back():
    wakes = Wakes("wakes")
    root = py_trees.composites.Sequence("plain", memory=True, children=[
        py_trees.behaviours.Success("leaf"), Sequence("inner", memory=True, children=[wakes])])
    runner = ReactiveRunner(root, State)
    Wakes.seen = []
    asyncio.run(runner.run())
    assert Wakes.seen and all(seen == runner._on_wake_signal for seen in Wakes.seen)
    assert wakes._wake_up is None  # idle again once the run returned
    assert not hasattr(root.children[0], "_wake_up")


def test_the_trees_own_bindings_are_those_it_had_when_the_store_attached():
    node = Write("write")
    runner = ReactiveRunner(Sequence("root", memory=True, children=[node]), State, checkpointer=InMemoryCheckpointStore())
    node.bind(outputs={"out": "m"})  # rebound without telling anyone: no edit the checkpoints record
    asyncio.run(runner.run())
    first = runner.checkpoints.store.list(runner.run_id)[0]
    runner.restore(first.id)
    assert node.output_bindings == {}  # as built (the first save used to take {"out": "m"} for it)
    assert runner.checkpoints.bindings_at(runner.checkpoints.store.get(first.id), "write") == ({}, {})


def test_a_whole_capture_is_the_capture_of_every_path():
    """The whole tree's capture (built apart from a capture of given paths) gives the same
    statuses and composite positions, in the tree's order, mid-run."""
    root = Sequence("root", memory=True, children=[
        Write("first"), py_trees.composites.Selector("choose", memory=True, children=[
            py_trees.behaviours.Failure("no"), Sequence("inner", memory=True, children=[Wakes("wakes")])])])
    runner = ReactiveRunner(root, State)
    asyncio.run(runner.step())
    whole, listed = runner.capture(), runner.capture(list(runner.nodes))
    assert list(whole.statuses.items()) == list(listed.statuses.items())
    assert whole.positions == listed.positions == {"root": 1, "root/choose": 1, "root/choose/inner": 0}
    assert whole.statuses["root/choose/inner/wakes"] == "RUNNING"


def test_a_capture_without_statuses_has_the_same_positions_and_the_lists_the_statuses():
    root = Sequence("root", memory=True, children=[Write("first"), Sequence("then", memory=True, children=[
        Wakes("wakes"), Write("last")])])
    runner = ReactiveRunner(root, State)
    asyncio.run(runner.step())
    whole, bare = runner.capture(), runner.capture(statuses=False)
    assert bare.statuses == {} and (bare.positions, bare.resume) == (whole.positions, whole.resume)
    paths, statuses = runner.status_lists()
    assert {path: status.value for path, status in zip(paths, statuses, strict=True)} == whole.statuses
