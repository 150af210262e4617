"""Studio latency: key-to-screen in the headless Textual UI and in a real terminal (tmux).

Four headless measurements, each printed beside its goal, with `await session.step()` on a
session without any UI (same tree, same run) as the baseline so the UI's share shows:

1. Step (`n`) to screen, median over `--steps` steps after one warm-up step:
   - the 1,101-node tree of `bench/runner_overhead.build_tree()` (a Parallel over 100
     Sequences of 10 Success leaves) with a 2-node pulse put first under its root: a
     `LoopUntilSuccess` over a node that adds 1 to state `pulse` and fails. The loop
     counts the failure, wakes the runner and stays RUNNING, so the root stays RUNNING
     and every step ticks all 1,103 nodes (the Parallel does not synchronise and the
     Sequences have no memory); the pulse line shows `iter N/…` and state `pulse = N`.
   - sample_trees/large_tree.py (10,000 nodes, ~11 ticks a run): restarted (`r`) when it
     finishes; before each `n` the bench waits until a tick can run at once (its async
     stage pauses are over), so no figure includes the tree's own waiting.
2. Key-to-screen during an event burst: a task publishes 10,000 `log` events on
   `session.bus` in a tight loop and sends `b` (toggle a breakpoint on the selected
   node, the root) after the first 5,000, without yielding; measured from sending `b`
   until the root's line shows (or stops showing) the breakpoint mark `◆`. The events
   pane takes the burst in slices of a few milliseconds; they are timed too, and after
   each burst the pane must end with the burst's last event.
3. Past and back: large_tree.py run to its end, then enter on the timeline row of a
   checkpoint in the middle of the run until that checkpoint is on screen (status line
   badge PAST and its tick, tree lines and state keys as the checkpoint holds them, all
   painted), and esc until the live run is again; beside the same select and back on the
   session alone, reading what the panes read. The main thread's CPU time from the key to
   that frame is printed under each (it does not swell with the machine's load as wall does).
4. Time to first screen: from entering `App.run_test()` until the tree pane shows the
   root's label (large_tree.py, react_calculator.py); loading the tree and building the
   `DebugSession` is timed separately, before.

5. In a real terminal (tmux; skipped with one line when tmux is missing): the studio on
   large_tree.py (or `--tree`, e.g. `sample_trees/large_tree.py:build_100k`: the same shape, its
   root named alike) as a fresh `python -m studio.cli` process in a detached 160x48 tmux session,
   its own store; the bench sends the studio's keys (`send-keys`) and polls `capture-pane -p`
   (a capture every few ms, the median interval printed as the resolution) until the screen
   shows the change: `n` until the status line's tick advanced (warm-up step left out, `r`
   when the run finished), enter on the middle timeline row until the PAST badge and its
   tick, esc until the live badge again, each key of the tree search until the box holds
   the text and the node pane shows the first node whose name holds it, and a launch until
   the first frame has its labels filled (status line, root line, node pane, state key);
   and the studio process's RSS after one full run (`c`) in a launch of its own. Printed
   (median, p90) beside the same action's headless figures of the run; under step, enter and esc
   the CPU time the studio's process (all its threads) ran from the key sent to the screen seen,
   which the machine's load does not swell as it does wall time.

"Updated" (the screen shows tick N): the first frame the app hands to the terminal
driver (`App._display` with a non-empty update, outside `batch_update()`) at which
  - the status line reads `tick N`,
  - every tree line on screen equals `node_label()` of the session's node view now
    (status, counter such as the pulse's `iter N/…`, breakpoint mark, ticked highlight),
  - every state key in the state pane shows its value and change mark, as the step left
    them or as they are now (an async node may write state between ticks),
  - none of those three widgets has a repaint or layout still pending (their dirty
    regions were taken by the compositor for this frame or an earlier one).
A step whose screen never matches within STALE_AFTER is printed as STALE with the lines
that disagree, and left out of the median. Before each key the bench sleeps a random
(seeded) fraction of the 20 Hz drain period, so keys do not alias with it. The headless
driver writes nothing; the bench encodes each frame to terminal sequences as a real
driver would, so that cost is included. A full-screen render after the last step checks
that the probe's verdict matches what the screen holds.

    .venv/bin/python bench/studio_latency.py [--steps 20] [--bursts 7] [--starts 5] [--views 7]
                                             [--long N] [--tmux | --headless]   (default: both)
                                             [--tree sample_trees/large_tree.py:build_100k]  (tmux only)

--long N adds a headless row: steps on the 1,103-node tree in a studio opened after N checkpoints
(the timeline that long; N=4000 takes about a minute to record), against the same "alone" figure.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import contextlib
import copy
import gc
import json
import os
import random
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from py_trees.common import Status
from pydantic import BaseModel
from textual import events
from textual._compositor import CompositorUpdate

sys.path.insert(0, str(Path(__file__).resolve().parent))  # runner_overhead, run from anywhere

from runner_overhead import build_tree  # noqa: E402

from runtime import Agent  # noqa: E402
from runtime.node import LoopUntilSuccess, Node  # noqa: E402
from studio.app import REFRESH_HZ, MainScreen, StudioApp  # noqa: E402
from studio.loader import LoadedTree, load_tree  # noqa: E402
from studio.session import DebugSession, open_store  # noqa: E402
from studio.widgets.events_pane import EventsPane  # noqa: E402
from studio.widgets.node_lines import ICON_EXPANDED  # noqa: E402
from studio.widgets.state_pane import StatePane, qualified  # noqa: E402
from studio.widgets.status_line import StatusLine  # noqa: E402
from studio.widgets.timeline import Timeline  # noqa: E402
from studio.widgets.tree_pane import TreePane, node_label, ticked_paths  # noqa: E402
from studio.widgets.values import preview, summary  # noqa: E402

ROOT_DIR = Path(__file__).resolve().parent.parent
LARGE = ROOT_DIR / "sample_trees" / "large_tree.py"
REACT = ROOT_DIR / "sample_trees" / "react_calculator.py"
SIZE = (160, 48)
BURST = 10_000
PHASE = random.Random(1101)  # keys land at a random point of the 20 Hz drain period, the same each run
STALE_AFTER = 1.0  # seconds: a step whose screen has not matched by then is reported as stale
LAUNCH = 60.0  # seconds a launch (or a full run) may take before the bench gives up: 100,000 nodes on a loaded machine


# -- the 1,101-node tree, kept RUNNING ---------------------------------------------
class PulseState(BaseModel):
    pulse: int = 0


class Beat(Node):
    """Adds 1 to `pulse` and fails, so the loop above it iterates once per tick."""

    output_ports = ("pulse",)

    def update(self) -> Status:
        self.write_port("pulse", int(self.read_port("pulse", default=0)) + 1, signal=False)
        return Status.FAILURE


def build_running_tree() -> Agent:
    root = build_tree()
    root.insert_child(LoopUntilSuccess("Pulse", Beat("Beat"), max_iterations=10**9), 0)
    return Agent(root, state_schema=PulseState)


def private_store():
    """A store of its own for each session: the user's default store (and the breakpoints saved
    beside it) is never read or written, so no earlier run of the bench changes this one."""
    return open_store(Path(tempfile.mkdtemp(prefix="jianmu-bench-")) / "runs.db")


def running_session() -> DebugSession:
    return DebugSession(LoadedTree(build_running_tree(), Path(__file__), "build_running_tree", {}),
                        store=private_store())


def large_session(tree: str = str(LARGE)) -> DebugSession:
    return DebugSession(load_tree(tree), store=private_store())


async def long_run_steps(checkpoints: int, steps: int) -> dict:
    """`ui_steps` on the 1,103-node running tree stepped `checkpoints` times before the studio opens
    on it: the timeline that long (its step latency must not grow with the run)."""
    session = running_session()
    for _ in range(checkpoints):
        await session.step()
    return await ui_steps(lambda: session, steps)


# -- the probed app ----------------------------------------------------------------
class TimedMainScreen(MainScreen):
    """MainScreen timing (start, end) of its busy 20 Hz drains, its `b` and its screen updates."""

    def __init__(self, session: DebugSession) -> None:
        super().__init__(session)
        self.drains: list[tuple[float, float]] = []
        self.toggles: list[tuple[float, float]] = []
        self.updates: list[tuple[float, float]] = []  # Screen._on_timer_update: layout, render, display

    def _on_timer_update(self) -> None:
        started = time.perf_counter()
        super()._on_timer_update()
        self.updates.append((started, time.perf_counter()))

    def drain(self) -> None:
        busy = bool(self._events or self._reports or self._dirty)
        started = time.perf_counter()
        super().drain()
        if busy:
            self.drains.append((started, time.perf_counter()))

    def action_toggle_breakpoint(self) -> None:
        started = time.perf_counter()
        super().action_toggle_breakpoint()
        self.toggles.append((started, time.perf_counter()))


class ProbedApp(StudioApp):
    """StudioApp that checks a predicate at every frame it hands to the terminal driver."""

    CSS_PATH = str(ROOT_DIR / "studio" / "studio.tcss")  # relative paths resolve from this module

    def __init__(self, session: DebugSession) -> None:
        super().__init__(session)
        self.probe = None  # (predicate, future): the future gets the frame's perf_counter()
        self.frames = 0
        self.frame_cpu = 0.0  # the main thread's CPU time (time.thread_time()) at the frame the probe matched

    def get_default_screen(self):
        return TimedMainScreen(self.session)

    def expect(self, predicate) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        self.probe = (predicate, future)
        return future

    def _display(self, screen, renderable) -> None:
        super()._display(screen, renderable)
        if renderable is None or self._batch_count:
            return
        if self.is_headless and isinstance(renderable, CompositorUpdate):
            renderable.render_segments(self.console)  # what a real driver would encode and write
        self.frames += 1
        if self.probe is not None:
            written, cpu = time.perf_counter(), time.thread_time()  # the frame is out: what the probe's own
            predicate, future = self.probe  # checks cost (every line on screen against the session) is not the step's
            try:
                shown = predicate()
            except Exception:  # the screen is not there yet (first screen)
                shown = False
            if shown and not future.done():
                self.frame_cpu = cpu
                future.set_result(written)
                self.probe = None


def _painted(*widgets) -> bool:
    return not any(w._repaint_required or w._repaint_regions or w._layout_required for w in widgets)


def drawn_label(pane: TreePane, path: str) -> str | None:
    """The label the tree last drew on the node's line (its toggle icon left out), None if it has not."""
    drawn = _drawn(pane, path)
    return drawn[0] if drawn is not None else None


