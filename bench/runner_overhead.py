"""Runner overhead: ReactiveRunner against raw py_trees ticking the same tree.

Trees (all sync leaves, so raw py_trees can tick them too):
- static: a Parallel over Sequences of 10 Success leaves; no status changes after the
  first tick. 1,101 nodes (100 Sequences, the historical figure) and 10,101.
- churn: a Parallel over Parallels of 10 Flip leaves that alternate SUCCESS and RUNNING,
  so every node changes status every tick (every tick has a node.status event per node).
  10,101 and 100,101 nodes.

Configurations: raw `BehaviourTree.tick()`; a runner built with defaults (its bus keeps a
history); a subscriber to every event; the SQLite store recording every tick (a
checkpointer); a node boundary set on one leaf, stopped at and resumed every tick.
Microseconds per node-tick, best of several interleaved repeats, each beside raw
py_trees measured in the same run, so the ratios hold on a noisy machine; beside each, the
seconds the garbage collector ran inside the timed ticks (gc.callbacks). A runner on a tree
of 1,000 nodes or more freezes what is alive (runtime/engine/long_lived.py) as it goes live,
before the timer; raw py_trees' tree is not frozen: its ticks keep nothing, so no collection
runs inside them (its gc column says so) and a freeze would change nothing. Without
`--quick`, also how long one save holds the loop at 110,001 nodes (a delta, and the
periodic full record), beside raw py_trees' tick of the same tree (`--saves`: only that).

A ReAct-shaped tree (`create_react_node`, scripted model, one tool in a tool box) runs
rounds through `Agent.make_runner` (which closes the tool box when the run finishes)
and through a bare runner: the per-round time of both, so a per-tick cost of the
agent's wiring shows.

    .venv/bin/python bench/runner_overhead.py [--repeats 5] [--quick | --saves]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import langgraph_peer
import py_trees
from py_trees.common import Status
from pydantic import BaseModel

from runtime import Agent, ModelClient, ReActConfig, ReActState, ScriptedProvider, create_react_node, tool
from runtime.engine import ReactiveRunner, RuntimeEventBus
from runtime.memory.checkpoint import SQLiteCheckpointStore

LEAVES = 10


def build_tree(branches: int = 100) -> py_trees.behaviour.Behaviour:
    """The static tree: statuses settle after the first tick."""
    return py_trees.composites.Parallel(
        "root",
        policy=py_trees.common.ParallelPolicy.SuccessOnAll(synchronise=False),
        children=[
            py_trees.composites.Sequence(f"seq{b}", memory=False, children=[
                py_trees.behaviours.Success(f"leaf{b}.{i}") for i in range(LEAVES)])
            for b in range(branches)
        ],
    )


class Flip(py_trees.behaviour.Behaviour):
    """SUCCESS, RUNNING, SUCCESS, ...: a new status every tick."""

    def __init__(self, name: str):
        super().__init__(name)
        self.flips = 0

    def update(self) -> Status:
        self.flips += 1
        return Status.SUCCESS if self.flips % 2 else Status.RUNNING


def build_churn_tree(branches: int) -> py_trees.behaviour.Behaviour:
    """Every node changes status every tick: the leaves flip, the Parallels follow them."""
    policy = py_trees.common.ParallelPolicy.SuccessOnAll
    return py_trees.composites.Parallel("root", policy=policy(synchronise=False), children=[
        py_trees.composites.Parallel(f"par{b}", policy=policy(synchronise=False),
                                     children=[Flip(f"flip{b}.{i}") for i in range(LEAVES)])
        for b in range(branches)])


def nodes_of(branches: int) -> int:
    return 1 + branches * (1 + LEAVES)


class Empty(BaseModel):
    pass


class CollectorClock:
    """Seconds spent in garbage collections while `timing`: where a configuration's time goes."""

    def __init__(self) -> None:
        self.timing = False
        self.seconds = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if not self.timing:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started

    def start(self) -> float:
        self.seconds, self.timing = 0.0, True
        return time.perf_counter()

    def stop(self, started: float) -> tuple[float, float]:
        """(seconds since `started`, of which in collections)."""
        elapsed, self.timing = time.perf_counter() - started, False
        return elapsed, self.seconds


COLLECTOR = CollectorClock()
gc.callbacks.append(COLLECTOR)


def raw_py_trees(build: Callable, ticks: int) -> tuple[float, float]:
    tree = py_trees.trees.BehaviourTree(build())
    started = COLLECTOR.start()
    for _ in range(ticks):
        tree.tick()
    return COLLECTOR.stop(started)


