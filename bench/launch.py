"""The studio's launch to its first frame on sample_trees/large_tree.py, beside raw py_trees building the same tree.

Each launch is a fresh process doing what `jianmu-studio open TREE --db FILE` does up to the first
frame, headless (`App.run_test()` until the tree pane has drawn the root): the CLI's imports, the
tree file's `build_100k()` (the user's tree, then `Agent()`), the store, `DebugSession`, then the
app's import and first frame, the collector paused from the tree's load on as the CLI pauses it
(studio/startup.py). Every phase is timed in the process's CPU seconds (what a loaded machine
does not swell) and wall seconds. The runtime's share is `Agent()` (the shape check and the index)
and `DebugSession()` (the runner from that index, the recorder, the session's open).

Baseline, a fresh process of its own in the same turn: raw py_trees building the same shape
(large_tree.py's `build_root` with py_trees' own Sequence, Parallel and Success), the collector
paused likewise. `--against /work/main` times another checkout's launch in the same turns; `--tmux`
adds a launch in a real terminal a turn (bench/studio_latency.py's: until the first frame has its
labels filled), what a user waits for.

    .venv/bin/python bench/launch.py [--nodes 100000] [--runs 3] [--against /work/main] [--tmux]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT_DIR = Path(__file__).resolve().parent.parent
BUILDERS = {10_000: "build", 100_000: "build_100k"}  # large_tree.py's functions


class Clock:
    """CPU and wall seconds since the last lap, by phase."""

    def __init__(self) -> None:
        self.cpu, self.wall, self.phases = time.process_time(), time.perf_counter(), {}

    def lap(self, phase: str) -> None:
        cpu, wall = time.process_time(), time.perf_counter()
        self.phases[phase] = (cpu - self.cpu, wall - self.wall)
        self.cpu, self.wall = cpu, wall


def _timed(owner: type, into: dict, name: str) -> None:
    """Time `owner.__init__` (CPU, wall) into `into[name]`."""
    inner = owner.__init__

    def timed(self, *args, **kwargs):
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            inner(self, *args, **kwargs)
        finally:
            into[name] = (time.process_time() - cpu, time.perf_counter() - wall)

    owner.__init__ = timed


def raw(nodes: int) -> dict:
    """py_trees' own classes in large_tree.py's shape, timed as the launch times the tree's build."""
    import py_trees

    from sample_trees import large_tree

    large_tree.Sequence, large_tree.Parallel = py_trees.composites.Sequence, py_trees.composites.Parallel
    large_tree.StageDone = py_trees.behaviours.Success
    gc.disable()
    clock = Clock()
    large_tree.build_root(nodes)
    clock.lap("raw py_trees build")
    return clock.phases


def launch(nodes: int) -> dict:
    """The CLI's `open` up to the first frame, each phase timed (the caller's imports come first)."""
    clock = Clock()
    import studio.cli  # noqa: F401  (what `python -m studio.cli` imports before it runs)
    from runtime import Agent, ReactiveRunner  # (these: loaded with it)
    from studio import startup
    from studio.loader import load_tree
    from studio.session import DebugSession, open_store

    clock.lap("imports")
    inits: dict[str, tuple[float, float]] = {}
    _timed(Agent, inits, "Agent()")
    _timed(ReactiveRunner, inits, "runner")
    with startup.paused():
        loaded = load_tree(f"sample_trees/large_tree.py:{BUILDERS[nodes]}")  # (the checkout's: the cwd)
        clock.lap("tree file")
        store = open_store(Path(tempfile.mkdtemp(prefix="jianmu-bench-")) / "runs.db")
        session = DebugSession(loaded, store=store)
        clock.lap("DebugSession()")
        from studio.app import StudioApp  # noqa: F401

        clock.lap("studio.app import")
        shown = asyncio.run(_first_frame(session))
        clock.phases["first frame"] = shown
    phases = dict(clock.phases)
    phases["user's build"] = tuple(a - b for a, b in zip(phases["tree file"], inits["Agent()"], strict=True))
    phases.update(inits)
    return phases


async def _first_frame(session) -> tuple[float, float]:
    """App.run_test() until the tree pane has drawn the root: (CPU, wall) seconds."""
    sys.path.insert(0, str(ROOT_DIR / "bench"))
    from studio_latency import SIZE, ProbedApp, _painted, drawn_label

    from studio.widgets.tree_pane import TreePane

    app = ProbedApp(session)
    name = session.runner.root.name

    def root_shown() -> bool:
        pane = app.main.query_one(TreePane)
        drawn = drawn_label(pane, pane.tree.rows.paths[0]) if pane.tree.line_count else None
        return drawn is not None and name in drawn and _painted(pane.tree)

    shown = app.expect(root_shown)
    cpu, wall = time.process_time(), time.perf_counter()
    async with app.run_test(size=SIZE):
        frame = await asyncio.wait_for(shown, 120)
        return time.process_time() - cpu, frame - wall