def _drawn(pane: TreePane, path: str) -> tuple[str, bool] | None:
    """The label the tree last drew on the node's line and whether it was highlighted as ticked."""
    tree, row = pane.tree, pane._rows.index[path]
    kept = tree._labels.get(row)  # (key: (the pane's key of the row, ...), pieces)
    if kept is None:
        return None
    text = "".join(piece for piece, _ in kept[1])
    ticked = kept[0][0][3]  # the pane's key: (status, counter, breakpoint, ticked, pending, rebound)
    return (text[len(ICON_EXPANDED):] if tree.rows.has_kids(row) else text), ticked


def _wrong_lines(pane: TreePane, session: DebugSession) -> list[str]:
    """The lines on screen whose drawing is not the session's node (text, or the ticked highlight)."""
    tree, wrong = pane.tree, []
    ticked = ticked_paths(session.frame.returns, session.last_report, session.viewing is None)
    top = tree.scroll_offset.y
    for line in range(top, min(top + tree.size.height, tree.line_count)):
        path = tree.rows.paths[tree.lines[line]]
        expected = node_label(session.node_view(path), path in ticked)
        drawn, lit = _drawn(pane, path) or (None, False)
        if drawn != expected.plain:
            wrong.append(f"line {line} shows {drawn!r}, not {expected.plain.strip()!r}")
        elif lit != (path in ticked):
            wrong.append(f"line {line} {drawn!r} is {'' if lit else 'not '}highlighted as ticked")
    return wrong