async def _runner(build: Callable, ticks: int, config: str, store_dir: Path) -> tuple[float, float]:
    bus, store = None, None
    if config == "subscriber":
        bus = RuntimeEventBus(history=0)
        recorded: list = []
        bus.subscribe(recorded.append)
    if config == "sqlite":
        store = SQLiteCheckpointStore(store_dir / f"run-{time.perf_counter_ns()}.db")
    runner = ReactiveRunner(build(), Empty(), event_bus=bus, checkpointer=store)
    if config == "boundary":
        runner.stop_before = {next(path for path in runner.nodes if "leaf" in path or "flip" in path)}
    runner.start_fresh()
    runner._go_live()
    started = COLLECTOR.start()
    for _ in range(ticks):  # the per-tick path of runner.run(): wake check, hooks, tick
        runner._wake.set()  # a churn tree stays RUNNING with nothing pending: wake it as a write would
        while not (await runner._step(detailed=False)).completed:
            pass  # held before the node: resume at once
    timed = COLLECTOR.stop(started)
    runner._go_idle()
    if store is not None:
        store.close()
    return timed


def reactive(build: Callable, ticks: int, config: str, store_dir: Path) -> tuple[float, float]:
    return asyncio.run(_runner(build, ticks, config, store_dir))


GOALS = {"defaults": "<=1.05", "subscriber": "<=2", "sqlite": ""}
LABELS = {"defaults": "ReactiveRunner, built with defaults", "subscriber": "subscriber to every event",
          "sqlite": "SQLite store recording every tick", "boundary": "stops before a leaf, resumes"}
SQLITE_GOALS = {"static": "<=1.2", "churn": "<=2.5"}


def measure(name: str, build: Callable, nodes: int, ticks: int, configs: list[str], repeats: int,
            store_dir: Path) -> None:
    rows = []
    for _ in range(repeats):  # interleave so drift hits every configuration alike
        rows.append([raw_py_trees(build, ticks)] + [reactive(build, ticks, c, store_dir) for c in configs])
    (raw, raw_gc), *others = (min(col) for col in zip(*rows, strict=True))  # best by elapsed, with its gc
    per = ticks * nodes / 1e6  # seconds -> microseconds per node-tick
    print(f"\n{name}: {nodes:,} nodes, {ticks} ticks, best of {repeats}")
    print(f"{'configuration':<44}{'us/node-tick':>14}{'ratio':>9}{'goal':>8}{'gc s':>8}")
    print(f"{'raw py_trees BehaviourTree.tick()':<44}{raw / per:>14.3f}{1.0:>9.3f}{'':>8}{raw_gc:>8.3f}")
    for config, (elapsed, collecting) in zip(configs, others, strict=True):
        goal = SQLITE_GOALS.get(name.split()[0], "") if config == "sqlite" and nodes > 5000 else GOALS.get(config, "")
        print(f"{LABELS[config]:<44}{elapsed / per:>14.3f}{elapsed / raw:>9.3f}{goal:>8}{collecting:>8.3f}")


async def _saves(build: Callable, ticks: int, store_dir: Path) -> tuple[list[float], list[float]]:
    """CPU milliseconds of each delta save and of the full records (the first save, which captures the
    whole runner, and the periodic one, forced half way), recording `ticks` ticks (each save with its
    tick's returns, issue 28's record)."""
    store = SQLiteCheckpointStore(store_dir / f"saves-{time.perf_counter_ns()}.db")
    runner = ReactiveRunner(build(), Empty(), checkpointer=store)
    checkpoints, after_tick = runner.checkpoints, runner.checkpoints.after_tick
    deltas, full = [], []

    def timed(report) -> None:
        started = time.process_time()
        after_tick(report)
        (full if checkpoints._since_full == 0 else deltas).append((time.process_time() - started) * 1000)

    checkpoints.after_tick = timed
    runner.start_fresh()
    runner._go_live()
    for tick in range(ticks):
        if tick == ticks // 2:
            checkpoints._since_full = checkpoints.full_every  # the periodic full record, now
        runner._wake.set()
        await runner._step(detailed=False)
    runner._go_idle()
    store.close()
    return deltas, full


