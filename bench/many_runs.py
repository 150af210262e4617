"""Many runs in one asyncio process, and many writer processes, recording into one store.

    .venv/bin/python bench/many_runs.py [--runs 10 50] [--rounds 20] [--processes 50] [--postgres URL]
                                        [--latency 0.02] [--explain]

The workload is bench/checkpoint_growth.py's: a scripted ReAct run, one `lookup` tool call a round
with 1 KB texts. Printed side by side, in the same run, on the same server (`--postgres URL`, else a
throw-away one started as the tests start theirs):

- N runs at once in one event loop recording into one `AsyncPostgresCheckpointStore`, beside
  LangGraph's `AsyncPostgresSaver` (a connection pool of the same size) running the same workload
  with `ainvoke`: wall time, checkpoints per second, and the longest stall a probe coroutine saw
  (it sleeps 1 ms and measures how late it wakes: the loop lag a web server's requests would feel),
  the worst outside the collector's full collections apart (`LagProbe`). Goals (issue #34): at most
  1/3 of LangGraph's wall time at 50 runs, checkpoints per second growing with the runs, no stall
  over 10 ms. The CPU time of this process beside each (the PostgreSQL server's not counted): on a
  loaded machine the wall times move with the other processes, the CPU times much less. Twice: with a model that answers at once (every run is CPU-bound: nothing awaits I/O but
  the saves), and one whose answers are awaited `--latency` seconds, as a real endpoint's are.
- The same probe beside N runs recording into an SQLite file (its saves short synchronous commits, or
  committed by its writer thread: `open_store(FILE, asynchronous=True)`) and into memory (no I/O at
  all: the lag left is the runs' own ticks, not a store's), the model answering at once.
- `--explain`: what the event loop ran during each of our worst stalls (each callback and task step,
  timed), to find where a stall comes from.
- P writer processes, one run each, `PostgresCheckpointStore` beside LangGraph's `PostgresSaver`:
  wall time from a common start to the last writer's end (goal: at most 0.4x).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import checkpoint_growth
import langgraph_peer
from checkpoint_growth import build, postgres_url, script

from runtime import ReActState, human
from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import InMemoryCheckpointStore, open_store

TASK = "Look everything up."
# the tool's 1 KB answers made once, before anything is measured (6 ms each: a stall of the workload's own)
observation = checkpoint_growth.observation = functools.lru_cache(checkpoint_growth.observation)
LATENCY = 0.02  # seconds a model's answer is awaited in the second rows (a fast endpoint's)
CONNECTIONS = 8  # each side's connections to the server in one process
PUBLIC = "-c search_path=public"  # LangGraph's tables, not this project's (schema jianmu, the user's own name)


class LagProbe:
    """A coroutine that sleeps 1 ms at a time and keeps how late it woke: the worst stall, and the worst
    outside the collector's full collections with the CPU time this process had in it, and the most
    CPU time any such stall held (on a loaded machine a stall is also other processes' turn on the
    CPU: its CPU time is what the loop's own work held it). A full collection (generation 2) walks
    every object of the process, the application's too, whoever allocated them: freezing what start-up
    made (`gc.freeze()`) or moving the thresholds is the application's choice, so they are counted
    apart. `explain`: note every callback the loop runs, to say what ran in the stall that held the
    most CPU (a diagnosis: it slows the loop a little)."""

    def __init__(self, explain: bool = False) -> None:
        self.worst = 0.0
        self.worst_outside = (0.0, 0.0)  # (wall, CPU) seconds of the longest stall no full collection overlapped
        self.most_cpu = (0.0, 0.0)  # (CPU, wall) of the stall outside them that held the most CPU time
        self.stalled: tuple[float, float] = (0.0, 0.0)  # when that one began and ended
        self.full: list[tuple[float, float]] = []  # the full collections, when each began and ended
        self._collecting = 0.0
        self._task: asyncio.Task | None = None
        self._callbacks = CallbackLog() if explain else None

    def _collected(self, phase: str, info: dict) -> None:
        if info["generation"] == 2:
            if phase == "start":
                self._collecting = time.perf_counter()
            else:
                self.full.append((self._collecting, time.perf_counter()))

    async def _probe(self) -> None:
        while True:
            started, cpu = time.perf_counter(), time.process_time()
            await asyncio.sleep(0.001)
            woke, cpu = time.perf_counter(), time.process_time() - cpu
            late = woke - started - 0.001
            self.worst = max(self.worst, late)
            if any(s < woke and e > started for s, e in self.full[-2:]):
                continue
            self.worst_outside = max(self.worst_outside, (late, cpu))
            if cpu > self.most_cpu[0]:
                self.most_cpu, self.stalled = (cpu, late), (started + 0.001, woke)

    def __enter__(self) -> LagProbe:
        gc.callbacks.append(self._collected)
        if self._callbacks is not None:
            self._callbacks.__enter__()
        self._task = asyncio.get_running_loop().create_task(self._probe())
        return self

    def __exit__(self, *_) -> None:
        self._task.cancel()
        gc.callbacks.remove(self._collected)
        if self._callbacks is not None:
            self._callbacks.__exit__()

    def summary(self) -> str:
        longest = max((e - s for s, e in self.full), default=0.0)
        (late, cpu), (most, its) = self.worst_outside, self.most_cpu
        return (f"{late * 1000:.1f} ms ({cpu * 1000:.1f} ms of it CPU; the most CPU in a stall {most * 1000:.1f} ms, "
                f"of {its * 1000:.1f}); with full collections {self.worst * 1000:.0f} ms ({len(self.full)}, "
                f"the longest {longest * 1000:.0f} ms)")

    def explanation(self) -> str:
        """What the loop ran while the probe waited in the stall that held the most CPU."""
        return self._callbacks.within(*self.stalled) if self._callbacks is not None else ""


class CallbackLog:
    """Each callback the event loop runs (`asyncio.Handle._run`, a task's every step included), with
    when it began and ended and the CPU time it took (on a loaded machine a callback's wall time is
    also other processes' turns)."""

    def __init__(self) -> None:
        self.ran: list[tuple[float, float, float, object]] = []
        self._original = asyncio.events.Handle._run

    def __enter__(self) -> CallbackLog:
        original, ran = self._original, self.ran

        def timed(handle: asyncio.Handle) -> None:
            began, cpu = time.perf_counter(), time.thread_time()
            original(handle)
            ran.append((began, time.perf_counter(), time.thread_time() - cpu, handle._callback))

        asyncio.events.Handle._run = timed
        return self

    def __exit__(self, *_) -> None:
        asyncio.events.Handle._run = self._original

    def within(self, began: float, ended: float) -> str:
        """The callbacks that ran between `began` and `ended`, grouped by what they were: how many, their
        CPU time in all and the most one took."""
        groups: dict[str, list[float]] = {}
        for start, end, cpu, callback in self.ran:
            if start < ended and end > began:
                groups.setdefault(_named(callback), []).append(cpu)
        lines = [f"      {len(cpus):>4} x {name}: {sum(cpus) * 1000:.1f} ms of CPU, the most {max(cpus) * 1000:.1f}"
                 for name, cpus in sorted(groups.items(), key=lambda item: -sum(item[1]))]
        longest = sorted(self.ran, key=lambda ran: -ran[2])[:5]
        return (f"    in the worst stall ({(ended - began) * 1000:.1f} ms):\n" + "\n".join(lines) +
                "\n    the callbacks that took the most CPU in the whole run: " +
                ", ".join(f"{_named(callback)} {cpu * 1000:.1f} ms" for _, _, cpu, callback in longest))


def _named(callback: object) -> str:
    owner = getattr(callback, "__self__", None)
    if isinstance(owner, asyncio.Task):
        return f"step of task {getattr(owner.get_coro(), '__qualname__', owner.get_name())}"
    return getattr(callback, "__qualname__", repr(callback))


async def ours(opened: Callable[[], Any], runs: int, rounds: int, latency: float = 0.0, explain: bool = False) -> dict:
    """`runs` runners at once recording into one store, `opened()`; `latency`: seconds each of the
    model's answers is awaited."""
    store = opened()
    runners = [ReactiveRunner(build(rounds, latency), ReActState, checkpointer=store) for _ in range(runs)]
    await asyncio.sleep(0.05)  # (the probe starts on a quiet loop)
    with LagProbe(explain) as probe:
        started, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(r.run(input_data={"messages": [human(TASK)]}) for r in runners))
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    stored = sum(len(store.list(r.run_id)) for r in runners)
    store.close()
    return {"wall": wall, "cpu": cpu, "checkpoints": stored, "probe": probe}


async def langgraph_async(url: str, runs: int, rounds: int, latency: float = 0.0) -> dict:
    """The same runs through `create_react_agent` with LangGraph's `AsyncPostgresSaver`."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row, "options": PUBLIC}
    async with AsyncConnectionPool(url, min_size=CONNECTIONS, max_size=CONNECTIONS, kwargs=kwargs) as pool:
        saver = AsyncPostgresSaver(pool)
        await saver.setup()
        agents = [langgraph_peer._agent(script(rounds, latency), observation, saver) for _ in range(runs)]
        tag = os.urandom(4).hex()
        with LagProbe() as probe:
            started, cpu = time.perf_counter(), time.process_time()
            await asyncio.gather(*(a.ainvoke({"messages": [("user", TASK)]}, langgraph_peer._config(f"{tag}-{i}"))
                                   for i, a in enumerate(agents)))
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        async with pool.connection() as conn:
            stored = (await (await conn.execute("SELECT count(*) AS n FROM checkpoints WHERE thread_id LIKE %s",
                                                (f"{tag}-%",))).fetchone())["n"]
    return {"wall": wall, "cpu": cpu, "checkpoints": stored, "probe": probe}


def writer(kind: str, url: str, go: str, rounds: int) -> None:
    """A writer process: connect, build its agent, say ready, wait for `go`, record one run, print its
    checkpoints. (Each side's agent is built before `go`: its scripted model's 1 KB texts too.)"""
    if kind == "ours":
        store = open_store(url)
        runner = ReactiveRunner(build(rounds), ReActState, checkpointer=store)
        print("ready", flush=True)
        while not os.path.exists(go):
            time.sleep(0.002)
        asyncio.run(runner.run(input_data={"messages": [human(TASK)]}))
        print(len(store.list(runner.run_id)))
        store.close()
        return
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    with psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row, options=PUBLIC) as conn:
        agent = langgraph_peer._agent(script(rounds), observation, PostgresSaver(conn))
        print("ready", flush=True)
        while not os.path.exists(go):
            time.sleep(0.002)
        config = langgraph_peer._config(f"{os.getpid()}-{os.urandom(4).hex()}")
        agent.invoke({"messages": [("user", TASK)]}, config)
        print(len(list(agent.checkpointer.list(config))))


def processes(kind: str, url: str, count: int, rounds: int) -> dict:
    """`count` writer processes of `kind` racing from one start signal: wall time to the last one's end."""
    with tempfile.TemporaryDirectory(prefix="jianmu-go-") as folder:
        go = Path(folder) / "go"
        children = [subprocess.Popen([sys.executable, __file__, "--writer", kind, url, str(go), str(rounds)],
                                     stdout=subprocess.PIPE, text=True) for _ in range(count)]
        for child in children:
            assert child.stdout.readline().strip() == "ready", f"a {kind} writer failed to start"
        started = time.perf_counter()
        go.touch()
        stored = 0
        for child in children:
            out, _ = child.communicate()
            assert child.returncode == 0, f"a {kind} writer failed"
            stored += int(out)
        return {"wall": time.perf_counter() - started, "checkpoints": stored}


def _setup_langgraph(url: str) -> None:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    with psycopg.connect(url, autocommit=True, options=PUBLIC) as conn:
        PostgresSaver(conn).setup()


def main(runs: list[int], rounds: int, count: int, given: str | None, latency: float, explain: bool) -> None:
    if not langgraph_peer.AVAILABLE or not langgraph_peer._installed("langgraph-checkpoint-postgres"):
        print(langgraph_peer.MISSING.replace("no peer column", "this bench compares with it: nothing measured"))
        return
    url, server = postgres_url(given)
    if url is None:
        return
    for i in range(rounds):
        observation(i)
    try:
        print(f"workload: {rounds} ReAct rounds a run; {CONNECTIONS} connections a process each side; worst loop "
              "stall: outside the collector's full collections (and this process's CPU time in it), then with them")
        for wait in sorted({0.0, latency}):
            model = f"model answers after {wait * 1000:.0f} ms" if wait else "model answers at once"
            print(f"{model:>32}{'ours, s':>10}{'LangGraph, s':>14}{'ratio':>8}{'ours, ckpt/s':>14}{'LG, ckpt/s':>12}"
                  f"{'CPU s ours / LG':>17}{'ratio':>8}")
            for n in runs:
                opened = functools.partial(open_store, server.new_database() if server else url, asynchronous=True)
                mine = asyncio.run(ours(opened, n, rounds, wait, explain))
                theirs = asyncio.run(langgraph_async(server.new_database() if server else url, n, rounds, wait))
                print(f"{f'{n} runs in one loop':>32}{mine['wall']:>10.2f}{theirs['wall']:>14.2f}"
                      f"{mine['wall'] / theirs['wall']:>7.2f}x{mine['checkpoints'] / mine['wall']:>14.0f}"
                      f"{theirs['checkpoints'] / theirs['wall']:>12.0f}{mine['cpu']:>9.2f} / {theirs['cpu']:<5.2f}"
                      f"{mine['cpu'] / theirs['cpu']:>7.2f}x")
                print(f"    worst stall: ours {mine['probe'].summary()}; LangGraph {theirs['probe'].summary()}")
                if explain:
                    print(mine["probe"].explanation())
        with tempfile.TemporaryDirectory(prefix="jianmu-bench-") as folder:
            for n in runs:
                for kind, opened in (
                        ("SQLite file, synchronous commits", functools.partial(open_store, Path(folder) / f"sync-{n}.db")),
                        ("SQLite file, writer thread",
                         functools.partial(open_store, Path(folder) / f"thread-{n}.db", asynchronous=True)),
                        ("in memory (no I/O)", InMemoryCheckpointStore)):
                    other = asyncio.run(ours(opened, n, rounds, explain=explain))
                    print(f"{kind}, {n} runs in one loop: {other['wall']:.2f} s, {other['checkpoints'] / other['wall']:.0f} "
                          f"checkpoints/s, worst stall {other['probe'].summary()}")
                    if explain:
                        print(other["probe"].explanation())
        if count:
            database = server.new_database() if server else url
            _setup_langgraph(database)
            mine, theirs = processes("ours", database, count, rounds), processes("langgraph", database, count, rounds)
            print(f"{count} writer processes: ours {mine['wall']:.2f} s ({mine['checkpoints']} checkpoints), "
                  f"LangGraph PostgresSaver {theirs['wall']:.2f} s ({theirs['checkpoints']}): "
                  f"{mine['wall'] / theirs['wall']:.2f}x")
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--writer"]:
        writer(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[10, 50], help="runs at once in one event loop")
    parser.add_argument("--rounds", type=int, default=20, help="ReAct rounds a run")
    parser.add_argument("--processes", type=int, default=50, help="writer processes (0: none)")
    parser.add_argument("--postgres", metavar="URL", help="measure this database (default: a throw-away server)")
    parser.add_argument("--latency", type=float, default=LATENCY,
                        help="seconds the model's answers are awaited in the second rows (0: no such rows)")
    parser.add_argument("--explain", action="store_true", help="say what the loop ran in each worst stall")
    args = parser.parse_args()
    main(args.runs, args.rounds, args.processes, args.postgres, args.latency, args.explain)
