"""The session's first step at 100,000 nodes, runtime side: the tick-0 full save and the first tick.

Builds sample_trees/large_tree.py's shape (as bench/studio_scale.py does), a runner recording
into a fresh SQLite store, then times (wall ms): attaching the checkpointer (the runner's
construction), the first step as the studio takes it (a fresh run whose `run.started` saves
tick 0 in full, then tick 1 and its save), and inside it the tick-0 save alone with its parts:
`runner.capture`, `store.save`; then the tick-1 save and the second step. Baseline, in the same
process: raw py_trees' first tick of the same tree (`BehaviourTree.tick()`), what the first step
costs the tree itself. Each run is a fresh process, so no run warms the next.

    .venv/bin/python bench/first_save.py [--nodes 100000] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import py_trees

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runtime import Agent  # noqa: E402
from runtime.engine import EventType  # noqa: E402
from runtime.engine.long_lived import keep_out_of_collections  # noqa: E402
from runtime.memory.checkpoint import open_store  # noqa: E402
from sample_trees import large_tree  # noqa: E402


def _timed(owner, name: str, into: list) -> None:
    """Wrap `owner.name` so each call's wall ms is appended to `into`."""
    inner = getattr(owner, name)

    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            into.append((time.perf_counter() - started) * 1000)

    setattr(owner, name, wrapper)


def _root(nodes: int):
    return large_tree.build_root(total=nodes, stages=min(10, max(1, nodes // 100)))


async def measure(nodes: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="jianmu-first-save-") as folder:  # the store goes with the run
        return await _measure(nodes, Path(folder))


async def _measure(nodes: int, folder: Path) -> dict:
    agent = Agent(_root(nodes), state_schema=large_tree.LargeState)
    store = open_store(folder / "runs.db")
    started = time.perf_counter()
    runner = agent.make_runner(checkpointer=store)
    attach_ms = (time.perf_counter() - started) * 1000
    keep_out_of_collections(len(runner.nodes))  # as the studio does after its first frame
    saves: list[float] = []
    captures: list[float] = []
    writes: list[float] = []
    _timed(runner.checkpoints, "save", saves)
    _timed(runner, "capture", captures)
    _timed(store, "save", writes)
    started = time.perf_counter()
    runner.start_fresh()  # as the studio's first step starts its run (studio/session/local.py, _start_run)
    runner.event_bus.publish(EventType.RUN_STARTED, {"fresh": True, "tick": 0})  # saves tick 0 in full
    await runner.step()
    step_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    await runner.step()
    second_ms = (time.perf_counter() - started) * 1000
    store.close()
    raw = py_trees.trees.BehaviourTree(_root(nodes))
    started = time.perf_counter()
    raw.tick()
    raw_ms = (time.perf_counter() - started) * 1000
    return {"attach_ms": attach_ms, "first_step_ms": step_ms, "second_step_ms": second_ms, "raw_ms": raw_ms,
            "save0_ms": saves[0], "capture0_ms": captures[0], "write0_ms": writes[0],
            "save1_ms": saves[1] if len(saves) > 1 else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(asyncio.run(measure(args.nodes))))
        return
    print(f"{args.nodes:,} nodes, SQLite, wall ms, a fresh process a run")
    print(f"{'load':>6}{'attach':>8}{'1st step':>10}{'raw 1st tick':>14}{'tick-0 save':>13}{'capture':>9}"
          f"{'store':>7}{'tick-1 save':>13}{'2nd step':>10}")
    for _ in range(args.runs):
        load = Path("/proc/loadavg").read_text().split()[0]
        out = subprocess.run([sys.executable, __file__, "--one", "--nodes", str(args.nodes)],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{load:>6}{r['attach_ms']:>8.0f}{r['first_step_ms']:>10.0f}{r['raw_ms']:>14.0f}{r['save0_ms']:>13.0f}"
              f"{r['capture0_ms']:>9.0f}{r['write0_ms']:>7.0f}{r['save1_ms']:>13.0f}{r['second_step_ms']:>10.0f}")


if __name__ == "__main__":
    main()
