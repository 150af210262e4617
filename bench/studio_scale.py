"""The studio's scale curve: sample_trees/large_tree.py's shape at 100, 1,000, 10,000 and 100,000 nodes.

Each size runs in a fresh process, so its memory is its own. For each: building the tree
file's root (py_trees' own cost), opening the studio (DebugSession, then `App.run_test()`
until the root's line is painted), step `n` until the screen shows the tick (the state as the step
left it or as it is now: StageDone writes after the tick; median of
`--steps`, the first step apart), the RSS after those steps (per node: beyond the process's
RSS before the tree was built); the first step waits until the app has collected and frozen the
tree's objects (studio/app.py, after the first frame: timed apart), then SETTLE more (the
panes' own work after the first frame: a key pressed at once waits for it); then restart (`r`, until
the screen shows the new run's tick 0 and the app has collected the old tree)
and the first step after it, a fork from the new run's tick-1 checkpoint and the first step
after that (a new run or branch has its own first tick: its first checkpoint saved outside a
tick, a new runner going live); then the runner alone ticking an all-sync tree of the same
size (µs per node-tick) beside raw py_trees ticking that tree in the same process.

    .venv/bin/python bench/studio_scale.py [--sizes 100,1000,10000,100000] [--steps 5]

Goals (issue #14 point 6): a 100,000-node tree opens in <= 5 s and steps in <= 250 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runner_overhead import Empty, build_tree, nodes_of, raw_py_trees  # noqa: E402
from studio_latency import (  # noqa: E402
    SIZE,
    STALE_AFTER,
    ProbedApp,
    _painted,
    _state_now,
    _until,
    drawn_label,
    private_store,
    rss_mb,
    shows_tick,
)

from runtime import Agent  # noqa: E402
from runtime.engine import ReactiveRunner  # noqa: E402
from sample_trees import large_tree  # noqa: E402
from studio import startup  # noqa: E402
from studio.loader import LoadedTree  # noqa: E402
from studio.session import DebugSession  # noqa: E402
from studio.widgets.tree_pane import TreePane  # noqa: E402

TICKS = 20  # ticks of the runner alone
SETTLE = 1.0  # s: after the first frame (or a new run on screen), before the first step (the app's own work ends)
TREE_FILE = """from runtime import Agent
from sample_trees import large_tree


def build():
    return Agent(large_tree.build_root(total={nodes}, stages={stages}), state_schema=large_tree.LargeState)
