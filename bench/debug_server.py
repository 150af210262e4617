"""Debug server figures: step round trip over loopback, an attached run at full speed, cost with nobody attached.

1. Step round trip: an agent in a child process, held by an attached client; `step` sent,
   the `paused` after that tick received. Baseline: a `ping` round trip on the same socket.
2. Attached at full speed (#34.4): the child's run (a counter node writing state and logging every
   tick) continued with a client attached that reads every update, ticks per CPU second of the
   run's process (its first tick to its last: the run and its server's sending, not the client nor
   the machine's other users: steady on a shared machine); baseline: the same run with nobody
   attached, timed the same way. Again with the run recording a checkpoint per tick into SQLite, where the
   server also sends the studio's changed marks read from it. Goal: attached >= 0.8x.
   Then where an attached tick's time goes, in one process, CPU time: `runner.run()`; the debugger
   continuing with nobody watching (what a local studio's continue costs before its views); with
   the server's controller watching it too (each tick's report handed to it, state, every event,
   an update sealed every 20 ms, no JSON); and each update encoded as the server sends it; the
   rest, to the figure above, is the socket and the client.
3. Runner overhead: bench/runner_overhead.py's 1,101-node tree ticked with a debug server
   listening and nobody attached, beside the runner without one and raw py_trees.

    .venv/bin/python bench/debug_server.py [--steps 300] [--ticks 20000]
    valgrind --tool=callgrind .venv/bin/python bench/debug_server.py --layer encoded --ticks 6000  # and 1000
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

import runtime.debug.debugger as debugger_module  # noqa: E402
from runtime import Agent  # noqa: E402
from runtime.debug import DebugClient, Debugger, DebugServer  # noqa: E402
from runtime.debug.controller import DebugController  # noqa: E402
from runtime.debug.protocol import frame  # noqa: E402
from runtime.debug.server import FLUSH_INTERVAL  # noqa: E402
from runtime.debug.ticks import events_in  # noqa: E402
from runtime.engine import ReactiveRunner, RuntimeEventBus  # noqa: E402
from runtime.engine.behaviour import Behaviour  # noqa: E402
from runtime.memory.checkpoint import open_store  # noqa: E402

TOKEN = "bench-token"


class Count(BaseModel):
    count: int = 0
    limit: int = 0


class CountUp(Behaviour):
    """One state write, one log event per tick, until `limit`; times its run from its first tick to its
    last with `clock` (a client attaching and the run's start are not in it)."""

    def __init__(self, name: str, clock=time.perf_counter):
        super().__init__(name)
        self.clock, self.first, self.last = clock, 0.0, 0.0

    def update(self) -> Status:
        count = self.read_state("count") + 1
        if count == 1:
            self.first = self.clock()
        self.write_state({"count": count})
        self.emit("log", {"count": count})
        if count >= self.read_state("limit"):
            self.last = self.clock()
            return Status.SUCCESS
        return Status.RUNNING

    def rate(self, limit: int) -> float:
        return (limit - 1) / (self.last - self.first)


def child(limit: int, db: str | None) -> None:
    """The debugged process: serve one run (recording into `db`, if given), print its ticks per second."""
    async def main() -> None:
        node = CountUp("count", clock=time.process_time)
        agent = Agent(node, state_schema=Count)
        if db is not None:
            agent.runner = agent.make_runner(checkpointer=open_store(db))
        result = await agent.run({"limit": limit}, debug="127.0.0.1:0")
        print(json.dumps({"rate": node.rate(limit), "status": result.status.value}), flush=True)
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


async def throughput(ticks: int, folder: str | None = None) -> tuple[float, float, int, int, int]:
    """(ticks/s alone, ticks/s attached, updates, events received, events dropped), each run timing its
    own ticks; recording into a store in `folder`."""
    db = (lambda name: os.path.join(folder, name)) if folder is not None else (lambda name: None)
    process, _ = await spawn(ticks, wait=0, db=db("alone.db"))
    alone = json.loads((await process.stdout.read()).decode())["rate"]
    await process.wait()
    process, address = await spawn(ticks, wait=60, db=db("attached.db"))
    client = await DebugClient.connect(address, TOKEN)
    await until(client, "paused")
    await client.request("continue")
    updates = events = dropped = 0
    while (message := await client.next_message())["type"] != "bye":
        updates += message["type"] == "update"
        events += len(message.get("events", {}).get("seq", ())) + (events_in(message["ticks"]) if "ticks" in message else 0)
        dropped += message.get("dropped_events", 0)
    await client.close()
    attached = json.loads((await process.stdout.read()).decode())["rate"]
    await process.wait()
    return alone, attached, updates, events, dropped


async def _layer(ticks: int, layer: str, seal_ticks: int | None = None) -> float:
    """Ticks per CPU second of the counter run in this process: `runner.run()` ("alone"), the debugger
    continuing it ("debugger"), that with the server's controller watching ("watched"), and its updates
    encoded too ("encoded"); sealed every `FLUSH_INTERVAL`, or every `seal_ticks` ticks (under callgrind,
    which runs it ~50x slower: 600 ticks are 20 ms at full speed)."""
    node = CountUp("count", clock=time.process_time)
    runner = Agent(node, state_schema=Count).make_runner()
    if layer == "alone":
        await runner.run(input_data={"limit": ticks})
        return node.rate(ticks)
    debugger = Debugger(runner)
    watched = layer in ("watched", "encoded")
    if watched:
        controller = DebugController(debugger, lambda urgent: None)
        controller.attach()
        sealing = asyncio.create_task(_seal_every(controller, FLUSH_INTERVAL, encoded=layer == "encoded",
                                                  every_ticks=seal_ticks))
    else:
        debugger.attach()
    debugger.begin({"limit": ticks})
    await debugger.continue_()
    if watched:
        sealing.cancel()
    return node.rate(ticks)


async def _seal_every(controller: DebugController, seconds: float, *, encoded: bool,
                      every_ticks: int | None = None) -> None:
    """Seal (and encode) what the controller gathered every `seconds`, or, given `every_ticks`, when the
    loop runs that many ticks after the last seal."""
    runner, sealed = controller.runner, 0
    while True:
        await asyncio.sleep(seconds if every_ticks is None else 0)
        if every_ticks is not None and runner.tick_count - sealed < every_ticks:
            continue
        sealed = runner.tick_count
        controller.seal()
        if encoded:
            for message in controller.outbox:
                frame(message)
        controller.outbox.clear()


def layers(ticks: int, repeats: int) -> dict[str, float]:
    """Each layer's best of `repeats`, the layers taken in turn."""
    best = dict.fromkeys(("alone", "debugger", "watched", "encoded"), 0.0)
    for _ in range(repeats):
        for layer in best:
            best[layer] = max(best[layer], asyncio.run(_layer(ticks, layer)))
    return best


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
    parser.add_argument("--layer", choices=("alone", "debugger", "watched", "encoded"),
                        help="only run --ticks of this one-process layer, sealing every 600 ticks, yielding every "
                             "250 ms (for callgrind: the instructions of 6,000 ticks less those of 1,000, over 5,000)")
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.db)
        return
    if args.layer is not None:  # callgrind runs it ~50x slower (more at a high load): a continue yields to the
        debugger_module.YIELD_EVERY *= 50  # loop as often a tick as at full speed, not every few ticks
        asyncio.run(_layer(args.ticks, args.layer, seal_ticks=600))
        return

    pings, steps = asyncio.run(round_trips(args.steps))
    ms = lambda values, q: statistics.quantiles(values, n=100)[q - 1] * 1000  # noqa: E731
    print(f"step round trip over loopback, {args.steps} steps (ms)")
    print(f"{'':<34}{'median':>9}{'p90':>9}")
    print(f"{'ping -> ok (baseline)':<34}{statistics.median(pings) * 1000:>9.3f}{ms(pings, 90):>9.3f}")
    print(f"{'step -> paused after the tick':<34}{statistics.median(steps) * 1000:>9.3f}{ms(steps, 90):>9.3f}")

    print("\nattached and continuing at full speed: a counter node, ticks per CPU second of its process (goal >= 0.8x)")
    print(f"{'configuration':<30}{'alone':>10}{'attached':>10}{'ratio':>8}{'updates':>9}{'events':>9}{'dropped':>9}")
    recorded = args.ticks // 4
    with tempfile.TemporaryDirectory() as folder:
        for label, count, where in ((f"{args.ticks:,} ticks", args.ticks, None),
                                    (f"recording to SQLite, {recorded:,}", recorded, folder)):
            alone, attached, updates, events, dropped = asyncio.run(throughput(count, where))
            print(f"{label:<30}{alone:>10,.0f}{attached:>10,.0f}{attached / alone:>7.2f}x{updates:>9,}"
                  f"{events:>9,}{dropped:>9,}")
    best = layers(args.ticks // 2, 3)
    print(f"where an attached tick's time goes, {args.ticks // 2:,} ticks in one process, CPU ticks/s, best of 3")
    for layer, label in (("alone", "runner.run()"), ("debugger", "Debugger continuing, nobody watching"),
                         ("watched", "... and the server's controller watching"),
                      ("encoded", "... and its updates encoded as JSON")):
        print(f"{label:<44}{best[layer]:>10,.0f}{best[layer] / best['alone']:>7.2f}x")

    raw, bare, served = overhead(300, 7)
    per = 300 * NODES / 1e6
    print(f"\nrunner overhead, {NODES}-node tree, 300 ticks, best of 7")
    print(f"{'configuration':<44}{'us/node-tick':>14}{'ratio':>9}{'goal':>8}")
    print(f"{'raw py_trees BehaviourTree.tick()':<44}{raw / per:>14.3f}{1.0:>9.3f}{'':>8}")
    print(f"{'ReactiveRunner, no debug server':<44}{bare / per:>14.3f}{bare / raw:>9.3f}{'<=1.05':>8}")
    print(f"{'ReactiveRunner, server on, nobody attached':<44}{served / per:>14.3f}{served / raw:>9.3f}{'<=1.05':>8}")


if __name__ == "__main__":
    main()
