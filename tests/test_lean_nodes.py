"""py_trees' `iterator` (an unstarted generator of a node's tick, ~240 B a node, read nowhere) is dropped
by the runner from its tree when it indexes it and after its own stops, which reach every node."""

import py_trees
from py_trees.common import Status
from py_trees.composites import Parallel, Sequence
from pydantic import BaseModel

from runtime.engine import ReactiveRunner
from runtime.node import Node


class Empty(BaseModel):
    pass


class Done(Node):
    def update(self) -> Status:
        return Status.SUCCESS


def tree() -> py_trees.behaviour.Behaviour:
    return Sequence("root", memory=True, children=[
        Parallel("fan", policy=py_trees.common.ParallelPolicy.SuccessOnAll(), children=[
            Sequence("s", memory=False, children=[py_trees.behaviours.Success("a"), Done("b")]),
            py_trees.behaviours.Success("r")]),
        py_trees.behaviours.Success("c")])


def holding(runner: ReactiveRunner) -> list[str]:
    return [path for path, node in runner.nodes.items() if hasattr(node, "iterator")]


async def test_the_runner_drops_the_iterators_of_its_tree_and_after_its_stops():
    runner = ReactiveRunner(tree(), Empty)
    assert holding(runner) == []
    await runner.step()
    assert holding(runner) == ["root", "root/fan", "root/fan/s"]  # py_trees' stops in the tick: finished
    runner.stop()
    assert holding(runner) == []
    await runner.step()
    runner.start_fresh()
    assert holding(runner) == []


async def test_a_tree_whose_iterators_were_dropped_ticks_the_same():
    raw, runner = tree(), ReactiveRunner(tree(), Empty)
    statuses = []
    for _ in range(2):
        raw.tick_once()
        await runner.step()
        statuses.append(([node.status for node in raw.iterate()], list(runner.statuses().values())))
    for py_trees_own, runners in statuses:
        assert py_trees_own == runners