def _tree_lines_current(pane: TreePane, session: DebugSession) -> bool:
    return not _wrong_lines(pane, session)


def _state_current(pane: StatePane, snapshot: dict, changes: dict) -> bool:
    for ns, values in snapshot.items():
        for key, value in values.items():
            node = pane._key_nodes.get((ns, key))
            if node is None:
                return False
            plain = node.label.plain
            long = isinstance(value, dict | list) and bool(value)
            if f"{key}{f'  {summary(value)}' if long else f' = {preview(value)}'}" not in plain:
                return False
            if plain.startswith("●") != (qualified(ns, key) in changes):
                return False
    return True


def _state_now(session: DebugSession) -> tuple[dict, dict]:
    last = session.last_report
    return copy.deepcopy(session.state_snapshot()), dict(last.state_changes if last is not None else {})


def shows_tick(app: ProbedApp, tick: int, at_step_end: tuple[dict, dict] | None = None) -> bool:
    """The definition of "updated" in the module docstring.

    The state pane may show the state as the step left it (`at_step_end`) or as it is now:
    an async node may write state after the tick, and a drain may draw either.
    """
    session, screen = app.session, app.main
    if session.tick != tick:
        return False
    status, pane, state = screen.query_one(StatusLine), screen.query_one(TreePane), screen.query_one(StatePane)
    if f"tick {tick} " not in status.content.plain:
        return False
    state_ok = _state_current(state, *_state_now(session)) or (
        at_step_end is not None and _state_current(state, *at_step_end))
    return state_ok and _tree_lines_current(pane, session) and _painted(status, pane.tree, state)


def shows_mark(app: ProbedApp, path: str, on: bool) -> bool:
    pane = app.main.query_one(TreePane)
    drawn = drawn_label(pane, path)
    return drawn is not None and drawn.startswith("◆") == on and _painted(pane.tree)


def _stale_reason(app: ProbedApp, tick: int) -> str:
    """Which part of the screen disagrees with the session (for a step that never showed)."""
    screen, session = app.main, app.session
    wrong = _wrong_lines(screen.query_one(TreePane), session)
    if wrong:
        return f"tick {tick}: tree {'; '.join(wrong)}"
    return f"tick {tick}: status/state pane or paint"


