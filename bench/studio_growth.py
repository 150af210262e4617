"""The studio's memory over a run's length: sample_trees/large_tree.py's shape at 100,000 nodes in many
stages (a tick a stage or two), stepped `n` in the app (headless), RSS after 20, 60, 120 and 200 steps.

    .venv/bin/python bench/studio_growth.py [--nodes 100000] [--stages 300] [--steps 200] [--repeat] [--alone]

Prints the RSS at each mark and the growth a step from the first mark to the last, and beside it
the growth of Python's allocated blocks (`sys.getallocatedblocks`): memory freed earlier in the
process (a runner dropping what py_trees made) is reused before the RSS grows, so the RSS alone can
hide a growth for hundreds of steps. The growth is given from the first mark and from the third (the
events pane's formatted lines, `LINES_KEPT`, fill in the first ~70 steps). A step here changes about nodes / stages nodes: a tick's
changes (and the events pane's rows of them) are what a run's length may keep. The baseline is the
same run stepped by its session alone, no app (`--alone`): the runtime's and the session's growth,
what the studio's panes add is the difference.

`--repeat` runs the stages again and again (`Rounds` over the root): a stage's first tick
leaves what the tree keeps once (py_trees composites' iterators, a composite's resume position), so
with fewer stages than steps, say `--nodes 10000 --stages 30 --repeat` (~330 nodes a stage as at the
default), what still grows a step is the run's: its per-tick records.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from py_trees.common import Status  # noqa: E402
from studio_latency import SIZE, private_store, rss_mb  # noqa: E402

from runtime import Agent  # noqa: E402
from runtime.engine.behaviour import Decorator  # noqa: E402
from sample_trees import large_tree  # noqa: E402
from studio.app import StudioApp  # noqa: E402
from studio.loader import LoadedTree  # noqa: E402
from studio.session import DebugSession  # noqa: E402

MARKS = (20, 60, 120, 200)  # steps


class Rounds(Decorator):
    """Its child again and again: a round's end asks for the next tick (a tree that runs with no
    running leaf waits for a wake, which nothing else would give)."""

    def update(self) -> Status:
        if self.decorated.status == Status.SUCCESS:
            self.wake()
            return Status.RUNNING
        return self.decorated.status


async def measure(nodes: int, stages: int, alone: bool, repeat: bool,
                  marks: tuple[int, ...]) -> tuple[dict[int, float], dict[int, int]]:
    root = large_tree.build_root(total=nodes - repeat, stages=stages)
    if repeat:
        root = Rounds("Rounds", root)
    agent = Agent(root, state_schema=large_tree.LargeState)
    session = DebugSession(LoadedTree(agent, Path("large_tree.py"), "build", {}), store=private_store())
    if alone:
        return await _steps(session, session.step, lambda delay=None: asyncio.sleep(delay or 0), marks)
    async with StudioApp(session).run_test(size=SIZE) as pilot:
        await pilot.pause(2)
        return await _steps(session, lambda: pilot.press("n"), pilot.pause, marks)


async def _steps(session: DebugSession, step_once, pause, marks: tuple[int, ...]) -> tuple[dict[int, float], dict[int, int]]:
    rss, blocks = {}, {}
    for step in range(1, marks[-1] + 1):
        started = time.perf_counter()
        while not (session.runner.can_tick_now or session.runner.finished) and time.perf_counter() - started < 5:
            await asyncio.sleep(0.005)  # a stage's pause: the next tick finds it done
        if session.runner.finished:
            break
        tick = session.tick
        await step_once()
        while session.tick == tick:
            await asyncio.sleep(0.002)
        await pause()
        if step in marks:
            await pause(0.3)
            gc.collect()
            rss[step], blocks[step] = rss_mb(), sys.getallocatedblocks()
            print(f"{step:>5} steps {rss[step]:>8.1f} MB {blocks[step]:>10,} blocks", flush=True)
    return rss, blocks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--stages", type=int, default=300)
    parser.add_argument("--alone", action="store_true", help="the baseline: the session stepped alone, no app")
    parser.add_argument("--repeat", action="store_true", help="the stages again and again: the tree's once-costs paid")
    parser.add_argument("--steps", type=int, default=MARKS[-1], help="the last mark (the marks below it kept)")
    args = parser.parse_args()
    marks = (*(mark for mark in MARKS if mark < args.steps), args.steps)
    rss, blocks = asyncio.run(measure(args.nodes, args.stages, args.alone, args.repeat, marks))
    last = max(rss)
    for first in [mark for mark in sorted(rss)[:-1] if mark != 60]:  # from the first mark, once the panes' windows filled
        print(f"growth {first}->{last} steps: {(rss[last] - rss[first]) * 1000 / (last - first):.1f} KB a step, "
              f"{(blocks[last] - blocks[first]) / (last - first):.0f} blocks a step")


if __name__ == "__main__":
    main()
