"""The record of a tick (runtime/engine/record.py): what it costs at 10,000 and 100,000 nodes.

A detailed tick (a step, a checkpointer, a subscriber to node events) keeps what every node
returned, in order, finds the returns its end does not show, and publishes a `node.returned`
for each; a checkpointer stores the record with the tick's checkpoint. CPU time per tick (this
process's, `time.process_time`: steadier than wall time on a shared machine), best of `--repeats`
interleaved runs, beside raw py_trees ticking the same tree in the same process:

- `step`: `runner.step()`, nobody subscribed (the record built, nothing published);
- `events`: a subscriber to every event (`node.status` and `node.returned` built);
- `sqlite`: recording into an SQLite store; beside it, in the same process, the same run with
  each record's returns dropped before the store writes it: the stored bytes a tick's returns
  cost after the store's deflate, and the time they cost to encode and write;
- the record's own work after the tick, timed alone on the last tick's report (many times, the
  best): finding the unseen returns, and encoding the returns for the store whole (a chain's
  first record) and against the previous tick's (the others).

Trees (all sync leaves, so raw py_trees ticks them too): bench/runner_overhead.py's static one
(statuses settle; every tick returns the same nodes) and churn one (every node changes every
tick), and `resets`: loops whose round fails and is reset in the same tick, every tick (each
return but the loops' own is unseen: the most `node.returned` events a tick can publish).
Run it on an older commit too to compare the ratios (a runner without the record prints `-`).

    .venv/bin/python bench/tick_record.py [--sizes 10000 100000] [--repeats 3] [--ticks 4]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import py_trees
from py_trees.common import Status
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runner_overhead import LEAVES, build_churn_tree, build_tree  # noqa: E402

from runtime.engine import ReactiveRunner, RuntimeEventBus  # noqa: E402
from runtime.memory.checkpoint import SQLiteCheckpointStore  # noqa: E402
from runtime.memory.checkpoint.model import TreePaths  # noqa: E402

try:  # an older commit has no record: its rows say `-`
    from runtime.memory.checkpoint.returns import ReturnsWriter  # noqa: E402
except ImportError:
    ReturnsWriter = None


class Empty(BaseModel):
    pass


class FailOnce(py_trees.behaviour.Behaviour):
    """FAILURE, then SUCCESS, then FAILURE...: a loop round that fails every other tick."""

    def __init__(self, name: str):
        super().__init__(name)
        self.calls = 0

    def update(self) -> Status:
        self.calls += 1
        return Status.FAILURE if self.calls % 2 else Status.SUCCESS


class Retry(py_trees.decorators.Decorator):
    """A loop's shape without its state (so raw py_trees ticks it too): a round that fails is reset
    in the same tick, and the loop runs on."""

    def update(self) -> Status:
        if self.decorated.status == Status.FAILURE:
            self.decorated.stop(Status.INVALID)
        return Status.RUNNING


def build_resets(branches: int) -> py_trees.behaviour.Behaviour:
    """A Parallel over loops of a Sequence of LEAVES - 1 Success leaves and a FailOnce: each loop's round
    fails and is reset every other tick (then every return in it is unseen)."""
    def loop(b: int) -> Retry:
        return Retry(f"loop{b}", py_trees.composites.Sequence(f"round{b}", memory=False, children=[
            *(py_trees.behaviours.Success(f"leaf{b}.{i}") for i in range(LEAVES - 1)), FailOnce(f"done{b}")]))

    policy = py_trees.common.ParallelPolicy.SuccessOnAll(synchronise=False)
    return py_trees.composites.Parallel("root", policy=policy, children=[loop(b) for b in range(branches)])


def raw_py_trees(build: Callable[[], py_trees.behaviour.Behaviour], ticks: int) -> float:
    """CPU seconds per tick of py_trees' own `BehaviourTree.tick()` (the first tick left out)."""
    tree = py_trees.trees.BehaviourTree(build())
    tree.tick()
    started = time.process_time()
    for _ in range(ticks):
        tree.tick()
    return (time.process_time() - started) / ticks


def best_of(work: Callable[[], object], times: int = 20) -> float:
    best = float("inf")
    for _ in range(times):
        started = time.process_time()
        work()
        best = min(best, time.process_time() - started)
    return best


def own_work(runner: ReactiveRunner, report) -> dict[str, float]:
    """Seconds of the record's own work on a tick's report: its unseen returns found, its returns
    encoded for the store whole and against an identical previous tick's."""
    if ReturnsWriter is None:
        return {}
    nodes = [runner.nodes[path] for path in report.ticked]
    tree = TreePaths.of(runner.nodes) if len(runner.nodes) >= 1000 else None
    ends = [node.status for node in nodes]
    writer = ReturnsWriter()
    writer.encode(report.returns, tree, True)  # a line's writer knows the tree's places after its first record
    return {"unseen": best_of(lambda: report.returns.unseen(ends)),
            "whole": best_of(lambda: writer.encode(report.returns, tree, True)),
            "same": best_of(lambda: writer.encode(report.returns, tree, False))}