"""  # what a restart loads again: the same tree, of the same size


def stages(nodes: int) -> int:
    return min(10, max(1, nodes // 100))


def build(nodes: int):
    return large_tree.build_root(total=nodes, stages=stages(nodes))


def static_tree(nodes: int):
    """bench/runner_overhead.py's all-sync tree of about `nodes` nodes (large_tree.py pauses
    between stages, which a per-node-tick figure must not count)."""
    branches = max(1, round((nodes - 1) / (nodes_of(1) - 1)))
    return nodes_of(branches), lambda: build_tree(branches)


async def _runner_alone(make) -> float:
    runner = ReactiveRunner(make(), Empty)
    started = time.perf_counter()
    for _ in range(TICKS):
        await runner.step()
    return time.perf_counter() - started


async def measure(nodes: int, steps: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        tree_file = Path(folder) / f"large_tree_{nodes}.py"
        tree_file.write_text(TREE_FILE.format(nodes=nodes, stages=stages(nodes)))
        return await _measure(nodes, steps, tree_file)


async def _measure(nodes: int, steps: int, tree_file: Path) -> dict:
    gc.collect()
    before = rss_mb()
    started = time.perf_counter()
    root = build(nodes)
    built = time.perf_counter() - started
    started = time.perf_counter()
    session = DebugSession(LoadedTree(Agent(root, state_schema=large_tree.LargeState), tree_file, "build", {}),
                           store=private_store())
    loaded = time.perf_counter() - started
    app = ProbedApp(session)
    at_step_end: dict[int, tuple[dict, dict]] = {}  # the state as each step left it (StageDone writes after)
    step = session.step

    async def noted_step():
        report = await step()
        at_step_end[session.tick] = _state_now(session)
        return report

    session.step = noted_step  # the screen looks the method up at each key press

    def root_shown() -> bool:
        pane = app.main.query_one(TreePane)
        drawn = drawn_label(pane, pane.tree.rows.paths[0]) if pane.tree.line_count else None
        return drawn is not None and root.name in drawn and _painted(pane.tree)

    def shows(tick: int) -> bool:
        """The screen shows `tick` (`shows_tick`); its state pane as the step left it, as it is now, or
        as it is now with the marks the session gives now: a write after the tick (StageDone's) is
        marked as made between ticks, which the tick's own changes do not list (the first step, whose
        screen comes late, met only that and was counted stale)."""
        return shows_tick(app, tick, at_step_end.get(tick)) or (
            session.tick == tick and shows_tick(app, tick, (copy.deepcopy(session.state_snapshot()), session.marks())))

    stale = 0
    step_cpu: list[float] = []  # the main thread's CPU ms from each timed `n` to its frame (load swells it less)

    async def timed_step(pilot) -> float | None:
        """`n` to screen, ms; None when the run has finished or the screen never matched (stale)."""
        nonlocal stale
        await _until(lambda: session.runner.can_tick_now or session.runner.finished, 60)
        if session.runner.finished:
            return None
        tick = session.tick
        shown = app.expect(lambda: shows(tick + 1))
        started, cpu = time.perf_counter(), time.thread_time()
        await pilot.press("n")
        try:
            ms = (await asyncio.wait_for(shown, STALE_AFTER * 10) - started) * 1000
            step_cpu.append((app.frame_cpu - cpu) * 1000)
            return ms
        except TimeoutError:  # the screen never matched (an async write racing the probe): not timed
            app.probe = None
            stale += 1
            return None

    frozen = [0]  # the app's collect-and-freeze passes so far (after the first frame, after each restart)
    keep = startup.keep_out_of_collections

    def counted(nodes: int) -> None:
        keep(nodes)
        frozen[0] += 1

    startup.keep_out_of_collections = counted  # looked up at each call (studio/startup.py resume)

    async def new_run(start, tick: int, collects: bool) -> float:
        """`start()` (a restart, a fork) until the screen shows the new run or branch at `tick` (and,
        `collects`, the app has collected the old tree and frozen the new one), s."""
        at_step_end.clear()  # another run's ticks
        was, passes = (session.run_id, session.branch), frozen[0]
        shown = app.expect(lambda: (session.run_id, session.branch) != was and shows(tick))
        started = time.perf_counter()
        await start()
        await asyncio.wait_for(shown, 600)
        await _until(lambda: frozen[0] > passes or not collects, 600)
        took = time.perf_counter() - started
        await asyncio.sleep(SETTLE)
        return took

    shown = app.expect(root_shown)
    started = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        first = await asyncio.wait_for(shown, 600) - started
        await _until(lambda: frozen[0] > 0, 600)  # after the first frame the app collects, then freezes
        settled = time.perf_counter() - started - first  # a key pressed before waits for it
        await asyncio.sleep(SETTLE)
        step_ms = []  # None: stale (the first step stays first, timed or not)
        while len(step_ms) <= steps and not session.runner.finished:
            step_ms.append(await timed_step(pilot))
        timed = [ms for ms in step_ms[1:] if ms is not None]
        cpu_ms = step_cpu[1:len(timed) + 1] if step_ms[0] is not None else step_cpu[:len(timed)]
        gc.collect()
        after = rss_mb()
        restart_s = await new_run(lambda: pilot.press("r"), 0, collects=True)
        after_restart = [await timed_step(pilot) for _ in range(2)]
        source = session.checkpoints()[1].id  # the new run's tick 1

        async def fork() -> None:
            await session.fork_from(source)
        fork_s = await new_run(fork, 1, collects=False)
        after_fork = [await timed_step(pilot) for _ in range(2)]
    size, make = static_tree(nodes)  # after the RSS: these trees come and go
    raw = raw_py_trees(make, TICKS)[0] / (TICKS * size)  # (seconds, of which in collections)
    alone = await _runner_alone(make) / (TICKS * size)
    return {"nodes": nodes, "raw_us": raw * 1e6, "alone_us": alone * 1e6, "build_s": built, "load_s": loaded,
            "first_s": first, "settled_s": settled, "first_step_ms": step_ms[0], "step_ms": statistics.median(timed) if timed else None,
            "step_cpu_ms": statistics.median(cpu_ms) if cpu_ms else None,
            "rss_mb": after, "rss_before_mb": before, "stale": stale, "restart_s": restart_s,
            "after_restart_ms": after_restart, "fork_s": fork_s, "after_fork_ms": after_fork}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000,100000")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child process measuring one size
    args = parser.parse_args()
    if args.one:
        print(json.dumps(asyncio.run(measure(args.one, args.steps))))
        return
    print(f"headless Textual {SIZE[0]}x{SIZE[1]}; each size in a fresh process; step: median of {args.steps}")
    print(f"{'nodes':>8}{'raw us/nt':>11}{'runner us/nt':>14}{'build s':>9}{'session s':>11}{'first frame s':>15}"
          f"{'open s':>8}{'then gc s':>11}{'1st step ms':>13}{'step ms':>9}{'(CPU)':>7}{'RSS MB':>8}{'KB/node':>9}"
          f"{'restart s':>11}{'steps after ms':>16}{'fork s':>8}{'steps after ms':>16}")
    for nodes in (int(n) for n in args.sizes.split(",")):
        out = subprocess.run([sys.executable, __file__, "--one", str(nodes), "--steps", str(args.steps)],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        opened = r["build_s"] + r["load_s"] + r["first_s"]
        per_node = (r["rss_mb"] - r["rss_before_mb"]) * 1000 / nodes
        print(f"{nodes:>8,}{r['raw_us']:>11.2f}{r['alone_us']:>14.2f}{r['build_s']:>9.2f}{r['load_s']:>11.2f}"
              f"{r['first_s']:>15.2f}{opened:>8.2f}{r['settled_s']:>11.2f}{_ms(r['first_step_ms']):>13}{_ms(r['step_ms']):>9}{_ms(r['step_cpu_ms']):>7}"
              f"{r['rss_mb']:>8.0f}{per_node:>9.2f}{r['restart_s']:>11.2f}{_steps(r['after_restart_ms']):>16}"
              f"{r['fork_s']:>8.2f}{_steps(r['after_fork_ms']):>16}"
              + (f"  ({r['stale']} stale steps left out)" if r["stale"] else ""))
    print("open = build + session + first frame (goal at 100,000: <= 5 s); then gc: the collection and freeze after the")
    print("first frame (studio/app.py), which a key pressed meanwhile waits for; step goal at 100,000: <= 250 ms;")
    print("steps after: the first and second step after the restart (the fork); '-': a step not timed (stale);")
    print("(CPU): the main thread's CPU from `n` to the frame that shows the tick, median of the same steps")


def _ms(ms: float | None) -> str:
    return "-" if ms is None else f"{ms:.0f}"


def _steps(ms: list[float | None]) -> str:
    return " / ".join(map(_ms, ms))


if __name__ == "__main__":
    main()
