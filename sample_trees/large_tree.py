"""A generated tree of exactly 10,000 nodes, to feel the studio at scale.

`sample_trees/large_tree.py:build_100k` opens the same shape at 100,000 nodes.

Ten stages run one after another; each fans out in parallel over many short sequences of
leaves and records its progress in state, with a short asynchronous pause between stages
so the run takes a handful of ticks. The tree pane must stay responsive: it redraws only
the nodes whose status changed.
"""

from __future__ import annotations

import asyncio

import py_trees
from py_trees.common import ParallelPolicy, Status
from pydantic import BaseModel

from runtime import Agent
from runtime.node import AsyncNode, Parallel, Sequence

TOTAL_NODES = 10_000
STAGES = 10
LEAVES_PER_BRANCH = 9


class LargeState(BaseModel):
    stages_done: int = 0


class StageDone(AsyncNode):
    """Marks a stage finished after a short pause (a wake, not a poll)."""

    output_ports = ("stages_done",)

    async def update_async(self) -> Status:
        await asyncio.sleep(0.02)
        self.write_port("stages_done", int(self.read_port("stages_done", default=0)) + 1)
        return Status.SUCCESS


def _branch(stage: int, index: int, leaves: int) -> py_trees.behaviour.Behaviour:
    return Sequence(f"s{stage}.b{index}", memory=False, children=[
        py_trees.behaviours.Success(f"s{stage}.b{index}.l{leaf}") for leaf in range(leaves)])


def build_root(total: int = TOTAL_NODES, stages: int = STAGES) -> py_trees.behaviour.Behaviour:
    """A root of exactly `total` nodes: stage overhead is 3 nodes, a branch 1 + its leaves."""
    budget = total - 1 - stages * 3  # root, and per stage: Sequence, Parallel, StageDone
    per_stage = budget // stages
    children = []
    for stage in range(stages):
        nodes = per_stage + (budget - per_stage * stages if stage == stages - 1 else 0)
        branches = []
        while nodes > 0:
            leaves = min(LEAVES_PER_BRANCH, nodes - 1)
            branches.append(_branch(stage, len(branches), leaves))
            nodes -= 1 + leaves
        children.append(Sequence(f"Stage{stage}", memory=True, children=[
            Parallel(f"Fan{stage}", policy=ParallelPolicy.SuccessOnAll(), children=branches),
            StageDone(f"Done{stage}"),
        ]))
    return Sequence("LargeTree", memory=True, children=children)


def build() -> Agent:
    return Agent(build_root(), state_schema=LargeState)


def build_100k() -> Agent:
    """The same shape at 100,000 nodes: `./dev studio sample_trees/large_tree.py:build_100k`."""
    return Agent(build_root(100_000), state_schema=LargeState)