PYCACHE = Path(tempfile.gettempdir()) / "jianmu-bench-launch-pyc"
"""Where the checkouts' modules are compiled, as a user's launch after the first finds them (a checkout's
own tree is left as it is; where PYTHONDONTWRITEBYTECODE is set, every launch would compile them again)."""


def _env(checkout: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONPYCACHEPREFIX": str(PYCACHE)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _compiled(checkout: Path) -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", "runtime", "studio", "sample_trees"], cwd=checkout,
                   env=_env(checkout), capture_output=True, check=True)


def _child(checkout: Path, mode: str, nodes: int) -> dict:
    """One fresh process of `checkout` (its tree and modules), this file's code."""
    out = subprocess.run([sys.executable, __file__, "--child", mode, "--nodes", str(nodes)], cwd=checkout,
                         env=_env(checkout), capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def tmux_launch(checkout: Path, nodes: int) -> tuple[float, float]:
    """A real terminal's launch (bench/studio_latency.py's tmux): `python -m studio.cli open` of `checkout` until
    the first frame has its labels filled; (the studio process's CPU, wall) seconds."""
    sys.path.insert(0, str(ROOT_DIR / "bench"))
    from studio_latency import LAUNCH, Terminal, _first_frame

    os.environ.clear()
    os.environ.update(_env(checkout))  # (the tmux server's, which the studio's process gets)
    os.chdir(checkout)
    with Terminal() as term:
        started = term.launch(f"sample_trees/large_tree.py:{BUILDERS[nodes]}")
        seen = term.until(_first_frame, "the first frame", LAUNCH)[0]
        cpu = term.cpu(term.pid())
        term.close()
    return cpu, seen - started


LAUNCH = ("imports", "tree file", "DebugSession()", "studio.app import", "first frame")
SHARE = ("Agent()", "DebugSession()")
ROWS = [*LAUNCH[:2], "user's build", "Agent()", "DebugSession()", "runner", *LAUNCH[3:], "launch", "runtime's share",
        "raw py_trees build", "tmux launch"]


def _rows(runs: list[dict]) -> dict[str, tuple[float, float]]:
    """Median (CPU, wall) of each row over the runs."""
    for r in runs:
        r["launch"] = tuple(sum(r[phase][i] for phase in LAUNCH) for i in (0, 1))
        r["runtime's share"] = tuple(sum(r[phase][i] for phase in SHARE) for i in (0, 1))
    return {row: tuple(statistics.median(r[row][i] for r in runs) for i in (0, 1)) for row in ROWS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000, choices=sorted(BUILDERS))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--against", type=Path, help="another checkout (main's), timed in the same turns")
    parser.add_argument("--tmux", action="store_true", help="also a launch in a real terminal (tmux) a turn")
    parser.add_argument("--child", choices=["launch", "raw", "tmux"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        measure = {"launch": launch, "raw": raw, "tmux": lambda nodes: {"tmux launch": tmux_launch(Path.cwd(), nodes)}}
        print(json.dumps(measure[args.child](args.nodes)))
        return
    checkouts = [ROOT_DIR, *([args.against.resolve()] if args.against else [])]
    runs: dict[Path, list[dict]] = {checkout: [] for checkout in checkouts}
    for checkout in checkouts:
        _compiled(checkout)
    loads = []
    for _ in range(args.runs):
        loads.append(Path("/proc/loadavg").read_text().split()[0])
        raw_phases = _child(ROOT_DIR, "raw", args.nodes)
        for checkout in checkouts:
            tmux = _child(checkout, "tmux", args.nodes) if args.tmux else {"tmux launch": (0.0, 0.0)}
            runs[checkout].append({**_child(checkout, "launch", args.nodes), **raw_phases, **tmux})
    medians = {checkout: _rows(r) for checkout, r in runs.items()}
    print(f"{args.nodes:,} nodes, median of {args.runs} turns, CPU s / wall s, load {' '.join(loads)}")
    print(f"{'':22}" + "".join(f"{checkout.name:>20}" for checkout in checkouts))
    for row in ROWS if args.tmux else ROWS[:-1]:
        print(f"{row:22}" + "".join(f"{medians[c][row][0]:>10.2f}{medians[c][row][1]:>10.2f}" for c in checkouts))
    print("launch = imports + tree file + DebugSession() + studio.app import + first frame; the tree file = the "
          "user's build + Agent(); runtime's share = Agent() + DebugSession() (the runner inside it); tmux launch "
          "(--tmux): a real terminal's, labels filled (the studio process's CPU)")


if __name__ == "__main__":
    main()
