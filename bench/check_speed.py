"""What `check` costs beside running the tree it checks, measured in the same process run.

Workloads:
- a 200-round ReAct run (one tool call a round, then the answer), its model answering
  (a) from a script in process (no latency at all: the floor of a live run), and
  (b) over HTTP from the loopback OpenAI-compatible test server (tests/openai_server.py),
  each reply after `--latency` seconds (default 0.02: a very fast model; real ones take
  0.5-5 s a call, so a real live run costs 25-250 times more waiting than this one);
- sample_trees/large_tree.py: 10,000 nodes, ten stages, a 20 ms pause in each (slept in
  the check too: a node's own waiting is part of the tree, not served).

Each live run is recorded into an SQLite file (as `jianmu-studio run` records), then that
recording is checked (`check_run`: the tree built again, every answer served, each tick
compared). Both are timed from building the tree to the run's end. Seconds, best of
`--repeats` interleaved runs, and the check's share of the live run.

    .venv/bin/python bench/check_speed.py [--repeats 3] [--latency 0.02] [--rounds 200]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the loopback model server the tests use
sys.path.insert(0, str(ROOT / "bench"))  # the ReAct workload of runner_overhead.py

from openai_server import FakeServer, completion, json_reply  # noqa: E402
from runner_overhead import lookup  # noqa: E402
from runner_overhead import react_script as answers  # noqa: E402

from runtime import Agent, ModelClient, ReActConfig, ReActState, ScriptedProvider, create_react_node  # noqa: E402
from runtime.check import check_run  # noqa: E402
from runtime.memory.checkpoint import SQLiteCheckpointStore  # noqa: E402
from runtime.model import OpenAICompatibleProvider  # noqa: E402
from runtime.treefile import load_tree  # noqa: E402

LARGE = ROOT / "sample_trees" / "large_tree.py"


def react(client: ModelClient, rounds: int) -> Agent:
    root = create_react_node(name="Bench", model_client=client, tools=[lookup],
                             config=ReActConfig(max_iterations=rounds + 5))
    return Agent(root, state_schema=ReActState)


def scripted(rounds: int) -> Callable[[], Agent]:
    return lambda: react(ModelClient.resolve(ScriptedProvider(answers(rounds))), rounds)


class Served:
    """The loopback server answering the ReAct run's calls in order, each after `latency` seconds."""

    def __init__(self, latency: float, rounds: int):
        self.latency, self.rounds = latency, rounds
        self.server = FakeServer()

    async def __aenter__(self) -> Served:
        await self.server.start()
        self.replies = [completion(a["content"], [{"id": f"call_{i}", "type": "function", "function": {
            "name": c["name"], "arguments": f'{{"round": {c["arguments"]["round"]}}}'}} for c in a.get("tool_calls", ())]
            or None) for i, a in enumerate(answers(self.rounds))]
        self.server.responder = self._reply
        return self

    def _reply(self, request):
        body = next(self._queue)

        async def reply(request, writer):
            await asyncio.sleep(self.latency)
            await json_reply(body)(request, writer)

        return reply

    async def __aexit__(self, *exc) -> None:
        await self.server.stop()

    def agent(self) -> Agent:
        """The ReAct tree on this server, which answers its run from the first reply again."""
        self._queue = iter(self.replies)
        return react(ModelClient(OpenAICompatibleProvider(self.server.url, "bench-key", default_model="m")), self.rounds)


async def live(build: Callable[[], Agent], folder: Path, input_data: dict) -> tuple[float, SQLiteCheckpointStore, str]:
    """Seconds of one live run recorded into a new SQLite file; the store and the run's id."""
    store = SQLiteCheckpointStore(folder / f"run-{time.monotonic_ns()}.db")
    started = time.perf_counter()  # from building the tree, as a check does
    agent = build()
    agent.runner = agent.make_runner(checkpointer=store)
    result = await agent.run(input_data)
    elapsed = time.perf_counter() - started
    assert result.ok, result.error
    return elapsed, store, agent.runner.run_id


async def checked(store: SQLiteCheckpointStore, run_id: str, build: Callable[[], Agent]) -> float:
    started = time.perf_counter()
    report = await check_run(store, run_id, build)
    elapsed = time.perf_counter() - started
    assert report.ok, "\n".join(report.lines())
    return elapsed


async def measure(name: str, build: Callable[[], Agent], check_build: Callable[[], Agent], input_data: dict,
                  repeats: int, folder: Path) -> tuple[str, float, float, int]:
    lives, checks = [], []
    ticks = 0
    for _ in range(repeats):
        seconds, store, run_id = await live(build, folder, input_data)
        lives.append(seconds)
        checks.append(await checked(store, run_id, check_build))
        ticks = store.latest(run_id).tick
        store.close()
    return name, min(lives), min(checks), ticks


async def main(repeats: int, latency: float, rounds: int) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        task = {"task": "bench"}
        rows.append(await measure(f"ReAct {rounds} rounds, scripted model", scripted(rounds), scripted(rounds), task,
                                  repeats, folder))
        async with Served(latency, rounds) as served:
            rows.append(await measure(f"ReAct {rounds} rounds, loopback model {latency * 1000:g} ms/call",
                                      served.agent, served.agent, task, repeats, folder))
        large = load_tree(LARGE)
        rows.append(await measure("large_tree.py, 10,000 nodes", lambda: load_tree(LARGE).agent,
                                  lambda: load_tree(LARGE).agent, large.input_data, repeats, folder))
    print(f"check against the live run it checks, best of {repeats} (seconds)\n")
    print(f"{'workload':<46}{'ticks':>7}{'live, recorded':>16}{'check':>9}{'check/live':>12}")
    for name, live_s, check_s, ticks in rows:
        print(f"{name:<46}{ticks:>7}{live_s:>16.3f}{check_s:>9.3f}{check_s / live_s:>11.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.02, help="seconds the loopback model takes a call")
    parser.add_argument("--rounds", type=int, default=200, help="ReAct rounds (default 200)")
    args = parser.parse_args()
    asyncio.run(main(args.repeats, args.latency, args.rounds))