def raw_cpu_ms(build: Callable, ticks: int) -> float:
    """CPU milliseconds of raw py_trees' tick (the first left out), steadier than wall time on a shared machine."""
    tree = py_trees.trees.BehaviourTree(build())
    tree.tick()
    times = []
    for _ in range(ticks):
        started = time.process_time()
        tree.tick()
        times.append((time.process_time() - started) * 1000)
    return sorted(times)[len(times) // 2]


def measure_saves(name: str, build: Callable, nodes: int, ticks: int, store_dir: Path) -> None:
    """How long a save holds the loop, beside raw py_trees' tick of the same tree (CPU time, medians)."""
    raw = raw_cpu_ms(build, ticks)
    deltas, (first, periodic) = asyncio.run(_saves(build, ticks, store_dir))
    median = sorted(deltas)[len(deltas) // 2]
    print(f"\n{name}: {nodes:,} nodes, a save after each of {ticks} ticks; raw py_trees tick {raw:.1f} CPU ms")
    print(f"  delta save median {median:.1f} ms ({median / raw:.3f}x raw's tick; goal for churn <= 0.25x), "
          f"max {max(deltas):.1f} ms; periodic full record {periodic:.1f} ms ({periodic / raw:.3f}x); "
          f"first save (the whole runner captured) {first:.1f} ms")


def measure_large_saves(store_dir: Path) -> None:
    for name, build in (("static", build_tree), ("churn", build_churn_tree)):
        measure_saves(name, lambda build=build: build(10_000), nodes_of(10_000), 6, store_dir)


# -- a ReAct-shaped tree -------------------------------------------------------------
@tool
def lookup(round: int) -> str:
    """A short observation for a round."""
    return observation(round)


def observation(round: int) -> str:
    return f"observation {round}"


def react_script(rounds: int) -> list[dict]:
    steps = [{"content": f"round {i}", "tool_calls": [{"name": "lookup", "arguments": {"round": i}}]}
             for i in range(rounds)]
    return [*steps, {"content": "done"}]


def react_agent(rounds: int) -> Agent:
    client = ModelClient.resolve(ScriptedProvider(react_script(rounds)))
    root = create_react_node(name="Bench", model_client=client, tools=[lookup],
                             config=ReActConfig(max_iterations=rounds + 5))
    return Agent(root, state_schema=ReActState)


async def _react(rounds: int, through_agent: bool) -> float:
    agent = react_agent(rounds)
    runner = agent.make_runner() if through_agent else ReactiveRunner(agent.root, agent.state_schema, agent.context)
    started = time.perf_counter()
    status = await runner.run(input_data={"task": "bench"})
    elapsed = time.perf_counter() - started
    assert status == Status.SUCCESS, status
    await agent.close()
    return elapsed


def measure_react(rounds: int, repeats: int) -> None:
    """The ReAct loop per round, bare and through Agent, beside LangGraph's `create_react_agent`
    on the same script (no checkpointer on either side) when the bench extra is installed."""
    def peer() -> float:
        return langgraph_peer.react_seconds(react_script(rounds), observation, "bench")

    rows = [(asyncio.run(_react(rounds, False)), asyncio.run(_react(rounds, True)),
             peer() if langgraph_peer.AVAILABLE else float("nan")) for _ in range(repeats)]
    bare, agent, langgraph = (min(col) for col in zip(*rows, strict=True))
    print(f"\nReAct-shaped tree: {rounds} rounds (scripted model, one tool), best of {repeats}")
    print(f"{'configuration':<44}{'us/round':>14}{'ratio':>9}")
    print(f"{'bare ReactiveRunner':<44}{bare / rounds * 1e6:>14.1f}{1.0:>9.3f}")
    print(f"{'Agent.make_runner (closes tools on finish)':<44}{agent / rounds * 1e6:>14.1f}{agent / bare:>9.3f}")
    if langgraph_peer.AVAILABLE:
        print(f"{'LangGraph create_react_agent (peer)':<44}{langgraph / rounds * 1e6:>14.1f}{langgraph / bare:>9.3f}")
        print(f"bare ReactiveRunner / LangGraph: {bare / langgraph:.3f} (goal at 800 rounds <= 0.5)")
    else:
        print(langgraph_peer.MISSING)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="skip the 100,000-node trees")
    parser.add_argument("--saves", action="store_true", help="only how long a save holds the loop at 110,001 nodes")
    args = parser.parse_args()
    all_configs = ["defaults", "subscriber", "sqlite"]
    with tempfile.TemporaryDirectory() as tmp:
        store_dir = Path(tmp)
        if args.saves:
            return measure_large_saves(store_dir)
        measure("static", build_tree, nodes_of(100), 300, [*all_configs, "boundary"], args.repeats, store_dir)
        measure("static", lambda: build_tree(1000), nodes_of(1000), 30, all_configs, args.repeats, store_dir)
        measure("churn", lambda: build_churn_tree(1000), nodes_of(1000), 30, all_configs, args.repeats, store_dir)
        if not args.quick:
            measure("churn", lambda: build_churn_tree(10_000), nodes_of(10_000), 4, ["defaults", "subscriber"],
                    max(2, args.repeats // 2), store_dir)
            measure_large_saves(store_dir)
    for rounds in (200, 800):  # a per-round cost that grows with the history shows here
        measure_react(rounds, args.repeats if rounds <= 200 else 1)


if __name__ == "__main__":
    main()