def screen_text(app: ProbedApp) -> str:
    """The whole screen as text, rendered from the compositor (for the final check)."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def _until(condition, timeout: float = 10.0) -> None:
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("condition not met")
        await asyncio.sleep(0.001)


def _update_of(screen: TimedMainScreen, frame: float) -> float:
    """Start of the screen update that produced the frame at `frame` (the probe runs inside it)."""
    return next((start for start, end in reversed(screen.updates) if start <= frame <= end), frame)


def _ms(seconds: list[float]) -> float:
    return statistics.median(seconds) * 1000


class GcPauses:
    """Garbage-collector pauses, as (start, seconds, generation), while installed."""

    def __init__(self) -> None:
        self.pauses: list[tuple[float, float, int]] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses.append((self._started, time.perf_counter() - self._started, info["generation"]))

    def between(self, start: float, end: float) -> float:
        return sum(seconds for at, seconds, _ in self.pauses if start <= at <= end)

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc) -> None:
        gc.callbacks.remove(self)


# -- 1. step to screen -------------------------------------------------------------
async def session_steps(make_session, steps: int) -> list[float]:
    """`await session.step()` alone, no UI and no listener; one warm-up step, restart when finished."""
    session = make_session()
    await session.step()
    times = []
    while len(times) < steps:
        if session.runner.finished:
            await session.restart()
        await session.runner.wait_until_ready()
        started = time.perf_counter()
        await session.step()
        times.append(time.perf_counter() - started)
    return times


async def ui_steps(make_session, steps: int) -> dict:
    session = make_session()
    app = ProbedApp(session)
    spans: list[tuple[float, float]] = []
    step = session.step
    at_step_end: dict[int, tuple[dict, dict]] = {}

    async def timed_step():
        started = time.perf_counter()
        try:
            return await step()
        finally:
            spans.append((started, time.perf_counter()))
            at_step_end[session.tick] = _state_now(session)  # after the timing: not part of the step

    session.step = timed_step  # the screen looks the method up at each key press
    rows: list[dict] = []
    stale: list[str] = []
    gc_pauses = GcPauses()
    with gc_pauses:
        await _ui_steps(app, session, steps, spans, rows, stale, gc_pauses, at_step_end)
    first = rows.pop(0)  # the first step re-syncs the whole tree (a new run id)
    return {"first": first, "stale": stale, **{k: [r[k] for r in rows] for k in rows[0]}}


async def _ui_steps(app: ProbedApp, session: DebugSession, steps: int, spans: list, rows: list, stale: list,
                    gc_pauses: GcPauses, at_step_end: dict) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen: TimedMainScreen = app.main
        while len(rows) < steps + 1:
            if session.runner.finished:
                await pilot.press("r")
                await _until(lambda: session.tick == 0 and not screen._dirty)
            await _until(lambda: session.runner.can_tick_now)
            await pilot.pause()
            await asyncio.sleep(PHASE.uniform(0, 1 / REFRESH_HZ))
            tick = session.tick + 1
            shown = app.expect(lambda tick=tick: shows_tick(app, tick, at_step_end.get(tick)))
            n_drains, n_spans = len(screen.drains), len(spans)
            pressed = time.perf_counter()
            await pilot.press("n")
            try:
                frame = await asyncio.wait_for(shown, STALE_AFTER)
            except TimeoutError:  # the screen never matched the session: count it, do not time it
                app.probe = None
                stale.append(_stale_reason(app, tick))
                continue
            step_start, step_end = spans[n_spans]
            drain = next((d for d in screen.drains[n_drains:] if d[0] >= step_end), (frame, frame))
            row = {"total": frame - pressed, "to_step": step_start - pressed, "step": step_end - step_start,
                   "timer": drain[0] - step_end, "drain": drain[1] - drain[0],
                   "to_update": _update_of(screen, frame) - drain[1], "render": frame - _update_of(screen, frame),
                   "tick_ms": session.last_report.duration_ms / 1000, "gc": gc_pauses.between(pressed, frame)}
            rows.append(row)
        await pilot.pause()
        text = screen_text(app)
        assert f"tick {session.tick} " in text, "the probe said updated, the screen disagrees"


# -- 2. key during an event burst ----------------------------------------------------
async def _burst(app: ProbedApp) -> dict[str, float]:
    """Publish BURST events without yielding; send `b` after the first half, as pilot.press() would."""
    publish = app.session.bus.publish
    started = time.perf_counter()
    for k in range(BURST):
        if k == BURST // 2:
            key = events.Key("b", "b")
            key.set_sender(app)
            at = time.perf_counter()
            app._driver.send_message(key)
        publish("log", {"message": f"burst event {k}"})
    return {"started": started, "at": at, "ended": time.perf_counter()}


async def burst_latency(bursts: int) -> dict:
    session = running_session()
    app = ProbedApp(session)
    rows = []
    gc_pauses = GcPauses()
    with gc_pauses:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await pilot.press("n")  # a live run, so the tree shows real statuses
            await pilot.pause()
            screen: TimedMainScreen = app.main
            pane = screen.query_one(TreePane)
            root = session.runner.path_of(session.runner.root)
            pane.jump(root)
            events_pane, slices = screen.query_one(EventsPane), []
            take = events_pane._take

            def timed_take():  # the pane looks the method up at each slice
                started = time.perf_counter()
                take()
                slices.append((started, time.perf_counter(), events_pane.backlog))

            events_pane._take = timed_take
            await pilot.pause()
            for i in range(bursts):
                await pilot.pause()
                await asyncio.sleep(PHASE.uniform(0, 1 / REFRESH_HZ))
                on = i % 2 == 0  # each `b` toggles the mark
                shown = app.expect(lambda on=on: shows_mark(app, root, on))
                n_drains, n_toggles, n_slices = len(screen.drains), len(screen.toggles), len(slices)
                sent = await asyncio.create_task(_burst(app))
                frame = await asyncio.wait_for(shown, 10)
                toggle = screen.toggles[n_toggles]
                drain = next(d for d in screen.drains[n_drains:] if d[0] >= toggle[0])  # maybe inside the key's action
                await pilot.pause(0.2)
                burst = slices[n_slices:]
                caught = next(end for _, end, left in burst if not left)
                if events_pane._rows[-1].payload != {"message": f"burst event {BURST - 1}"}:
                    raise AssertionError("the events pane does not end with the burst's last event")
                rows.append({"key": frame - sent["at"], "publish": sent["ended"] - sent["started"],
                             "rest": sent["ended"] - sent["at"], "to_key": toggle[0] - sent["ended"],
                             "toggle": toggle[1] - toggle[0], "timer": drain[0] - toggle[0],
                             "drain": drain[1] - drain[0], "gc": gc_pauses.between(sent["at"], frame),
                             "slice": max(end - start for start, end, _ in burst),
                             "slices": sum(end - start for start, end, _ in burst), "caught": caught - sent["ended"],
                             "to_update": _update_of(screen, frame) - drain[1],
                             "render": frame - _update_of(screen, frame)})
    return {k: [r[k] for r in rows] for k in rows[0]}


# -- 3. first screen ---------------------------------------------------------------
async def first_screen(path: Path, starts: int) -> dict:
    loads, firsts = [], []
    for _ in range(starts):
        started = time.perf_counter()
        session = DebugSession(load_tree(str(path)), store=private_store())
        loads.append(time.perf_counter() - started)
        app = ProbedApp(session)
        name = session.runner.root.name

        def root_shown(app=app, name=name) -> bool:
            pane = app.main.query_one(TreePane)
            root = pane.tree.rows.paths[0] if pane.tree.line_count else None
            drawn = drawn_label(pane, root) if root is not None else None
            return drawn is not None and name in drawn and _painted(pane.tree)

        shown = app.expect(root_shown)
        started = time.perf_counter()
        async with app.run_test(size=SIZE) as pilot:
            frame = await asyncio.wait_for(shown, 30)
            firsts.append(frame - started)
            await pilot.pause()
    return {"load": loads, "first": firsts}


def shows_frame(app: ProbedApp, tick: int, past: bool) -> bool:
    """A past checkpoint (or the live run) is on screen: the status line's badge and tick, every
    tree line on screen and every state key as the frame holds them, all painted."""
    session, screen = app.session, app.main
    status, pane, state = screen.query_one(StatusLine), screen.query_one(TreePane), screen.query_one(StatePane)
    line = status.content.plain
    if (session.viewing is not None) != past or ("PAST" in line) != past or f"tick {tick} " not in line:
        return False
    return (_state_current(state, session.state_snapshot(), session.marks()) and _tree_lines_current(pane, session)
            and _painted(status, pane.tree, state))


def _read_frame(session: DebugSession) -> None:
    """What the panes read of a new frame of the same nodes: every status, the state and its marks,
    the frame's events."""
    [session.node_status(path) for path in session.runner.nodes]
    session.state_snapshot(), session.marks(), session.frame_events()


