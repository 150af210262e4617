"""Runner overhead: ReactiveRunner against raw py_trees ticking the same tree.

The tree: a Parallel over 100 Sequences of 10 Success leaves (1,101 nodes, all sync).
Each configuration ticks it the same number of times, best of several repeats, and
prints microseconds per node-tick side by side with raw `BehaviourTree.tick()` measured
in the same run, so the ratios hold on a noisy machine.

    .venv/bin/python bench/runner_overhead.py [--ticks 300] [--repeats 7]
"""

from __future__ import annotations

import argparse
import asyncio
import time

import py_trees
from pydantic import BaseModel

from runtime.engine import ReactiveRunner, RuntimeEventBus

BRANCHES, LEAVES = 100, 10


def build_tree() -> py_trees.behaviour.Behaviour:
    return py_trees.composites.Parallel(
        "root",
        policy=py_trees.common.ParallelPolicy.SuccessOnAll(synchronise=False),
        children=[
            py_trees.composites.Sequence(f"seq{b}", memory=False, children=[
                py_trees.behaviours.Success(f"leaf{b}.{i}") for i in range(LEAVES)])
            for b in range(BRANCHES)
        ],
    )


NODES = 1 + BRANCHES * (1 + LEAVES)


class Empty(BaseModel):
    pass


def raw_py_trees(ticks: int) -> float:
    tree = py_trees.trees.BehaviourTree(build_tree())
    started = time.perf_counter()
    for _ in range(ticks):
        tree.tick()
    return time.perf_counter() - started


async def _runner(ticks: int, record: bool, stop_before: str | None) -> float:
    bus = RuntimeEventBus(history=0)
    recorded: list = []
    if record:
        bus.subscribe(recorded.append)
    runner = ReactiveRunner(build_tree(), Empty(), event_bus=bus)
    if stop_before is not None:
        runner.stop_before = {stop_before}
    runner.start_fresh()
    runner._go_live()
    started = time.perf_counter()
    for _ in range(ticks):  # the per-tick path of runner.run(): wake check, hooks, tick
        while not (await runner._step(detailed=False)).completed:
            pass  # held before the node: resume at once
    elapsed = time.perf_counter() - started
    runner._go_idle()
    return elapsed


def reactive(ticks: int, record: bool, stop_before: str | None = None) -> float:
    return asyncio.run(_runner(ticks, record, stop_before))


def best(fn, repeats: int, *args) -> float:
    return min(fn(*args) for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    per = args.ticks * NODES / 1e6  # seconds -> microseconds per node-tick

    rows = []
    for _ in range(args.repeats):  # interleave so drift hits every configuration alike
        rows.append((raw_py_trees(args.ticks), reactive(args.ticks, False), reactive(args.ticks, True),
                     reactive(args.ticks, False, f"root/seq{BRANCHES // 2}/leaf{BRANCHES // 2}.0")))
    raw, bare, recorded, stopped = (min(col) for col in zip(*rows, strict=True))

    print(f"tree: {NODES} nodes, {args.ticks} ticks, best of {args.repeats}")
    print(f"{'configuration':<44}{'us/node-tick':>14}{'ratio':>9}{'goal':>8}")
    print(f"{'raw py_trees BehaviourTree.tick()':<44}{raw / per:>14.3f}{1.0:>9.3f}{'':>8}")
    print(f"{'ReactiveRunner, bus on, no subscriber':<44}{bare / per:>14.3f}{bare / raw:>9.3f}{'<=1.05':>8}")
    print(f"{'ReactiveRunner, subscriber records events':<44}{recorded / per:>14.3f}{recorded / raw:>9.3f}{'<=2':>8}")
    print(f"{'ReactiveRunner, stops before a leaf, resumes':<44}{stopped / per:>14.3f}{stopped / raw:>9.3f}{'':>8}")


if __name__ == "__main__":
    main()
