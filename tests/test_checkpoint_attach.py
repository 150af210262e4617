"""A store's attach to a large tree takes its composites and jianmu nodes from the runner's index: it asks
no node of the 100,000 what it is (an isinstance and a `model_client` read a node cost ~120 ms of a launch)."""

import py_trees
from py_trees.composites import Selector, Sequence
from pydantic import BaseModel

from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import InMemoryCheckpointStore
from runtime.memory.checkpoint.runner_checkpoints import TREE_PATHS_FROM


class Empty(BaseModel):
    pass


class Unasked(py_trees.behaviours.Success):
    """A plain leaf that fails the test when asked for a model client (no plain node is injected one)."""

    @property
    def model_client(self):
        raise AssertionError(f"{self.name} asked for its model client")


def test_attaching_a_store_to_a_large_tree_asks_no_plain_node_what_it_is():
    stages = [Selector(f"s{i}", memory=False, children=[Unasked(f"n{i}.{j}") for j in range(10)])
              for i in range(TREE_PATHS_FROM // 10)]
    runner = ReactiveRunner(Sequence("root", memory=True, children=stages), Empty, checkpointer=InMemoryCheckpointStore())
    recorder = runner.checkpoints
    assert recorder._composites == {"root", *(f"root/s{i}" for i in range(len(stages)))}
    assert recorder._models == {} and recorder._baseline == {}