async def past_and_back(views: int) -> dict:
    """large_tree.py run to its end; then, `views` times, enter on a timeline row (a checkpoint in
    the middle of the run) until it is on screen, and esc until the live run is again. Alone: the
    same select and back on the session, reading what the panes read."""
    session = large_session()
    while not session.runner.finished:
        await session.continue_()
    rows = session.checkpoints()
    middle = rows[len(rows) // 2]
    alone_past, alone_back = [], []
    for _ in range(views):
        started = time.perf_counter()
        session.select_checkpoint(middle.id)
        _read_frame(session)
        alone_past.append(time.perf_counter() - started)
        started = time.perf_counter()
        session.select_live()
        _read_frame(session)
        alone_back.append(time.perf_counter() - started)
    app = ProbedApp(session)
    past, back, past_cpu, back_cpu = [], [], [], []

    async def press(key: str, shown: asyncio.Future, walls: list[float], cpus: list[float]) -> None:
        """The key until the frame shows it: wall time, and the main thread's CPU time (what the
        studio itself spent, however loaded the machine)."""
        started, cpu = time.perf_counter(), time.thread_time()
        await pilot.press(key)
        walls.append(await asyncio.wait_for(shown, 30) - started)
        cpus.append(app.frame_cpu - cpu)

    async with app.run_test(size=SIZE) as pilot:
        await _until(lambda: shows_frame(app, session.tick, False), 30)
        timeline = app.main.query_one(Timeline)
        timeline.focus()
        for _ in range(views):
            timeline.move_cursor(row=rows.index(middle))
            await pilot.pause()
            await press("enter", app.expect(lambda: shows_frame(app, middle.tick, True)), past, past_cpu)
            await press("escape", app.expect(lambda: shows_frame(app, session.tick, False)), back, back_cpu)
    return {"past": past, "back": back, "alone_past": alone_past, "alone_back": alone_back,
            "past_cpu": past_cpu, "back_cpu": back_cpu}


SEARCH = "s9.b87"  # typed a key at a time: each prefix matches a node further down the 10,000


def search_matches(session: DebugSession) -> dict[str, str]:
    """Each prefix of SEARCH -> the first node (preorder, as the pane walks them) whose name holds it."""
    names = [(path, path.rpartition("/")[2].lower()) for path in session.runner.nodes]
    return {text: next(path for path, name in names if text in name)
            for text in (SEARCH[:n] for n in range(1, len(SEARCH) + 1))}


def shows_match(app: ProbedApp, text: str, path: str) -> bool:
    """The search box shows `text` and the tree's cursor is on `path`, its line on screen, both painted."""
    pane = app.main.query_one(TreePane)
    tree, search = pane.tree, pane.query_one("#tree-search")
    top = tree.scroll_offset.y
    return (search.value == text and pane.selected_path == path
            and top <= tree.cursor_line < top + tree.size.height and _painted(tree, search))


async def tree_search(rounds: int) -> dict:
    """large_tree.py: SEARCH typed into the tree's search box a key at a time, each key until the
    first node whose name holds the text so far is under the cursor on screen; `rounds` times,
    the box emptied and the tree collapsed in between. Alone: the same lookups over the
    session's node names (preorder, as the pane walks them)."""
    session = large_session()
    prefixes = [SEARCH[:n] for n in range(1, len(SEARCH) + 1)]
    alone, expected = [], {}
    for _ in range(rounds):
        started = time.perf_counter()
        expected = search_matches(session)
        alone.append((time.perf_counter() - started) / len(prefixes))
    app = ProbedApp(session)
    keys: list[float] = []
    firsts: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        pane = app.main.query_one(TreePane)
        search = pane.query_one("#tree-search")
        for _ in range(rounds):
            search.value = ""
            pane.tree.collapse_all()
            search.focus()
            await pilot.pause()
            for n, text in enumerate(prefixes):
                shown = app.expect(lambda text=text: shows_match(app, text, expected[text]))
                started = time.perf_counter()
                await pilot.press(text[-1])
                took = await asyncio.wait_for(shown, 30) - started
                (firsts if n == 0 else keys).append(took)
    return {"key": keys, "first": firsts, "alone": alone}


def rss_mb(pid: int | str = "self") -> float:
    """Resident memory of this process (or of `pid`) now, in MB (Linux /proc)."""
    pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


async def _rss_of_a_full_run() -> dict:
    gc.collect()
    before = rss_mb()
    session = large_session()
    app = ProbedApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("c")
        await _until(lambda: session.runner.finished, 60)
        await pilot.pause()
        gc.collect()
        return {"before": before, "after": rss_mb()}


def rss_after_run() -> dict:
    """RSS of a fresh process after large_tree.py ran to its end in the studio (the app still
    open), beside the same process before the tree was loaded (Python, Textual and the runtime
    imported)."""
    out = subprocess.run([sys.executable, __file__, "--rss-child"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- 5. in a real terminal: tmux, key sent, screen polled ----------------------------
TMUX = shutil.which("tmux")
POLL_SLEEP = 0.002  # between two captures: each capture-pane is a process of its own (~3 ms here)
STATUS = re.compile(r"^ (?P<badge>.+?)  │ (?:[^│]*│ )*?tick (?P<tick>\d+) │")  # messages ('finished: SUCCESS') may come between


class Terminal:
    """The studio in a detached tmux session of a fixed size, on a tmux server of the bench's own
    (`-L`, no config file): keys go in with `send-keys`, the screen comes back with `capture-pane -p`,
    polled in a tight loop. Every poll is timed, so the resolution of each figure is known."""

    def __init__(self) -> None:
        self.socket = f"jianmu-bench-{os.getpid()}"
        self.intervals: list[float] = []  # between successive captures of one wait: the resolution
        self.sends: list[float] = []  # how long a send-keys call takes (inside every key figure)

    def tmux(self, *args: str) -> str:
        return subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True, check=True).stdout

    def __enter__(self) -> Terminal:
        # the project's modules compiled, as any launch after a user's first finds them (where
        # PYTHONDONTWRITEBYTECODE is set, every launch would compile them again: ~80 ms)
        for folder in ("runtime", "studio", "sample_trees"):
            compileall.compile_dir(ROOT_DIR / folder, quiet=1)
        # a session that only keeps the server up, so no studio launch pays for starting it;
        # a studio that exits stays on screen (remain-on-exit), so a failure shows its last words
        self.tmux("-f", "/dev/null", "new-session", "-d", "-s", "keep", "sleep 86400")
        self.tmux("set-option", "-g", "remain-on-exit", "on")
        self.path = Path(self.tmux("display-message", "-p", "#{socket_path}").strip())
        return self

    def __exit__(self, *exc) -> None:
        subprocess.run([TMUX, "-L", self.socket, "kill-server"], capture_output=True)
        self.path.unlink(missing_ok=True)  # the server leaves its socket file behind

    def launch(self, tree: str) -> float:
        """Start the studio on `tree` (large_tree.py's shape) with a store of its own; returns the launch time."""
        db = Path(tempfile.mkdtemp(prefix="jianmu-bench-")) / "runs.db"
        command = "exec " + shlex.join([sys.executable, "-m", "studio.cli", "open", tree, "--db", str(db)])
        started = time.perf_counter()
        self.tmux("new-session", "-d", "-s", "studio", "-x", str(SIZE[0]), "-y", str(SIZE[1]), command)
        return started

    def pid(self) -> str:
        """The studio's process (the pane's: the shell execs it)."""
        return self.tmux("display-message", "-p", "-t", "studio", "#{pane_pid}").strip()

    def rss(self) -> float:
        """Resident memory of the studio's process, in MB."""
        return rss_mb(self.pid())

    def cpu(self, pid: str) -> float:
        """CPU time the studio's process has run so far, all its threads, in seconds (Linux schedstat,
        in ns): what a key cost the studio, however loaded the machine (wall time swells with it)."""
        total = 0
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
                total += int((task / "schedstat").read_text().split()[0])
        return total / 1e9

    def close(self) -> None:
        self.tmux("kill-session", "-t", "studio")

    def key(self, key: str) -> float:
        """Send one key; returns the time just before sending it."""
        started = time.perf_counter()
        self.tmux("send-keys", "-t", "studio", key)
        self.sends.append(time.perf_counter() - started)
        return started

    def until(self, shown, what: str, timeout: float = 10.0) -> tuple[float, list[str]]:
        """Capture the screen until `shown(lines)`; returns the time the showing capture returned
        (the change happened at most one poll interval before) and the lines."""
        deadline = time.perf_counter() + timeout
        last = None
        while True:
            lines = self.tmux("capture-pane", "-p", "-t", "studio").splitlines()
            seen = time.perf_counter()
            if last is not None:
                self.intervals.append(seen - last)
            last = seen
            if shown(lines):
                return seen, lines
            if seen > deadline:
                raise TimeoutError(f"tmux: {what} not on screen after {timeout:.0f} s; it shows:\n" + "\n".join(lines))
            time.sleep(POLL_SLEEP)


def _status(lines: list[str]) -> tuple[str, int]:
    """(badge, tick) of the status line, ("", -1) before it is drawn."""
    found = STATUS.match(lines[0]) if lines else None
    return (found["badge"].strip(), int(found["tick"])) if found else ("", -1)


def _first_frame(lines: list[str]) -> bool:
    """Labels filled: the status line, the root's line, the node pane on the root, the state key."""
    text = "\n".join(lines)
    return (_status(lines) == ("ready", 0) and "○ LargeTree  Sequence" in text
            and re.search(r"│path\s+LargeTree\s+│", text) is not None and "stages_done = 0" in text)


def _searched(lines: list[str], text: str, path: str) -> bool:
    """The search box (the line under the tree pane's top border) holds `text`, the node pane shows `path`."""
    box = next((lines[i + 1] for i, line in enumerate(lines[:-1]) if line.startswith("╭─ tree")), "")
    return (box.startswith(f"│ {text} ")
            and re.search(rf"│path\s+{re.escape(path)}\s+│", "\n".join(lines)) is not None)


def tmux_latency(steps: int, starts: int, views: int, tree: str = str(LARGE)) -> dict:
    """The same actions as the headless figures, on large_tree.py in a real terminal: key sent,
    screen polled. The keys are the studio's own (studio/app.py BINDINGS, docs/studio.md)."""
    expected = search_matches(large_session(tree))
    first, step, past, back, keys, firsts = [], [], [], [], [], []
    cpu: dict[str, list[float]] = {"step": [], "past": [], "back": []}  # the studio's CPU, key sent -> seen
    with Terminal() as term:
        for _ in range(starts):
            started = term.launch(tree)
            first.append(term.until(_first_frame, "the first frame", LAUNCH)[0] - started)
            term.close()
        term.launch(tree)  # one full run and nothing else, as --rss-child measures it headless
        term.until(_first_frame, "the first frame", LAUNCH)
        term.key("c")
        term.until(lambda lines: _status(lines)[0] == "finished", "the finished run", LAUNCH)
        time.sleep(0.5)  # the last drains
        rss = term.rss()
        term.close()
        term.launch(tree)
        term.until(_first_frame, "the first frame", LAUNCH)
        pid = term.pid()
        while len(step) < steps + 1:  # the first step is a warm-up, as headless
            _, lines = term.until(lambda lines: _status(lines)[0] in ("ready", "paused", "finished"), "a paused run")
            badge, tick = _status(lines)
            if badge == "finished":
                term.key("r")
                term.until(lambda lines: _status(lines) == ("ready", 0), "the restarted run")
                tick = 0
            time.sleep(0.05 + PHASE.uniform(0, 1 / REFRESH_HZ))  # the stage's async pause is over
            used = term.cpu(pid)
            sent = term.key("n")
            seen, _ = term.until(lambda lines, tick=tick: _status(lines)[1] == tick + 1, f"tick {tick + 1}")
            step.append(seen - sent)
            cpu["step"].append(term.cpu(pid) - used)
        step.pop(0)
        cpu["step"].pop(0)
        term.key("c")
        _, lines = term.until(lambda lines: _status(lines)[0] == "finished", "the finished run", LAUNCH)
        ticks = _status(lines)[1]
        for key in ("BTab", "BTab"):  # tree -> search box -> (wrapping) the timeline, its cursor on the last row
            term.key(key)
            time.sleep(0.2)
        for _ in range(ticks - 1 - ticks // 2):  # up to the middle row, as headless
            term.key("Up")
        middle = ticks // 2 + 1
        time.sleep(0.3)
        for _ in range(views):
            time.sleep(PHASE.uniform(0, 1 / REFRESH_HZ))
            used = term.cpu(pid)
            sent = term.key("Enter")
            seen, _ = term.until(lambda lines: _status(lines) == ("PAST (read-only)", middle), f"PAST at tick {middle}")
            past.append(seen - sent)
            cpu["past"].append(term.cpu(pid) - used)
            time.sleep(PHASE.uniform(0, 1 / REFRESH_HZ))
            used = term.cpu(pid)
            sent = term.key("Escape")
            seen, _ = term.until(lambda lines: _status(lines) == ("finished", ticks), "the live run again")
            back.append(seen - sent)
            cpu["back"].append(term.cpu(pid) - used)
        term.key("Tab")  # the timeline -> (wrapping) the search box
        term.until(lambda lines: lines[-1].startswith(" f10 Step "), "the search box focused (its footer)")
        for _ in range(views):
            for n in range(1, len(SEARCH) + 1):
                text = SEARCH[:n]
                time.sleep(PHASE.uniform(0, 1 / REFRESH_HZ))
                sent = term.key(text[-1])
                seen, _ = term.until(lambda lines, text=text: _searched(lines, text, expected[text]),
                                     f"{text!r} in the search box with {expected[text]} selected")
                (firsts if n == 1 else keys).append(seen - sent)
            term.key("C-u")  # the box emptied for the next round
            term.until(lambda lines: "search nodes by name" in "\n".join(lines), "the emptied search box")
    return {"first": first, "step": step, "past": past, "back": back, "key": keys, "first_key": firsts,
            "poll": term.intervals, "send": term.sends, "rss": rss, "cpu": cpu, "tree": tree}


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[8] * 1000 if len(values) > 1 else values[0] * 1000


# -- report ------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--bursts", type=int, default=7)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--views", type=int, default=7)
    parser.add_argument("--long", type=int, default=0, metavar="N",
                        help="also step the 1,103-node tree in a studio opened after N checkpoints (headless)")
    parser.add_argument("--tree", default=str(LARGE), help="the tree the real-terminal figures open (large_tree.py's shape)")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--tmux", action="store_true", help="only the real-terminal figures (tmux)")
    only.add_argument("--headless", action="store_true", help="only the headless figures")
    args = parser.parse_args()
    r = None if args.tmux else report_headless(args)
    if args.headless:
        return
    if TMUX is None:
        print("tmux mode skipped: tmux is not on PATH (install tmux for the real-terminal figures)")
        return
    report_tmux(tmux_latency(args.steps, args.starts, args.views, args.tree), r)


def report_tmux(t: dict, r: dict | None) -> None:
    """The tmux figures, each beside the same action's headless figure of this run (when it ran)."""
    version = subprocess.run([TMUX, "-V"], capture_output=True, text=True).stdout.strip()
    print(f"\nreal terminal ({version}, {SIZE[0]}x{SIZE[1]}, {Path(t['tree']).name}): key sent (send-keys) -> the screen "
          f"shows it (capture-pane, polled every {_ms(t['poll']):.1f} ms median, p90 {_p90(t['poll']):.1f}), ms")
    print(f"{'measurement':<52}{'median':>8}{'p90':>8}{'headless':>10}{'p90':>8}{'goal':>7}")
    h = {} if r is None else {
        "step": r["ui_large"]["total"], "past": r["past"]["past"], "back": r["past"]["back"],
        "key": r["search"]["key"], "first_key": r["search"]["first"],
        "first": [load + first for load, first in zip(r["first_large"]["load"], r["first_large"]["first"],
                                                      strict=True)]}
    for key, label, goal in (
            ("step", "step n -> the status line's tick advanced", "<=50"),
            ("past", "enter on a timeline row -> PAST badge and its tick", "<=100"),
            ("back", "esc -> the live run's badge again", "<=100"),
            ("key", f"a key typed in the tree search ({SEARCH!r}) -> match", "<=30"),
            ("first_key", "  the first key", "<=100"),
            ("first", "launch -> first frame, labels filled", "<=1000")):
        beside = f"{_ms(h[key]):>10.1f}{_p90(h[key]):>8.1f}" if key in h else f"{'-':>10}{'-':>8}"
        print(f"{label:<52}{_ms(t[key]):>8.1f}{_p90(t[key]):>8.1f}{beside}{goal:>7}")
        if key in t["cpu"]:
            print(f"{'  the studio process CPU, key sent -> seen':<52}{_ms(t['cpu'][key]):>8.1f}{_p90(t['cpu'][key]):>8.1f}")
    beside = f"{r['rss']['after']:>10.0f}" if r is not None else f"{'-':>10}"
    print(f"{'RSS of the studio process after a full run (c), MB':<52}{t['rss']:>8.0f}{'':>8}{beside}{'':>8}{'<=100':>7}")
    print(f"    each figure includes one send-keys call ({_ms(t['send']):.1f} ms median) and is late by at "
          "most one poll interval")
    print("    headless first frame: load_tree() + DebugSession() + run_test() to the root on screen "
          "(no interpreter start, no imports); tmux: a fresh `python -m studio.cli` process, the "
          "project's modules compiled beforehand (as after a first launch)")
    print("    match: the search box holds the text and the node pane shows the first node whose name holds it")
    from studio.cli import ESCAPE_DELAY_MS  # here: the --rss-child process does not import the CLI

    delay = int(os.environ.get("ESCDELAY", ESCAPE_DELAY_MS))  # what the studio's process is given
    print(f"    esc includes the wait for the rest of an escape sequence: ESCDELAY={delay} ms (headless has none);"
          f" esc less that wait: median {_ms(t['back']) - delay:.1f} ms")


def report_headless(args: argparse.Namespace) -> dict:
    """Run the headless measurements and print them; returns them for the tmux table."""

    async def measure() -> dict:
        return {
            "alone_1101": await session_steps(running_session, args.steps),
            "ui_1101": await ui_steps(running_session, args.steps),
            "alone_large": await session_steps(large_session, args.steps),
            "ui_large": await ui_steps(large_session, args.steps),
            **({"ui_long": await long_run_steps(args.long, args.steps)} if args.long else {}),
            "burst": await burst_latency(args.bursts),
            "past": await past_and_back(args.views),
            "first_large": await first_screen(LARGE, args.starts),
            "first_react": await first_screen(REACT, args.starts),
            "search": await tree_search(args.views),
            "rss": rss_after_run(),
        }

    r = asyncio.run(measure())
    nodes = len(running_session().runner.nodes)
    print(f"headless Textual, size {SIZE[0]}x{SIZE[1]}, ms (steps: {args.steps} after a warm-up, "
          f"bursts: {args.bursts}, starts: {args.starts}); parts are medians of their own")
    print(f"{'measurement':<62}{'median':>8}{'max':>8}{'alone':>8}{'UI share':>10}{'goal':>7}")

    def row(label: str, values: list[float], alone: list[float] | None = None, goal: str = "") -> None:
        base = f"{_ms(alone):>8.1f}{_ms(values) - _ms(alone):>10.1f}" if alone else f"{'':>18}"
        print(f"{label:<62}{_ms(values):>8.1f}{max(values) * 1000:>8.1f}{base}{goal:>7}")

    def part(label: str, values: list[float]) -> None:
        print(f"{'    ' + label:<62}{_ms(values):>8.1f}")

    for label, ui, alone, goal in (
        (f"step n -> screen, {nodes}-node tree (root RUNNING)", r["ui_1101"], r["alone_1101"], "<=50"),
        ("step n -> screen, large_tree.py (10,000 nodes)", r["ui_large"], r["alone_large"], ""),
        *([(f"step n -> screen, {nodes}-node tree after {args.long:,} checkpoints", r["ui_long"], r["alone_1101"],
            "<=50")] if args.long else []),
    ):
        row(label, ui["total"], alone, goal)
        part("first step of a run (whole tree re-synced), not in median", [ui["first"]["total"]])
        for key, text in (("to_step", "key -> session.step() starts"), ("step", "session.step() in the UI"),
                          ("tick_ms", "  of which the tick (TickReport.duration_ms)"),
                          ("timer", "step end -> 20 Hz drain starts"), ("drain", "drain (panes updated)"),
                          ("to_update", "drain end -> screen update starts"),
                          ("render", "screen update (layout, render) -> frame"),
                          ("gc", "garbage-collector pauses, key -> frame")):
            part(text, ui[key])
        for reason in ui["stale"]:
            print(f"    STALE, never matched in {STALE_AFTER:.0f} s (not in the median): {reason}")
    b = r["burst"]
    row(f"key b -> mark, key sent amid {BURST:,} events", b["key"], goal="<=100")
    for key, text in (("publish", f"publishing all {BURST:,} events (session listening)"),
                      ("rest", "key sent -> last event published"),
                      ("to_key", "burst end -> key handled (behind a drain of the burst?)"),
                      ("toggle", "action_toggle_breakpoint(), with its own drain"),
                      ("timer", "key handled -> the drain that draws the mark starts"),
                      ("drain", "the drain that draws the mark"),
                      ("slice", "longest EventsPane slice of the burst (what a key may wait behind)"),
                      ("slices", f"all EventsPane slices of the {BURST:,} events"),
                      ("caught", "burst end -> events pane holds the whole burst"),
                      ("to_update", "drain end -> screen update starts"),
                      ("render", "screen update (layout, render) -> frame"),
                      ("gc", "garbage-collector pauses, key sent -> frame")):
        part(text, b[key])
    p = r["past"]
    row("enter on a timeline row -> past checkpoint on screen, large_tree.py", p["past"], p["alone_past"], "<=100")
    part("main-thread CPU, key -> frame (time.thread_time)", p["past_cpu"])
    row("esc -> the live run on screen again, large_tree.py", p["back"], p["alone_back"], "<=100")
    part("main-thread CPU, key -> frame (time.thread_time)", p["back_cpu"])
    for label, key in (("large_tree.py", "first_large"), ("react_calculator.py", "first_react")):
        row(f"run_test() -> tree root on screen, {label}", r[key]["first"], None)
        part("load_tree() + DebugSession(), before run_test()", r[key]["load"])
    f = r["search"]
    row(f"a key typed in the tree search -> match under the cursor ({SEARCH!r})", f["key"], f["alone"], "<=30")
    row("  the first key (jumps into a collapsed stage)", f["first"], None, "<=100")
    m = r["rss"]
    print(f"{'RSS after a full run of large_tree.py in the studio, MB':<62}{m['after']:>8.0f}"
          f"{'':>8}{m['before']:>8.0f}{m['after'] - m['before']:>10.0f}{'<=100':>7}")
    print("    (alone: the process before loading the tree; UI share: what the studio and run added)")
    print("alone: the same steps as `await session.step()` on a session with no UI")
    return r


if __name__ == "__main__":
    if sys.argv[1:] == ["--rss-child"]:
        print(json.dumps(asyncio.run(_rss_of_a_full_run())))
    else:
        main()
