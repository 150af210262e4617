"""Debug server figures: step round trip over loopback, event throughput, cost with nobody attached.

1. Step round trip: an agent in a child process, held by an attached client; `step` sent,
   the `paused` after that tick received. Baseline: a `ping` round trip on the same socket.
2. Event throughput: the child's run (a counter node writing state and logging every tick)
   continued with the client attached, events received per second; baseline: the same run
   with nobody attached (the child times it). Again with the run recording a checkpoint per
   tick into SQLite, where the server also sends the studio's changed marks read from it.
3. Runner overhead: bench/runner_overhead.py's 1,101-node tree ticked with a debug server
   listening and nobody attached, beside the runner without one and raw py_trees.

    .venv/bin/python bench/debug_server.py [--steps 300] [--ticks 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from py_trees.common import Status
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runner_overhead import Empty, build_tree, nodes_of, raw_py_trees  # noqa: E402

NODES = nodes_of(100)  # the static tree build_tree() makes

from runtime import Agent  # noqa: E402
from runtime.debug import DebugClient, DebugServer  # noqa: E402
from runtime.engine import ReactiveRunner, RuntimeEventBus  # noqa: E402
from runtime.engine.behaviour import Behaviour  # noqa: E402
from runtime.memory.checkpoint import open_store  # noqa: E402

TOKEN = "bench-token"


class Count(BaseModel):
    count: int = 0
    limit: int = 0


class CountUp(Behaviour):
    """One state write, one log event per tick, until `limit`."""

    def update(self) -> Status:
        count = self.read_state("count") + 1
        self.write_state({"count": count})
        self.emit("log", {"count": count})
        return Status.SUCCESS if count >= self.read_state("limit") else Status.RUNNING


def child(limit: int, db: str | None) -> None:
    """The debugged process: serve one run (recording into `db`, if given), print how long it took."""
    async def main() -> None:
        agent = Agent(CountUp("count"), state_schema=Count)
        if db is not None:
            agent.runner = agent.make_runner(checkpointer=open_store(db))
        started = time.perf_counter()
        result = await agent.run({"limit": limit}, debug="127.0.0.1:0")
        print(json.dumps({"seconds": time.perf_counter() - started, "status": result.status.value}),
              flush=True)
    asyncio.run(main())


async def spawn(limit: int, wait: float, db: str | None = None) -> tuple[asyncio.subprocess.Process, str]:
    env = dict(os.environ, JIANMU_DEBUG_TOKEN=TOKEN, JIANMU_DEBUG_WAIT=str(wait))
    store = ["--db", db] if db is not None else []
    process = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--child", str(limit), *store, env=env, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    line = (await process.stderr.readline()).decode()
    return process, re.search(r"ws://(\S+)", line)[1]


async def until(client: DebugClient, message_type: str) -> dict:
    while (message := await client.next_message())["type"] != message_type:
        pass
    return message


async def round_trips(steps: int) -> tuple[list[float], list[float]]:
    process, address = await spawn(steps * 4, wait=60)
    client = await DebugClient.connect(address, TOKEN)
    await until(client, "paused")
    pings, step_times = [], []
    for _ in range(steps):
        started = time.perf_counter()
        await client.request("ping")
        pings.append(time.perf_counter() - started)
        started = time.perf_counter()
        await client.request("step")
        await until(client, "paused")
        step_times.append(time.perf_counter() - started)
    await client.request("continue")
    await until(client, "finished")
    await client.close()
    await process.wait()
    return pings, step_times


async def throughput(ticks: int, folder: str | None = None) -> tuple[float, float, int]:
    """(seconds alone, seconds attached, events received attached); recording into a store in `folder`."""
    db = (lambda name: os.path.join(folder, name)) if folder is not None else (lambda name: None)
    process, _ = await spawn(ticks, wait=0, db=db("alone.db"))
    alone = json.loads((await process.stdout.read()).decode())["seconds"]
    await process.wait()
    process, address = await spawn(ticks, wait=60, db=db("attached.db"))
    client = await DebugClient.connect(address, TOKEN)
    await until(client, "paused")
    started = time.perf_counter()
    await client.request("continue")
    events = 0
    while (message := await client.next_message())["type"] != "bye":
        events += len(message.get("events", ()))
    attached = time.perf_counter() - started
    await client.close()
    await process.wait()
    return alone, attached, events


async def _ticks(count: int, served: bool) -> float:
    runner = ReactiveRunner(build_tree(), Empty(), event_bus=RuntimeEventBus(history=0))
    server = DebugServer(runner, "127.0.0.1:0", token=TOKEN) if served else None
    if server is not None:
        await server.listen()
    runner.start_fresh()
    runner._go_live()
    started = time.perf_counter()
    for _ in range(count):  # the per-tick path of runner.run(), as bench/runner_overhead.py times it
        await runner._step(detailed=False)
    elapsed = time.perf_counter() - started
    runner._go_idle()
    if server is not None:
        await server.close()
    return elapsed


def overhead(ticks: int, repeats: int) -> tuple[float, float, float]:
    with open(os.devnull, "w") as quiet, contextlib.redirect_stderr(quiet):  # the server's line, every repeat
        rows = [(raw_py_trees(build_tree, ticks)[0], asyncio.run(_ticks(ticks, False)), asyncio.run(_ticks(ticks, True)))
                for _ in range(repeats)]
    return tuple(min(col) for col in zip(*rows, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--ticks", type=int, default=20000)
    parser.add_argument("--child", type=int)
    parser.add_argument("--db")
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.db)
        return

    pings, steps = asyncio.run(round_trips(args.steps))
    ms = lambda values, q: statistics.quantiles(values, n=100)[q - 1] * 1000  # noqa: E731
    print(f"step round trip over loopback, {args.steps} steps (ms)")
    print(f"{'':<34}{'median':>9}{'p90':>9}")
    print(f"{'ping -> ok (baseline)':<34}{statistics.median(pings) * 1000:>9.3f}{ms(pings, 90):>9.3f}")
    print(f"{'step -> paused after the tick':<34}{statistics.median(steps) * 1000:>9.3f}{ms(steps, 90):>9.3f}")

    alone, attached, events = asyncio.run(throughput(args.ticks))
    print(f"\nevent throughput, {args.ticks} ticks of a counter node")
    print(f"{'nobody attached (baseline)':<34}{args.ticks / alone:>12,.0f} ticks/s")
    print(f"{'client attached, continuing':<34}{args.ticks / attached:>12,.0f} ticks/s"
          f"{events / attached:>12,.0f} events/s received ({events:,} events)")
    recorded = args.ticks // 4
    with tempfile.TemporaryDirectory() as folder:
        alone, attached, events = asyncio.run(throughput(recorded, folder))
    print(f"recording into SQLite, {recorded} ticks")
    print(f"{'nobody attached (baseline)':<34}{recorded / alone:>12,.0f} ticks/s")
    print(f"{'client attached, continuing':<34}{recorded / attached:>12,.0f} ticks/s"
          f"{events / attached:>12,.0f} events/s received ({events:,} events)")

    raw, bare, served = overhead(300, 7)
    per = 300 * NODES / 1e6
    print(f"\nrunner overhead, {NODES}-node tree, 300 ticks, best of 7")
    print(f"{'configuration':<44}{'us/node-tick':>14}{'ratio':>9}{'goal':>8}")
    print(f"{'raw py_trees BehaviourTree.tick()':<44}{raw / per:>14.3f}{1.0:>9.3f}{'':>8}")
    print(f"{'ReactiveRunner, no debug server':<44}{bare / per:>14.3f}{bare / raw:>9.3f}{'<=1.05':>8}")
    print(f"{'ReactiveRunner, server on, nobody attached':<44}{served / per:>14.3f}{served / raw:>9.3f}{'<=1.05':>8}")


if __name__ == "__main__":
    main()