TREES: dict[str, tuple[Callable[[int], py_trees.behaviour.Behaviour], int]] = {
    "static": (build_tree, 1 + LEAVES), "churn": (build_churn_tree, 1 + LEAVES), "resets": (build_resets, 2 + LEAVES)}


async def _ticks(build: Callable[[], py_trees.behaviour.Behaviour], ticks: int, config: str,
                 store_dir: Path) -> dict[str, float]:
    bus = RuntimeEventBus(history=0)
    counts: dict[str, int] = {}
    if config == "events":
        def count(event) -> None:
            if event.tick > 2:  # the first two ticks left out, as in the timing
                counts[event.type] = counts.get(event.type, 0) + 1

        bus.subscribe(count)
    store = None
    if config.startswith("sqlite"):
        store = SQLiteCheckpointStore(store_dir / f"{config}-{time.perf_counter_ns()}.db")
        if config == "sqlite-without":
            save = store.save

            def without(record, events=()):
                if hasattr(record, "returns"):
                    record.returns = None
                return save(record, events)

            store.save = without
    runner = ReactiveRunner(build(), Empty(), event_bus=bus, checkpointer=store)
    runner.start_fresh()
    await runner.step()  # the first two ticks left out: a store's full record, and the delta that carries it
    runner.signal()
    await runner.step()
    started = time.process_time()
    for _ in range(ticks):
        runner.signal()
        report = await runner.step()
    out = {"s": (time.process_time() - started) / ticks, **{k: v / ticks for k, v in counts.items()}}
    if config == "step":
        out.update(own_work(runner, report))
    if store is not None:
        with store._guard() as conn:  # a delta's stored bytes (the full record left out, and the first delta,
            # which carries it: row_codec.py)
            out["bytes"] = conn.execute("SELECT avg(length(data)) FROM checkpoints WHERE base_id != id "
                                        "AND parent_id != base_id").fetchone()[0]
        store.close()
    return out


def measure(name: str, nodes: int, ticks: int, repeats: int, store_dir: Path) -> None:
    build, per_branch = TREES[name]
    branches = max(1, (nodes - 1) // per_branch)
    configs = ["step", "events", "sqlite", "sqlite-without"]
    rows = []
    for _ in range(repeats):  # interleaved, so drift hits every configuration alike
        raw = raw_py_trees(lambda: build(branches), ticks)
        rows.append([raw, *(asyncio.run(_ticks(lambda: build(branches), ticks, c, store_dir)) for c in configs)])
    raw = min(row[0] for row in rows)
    best = {c: min((row[i + 1] for row in rows), key=lambda r: r["s"]) for i, c in enumerate(configs)}
    count = sum(1 for _ in build(branches).iterate())
    print(f"\n{name}: {count:,} nodes, {ticks} ticks, best of {repeats}; raw py_trees {raw * 1000:.1f} CPU ms/tick")
    print(f"{'configuration':<38}{'CPU ms':>10}{'x raw':>8}{'node.status':>13}{'node.returned':>15}{'bytes/tick':>12}")
    for config in configs:
        r = best[config]
        events = (f"{r.get('node.status', 0):>13,.0f}{r.get('node.returned', 0):>15,.0f}"
                  if config == "events" else f"{'':>13}{'':>15}")
        stored = f"{r['bytes']:>12,.0f}" if "bytes" in r else f"{'':>12}"
        label = {"step": "step(), nobody subscribed", "events": "a subscriber to every event",
                 "sqlite": "recording to SQLite", "sqlite-without": "  the same, returns dropped"}[config]
        print(f"{label:<38}{r['s'] * 1000:>10.1f}{r['s'] / raw:>8.2f}{events}{stored}")
    with_, without = best["sqlite"], best["sqlite-without"]
    print(f"the returns stored: {with_['bytes'] - without['bytes']:,.0f} bytes/tick after deflate, "
          f"{(with_['s'] - without['s']) * 1000:+.1f} CPU ms/tick to encode and write")
    step = best["step"]
    if "unseen" in step:
        print(f"the record's own work after the tick: unseen returns {step['unseen'] * 1000:.2f} ms, encoded whole "
              f"{step['whole'] * 1000:.2f} ms, against the same previous tick {step['same'] * 1000:.2f} ms "
              f"({step['unseen'] / raw:.1%} / {step['whole'] / raw:.1%} / {step['same'] / raw:.1%} of raw's tick)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ticks", type=int, default=4)
    parser.add_argument("--trees", nargs="+", default=list(TREES), choices=list(TREES))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for nodes in args.sizes:
            for name in args.trees:
                measure(name, nodes, args.ticks, args.repeats, Path(tmp))


if __name__ == "__main__":
    main()
