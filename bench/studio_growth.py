"""The studio's memory over a run's length: sample_trees/large_tree.py's shape at 100,000 nodes in many
stages (a tick a stage or two), stepped `n` in the app (headless), RSS after 20, 60, 120 and 200 steps.

    .venv/bin/python bench/studio_growth.py [--nodes 100000] [--stages 300]

Prints the RSS at each mark and the growth a step from the first mark to the last, and beside it
the growth of Python's allocated blocks (`sys.getallocatedblocks`): memory freed earlier in the
process (a runner dropping what py_trees made) is reused before the RSS grows, so the RSS alone can
hide a growth for hundreds of steps. A step here changes about nodes / stages nodes: a tick's
changes (and the events pane's rows of them) are what a run's length may keep.
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

from studio_latency import SIZE, private_store, rss_mb  # noqa: E402

from runtime import Agent  # noqa: E402
from sample_trees import large_tree  # noqa: E402
from studio.app import StudioApp  # noqa: E402
from studio.loader import LoadedTree  # noqa: E402
from studio.session import DebugSession  # noqa: E402

MARKS = (20, 60, 120, 200)  # steps


async def measure(nodes: int, stages: int) -> tuple[dict[int, float], dict[int, int]]:
    agent = Agent(large_tree.build_root(total=nodes, stages=stages), state_schema=large_tree.LargeState)
    session = DebugSession(LoadedTree(agent, Path("large_tree.py"), "build", {}), store=private_store())
    app, rss, blocks = StudioApp(session), {}, {}
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(2)
        for step in range(1, MARKS[-1] + 1):
            started = time.perf_counter()
            while not (session.runner.can_tick_now or session.runner.finished) and time.perf_counter() - started < 5:
                await asyncio.sleep(0.005)  # a stage's pause: the next tick finds it done
            if session.runner.finished:
                break
            tick = session.tick
            await pilot.press("n")
            while session.tick == tick:
                await asyncio.sleep(0.002)
            await pilot.pause()
            if step in MARKS:
                await pilot.pause(0.3)
                gc.collect()
                rss[step], blocks[step] = rss_mb(), sys.getallocatedblocks()
                print(f"{step:>5} steps {rss[step]:>8.1f} MB {blocks[step]:>10,} blocks", flush=True)
    return rss, blocks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--stages", type=int, default=300)
    args = parser.parse_args()
    rss, blocks = asyncio.run(measure(args.nodes, args.stages))
    first, last = min(rss), max(rss)
    print(f"growth {first}->{last} steps: {(rss[last] - rss[first]) * 1000 / (last - first):.1f} KB a step, "
          f"{(blocks[last] - blocks[first]) / (last - first):.0f} blocks a step")


if __name__ == "__main__":
    main()
