"""Many runs in one asyncio process, and many writer processes, recording into one store.

    .venv/bin/python bench/many_runs.py [--runs 10 50] [--rounds 20] [--processes 50] [--postgres URL]

The workload is bench/checkpoint_growth.py's: a scripted ReAct run, one `lookup` tool call a round
with 1 KB texts. Printed side by side, in the same run, on the same server (`--postgres URL`, else a
throw-away one started as the tests start theirs):

- N runs at once in one event loop recording into one `AsyncPostgresCheckpointStore`, beside
  LangGraph's `AsyncPostgresSaver` (a connection pool of the same size) running the same workload
  with `ainvoke`: wall time, checkpoints per second, and the longest stall a probe coroutine saw
  (it sleeps 1 ms and measures how late it wakes: the loop lag a web server's requests would feel).
  Goals (issue #34): at most 1/3 of LangGraph's wall time at 50 runs, checkpoints per second growing
  with the runs, no stall over 10 ms.
- The same probe beside N runs recording into an SQLite file (its saves are short synchronous commits),
  and into memory: no I/O at all, so the lag left is the runs' own ticks, not a store's.
- P writer processes, one run each, `PostgresCheckpointStore` beside LangGraph's `PostgresSaver`:
  wall time from a common start to the last writer's end (goal: at most 0.4x).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import checkpoint_growth
import langgraph_peer
from checkpoint_growth import build, postgres_url, script

from runtime import ReActState, human
from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import InMemoryCheckpointStore, open_store

TASK = "Look everything up."
# the tool's 1 KB answers made once, not at each call (6 ms each: a stall of the workload's own)
observation = checkpoint_growth.observation = functools.lru_cache(checkpoint_growth.observation)
CONNECTIONS = 8  # each side's connections to the server in one process
PUBLIC = "-c search_path=public"  # LangGraph's tables, not this project's (schema jianmu, the user's own name)


class LagProbe:
    """A coroutine that sleeps 1 ms at a time and keeps how late it woke, the longest first."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task | None = None

    async def _probe(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(0.001)
            self.worst = max(self.worst, time.perf_counter() - started - 0.001)

    def __enter__(self) -> LagProbe:
        self._task = asyncio.get_running_loop().create_task(self._probe())
        return self

    def __exit__(self, *_) -> None:
        self._task.cancel()


async def ours(name: str | None, runs: int, rounds: int) -> dict:
    """`runs` runners at once recording into one store named `name` (asynchronous where it can be;
    None: in memory, no I/O, the runs' own loop lag)."""
    store = open_store(name, asynchronous=True) if name is not None else InMemoryCheckpointStore()
    runners = [ReactiveRunner(build(rounds), ReActState, checkpointer=store) for _ in range(runs)]
    await asyncio.sleep(0.05)  # (the probe starts on a quiet loop)
    with LagProbe() as probe:
        started = time.perf_counter()
        await asyncio.gather(*(r.run(input_data={"messages": [human(TASK)]}) for r in runners))
        wall = time.perf_counter() - started
    stored = sum(len(store.list(r.run_id)) for r in runners)
    store.close()
    return {"wall": wall, "checkpoints": stored, "lag": probe.worst}


async def langgraph_async(url: str, runs: int, rounds: int) -> dict:
    """The same runs through `create_react_agent` with LangGraph's `AsyncPostgresSaver`."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row, "options": PUBLIC}
    async with AsyncConnectionPool(url, min_size=CONNECTIONS, max_size=CONNECTIONS, kwargs=kwargs) as pool:
        saver = AsyncPostgresSaver(pool)
        await saver.setup()
        agents = [langgraph_peer._agent(script(rounds), observation, saver) for _ in range(runs)]
        tag = os.urandom(4).hex()
        with LagProbe() as probe:
            started = time.perf_counter()
            await asyncio.gather(*(a.ainvoke({"messages": [("user", TASK)]}, langgraph_peer._config(f"{tag}-{i}"))
                                   for i, a in enumerate(agents)))
            wall = time.perf_counter() - started
        async with pool.connection() as conn:
            stored = (await (await conn.execute("SELECT count(*) AS n FROM checkpoints WHERE thread_id LIKE %s",
                                                (f"{tag}-%",))).fetchone())["n"]
    return {"wall": wall, "checkpoints": stored, "lag": probe.worst}


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


def main(runs: list[int], rounds: int, count: int, given: str | None) -> None:
    if not langgraph_peer.AVAILABLE or not langgraph_peer._installed("langgraph-checkpoint-postgres"):
        print(langgraph_peer.MISSING.replace("no peer column", "this bench compares with it: nothing measured"))
        return
    url, server = postgres_url(given)
    if url is None:
        return
    try:
        print(f"workload: {rounds} ReAct rounds a run; {CONNECTIONS} connections a process each side")
        print(f"{'runs in one loop':>18}{'ours, s':>10}{'LangGraph, s':>14}{'ratio':>8}"
              f"{'ours, ckpt/s':>14}{'LG, ckpt/s':>12}{'ours, worst lag ms':>20}{'LG, worst lag ms':>18}")
        for n in runs:
            mine = asyncio.run(ours(server.new_database() if server else url, n, rounds))
            theirs = asyncio.run(langgraph_async(server.new_database() if server else url, n, rounds))
            print(f"{n:>18}{mine['wall']:>10.2f}{theirs['wall']:>14.2f}{mine['wall'] / theirs['wall']:>7.2f}x"
                  f"{mine['checkpoints'] / mine['wall']:>14.0f}{theirs['checkpoints'] / theirs['wall']:>12.0f}"
                  f"{mine['lag'] * 1000:>20.1f}{theirs['lag'] * 1000:>18.1f}")
        with tempfile.TemporaryDirectory(prefix="jianmu-bench-") as folder:
            for n in runs:
                for kind, name in (("SQLite file", str(Path(folder) / f"runs-{n}.db")), ("in memory (no I/O)", None)):
                    other = asyncio.run(ours(name, n, rounds))
                    print(f"{kind}, {n} runs in one loop: {other['wall']:.2f} s, {other['checkpoints'] / other['wall']:.0f} "
                          f"checkpoints/s, worst lag {other['lag'] * 1000:.1f} ms")
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
    args = parser.parse_args()
    main(args.runs, args.rounds, args.processes, args.postgres)
