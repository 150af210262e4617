"""Paused inside a tick, the tree shows the tick so far (issue #28 point 1), with Pilot and in tmux.

`n n s s s s` on react_calculator.py stops before `Calculator.done` in tick 3: `Calculator.tools`
has already returned SUCCESS in this tick, so its line says ✔ (it said ● RUNNING, the previous
tick's end); the nodes not reached yet say ◌ (not yet ticked), but `Calculator.llm`, which the loop's
memory passed by in this tick (it finished in tick 2), says ✔ as it is. Once the tick ends every line
is the tick's end again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid

import pytest
from tui_fixtures import REACT_CALCULATOR, ROOT, SIZE, settle

from studio.app import StudioApp
from studio.session import DebugSession
from studio.widgets.tree_pane import TreePane

LOOP = "Calculator/Calculator.loop"


def _lines(app: StudioApp) -> dict[str, str]:
    pane = app.main.query_one(TreePane)
    return {path: pane.label_of(path).plain.strip() for path in pane.statuses()}


async def test_step_into_shows_what_returned_in_the_tick_and_marks_what_is_not_reached(tmp_path):
    app = StudioApp(DebugSession.load(str(REACT_CALCULATOR), db=tmp_path / "runs.db"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        for key in "nnssss":
            await pilot.press(key)
            await settle(app, pilot)
        assert app.session.paused_at.path == f"{LOOP}/Calculator.done"
        lines = _lines(app)
        assert lines[f"{LOOP}/Calculator.tools"].startswith("✔ Calculator.tools")
        assert lines[f"{LOOP}/Calculator.llm"].startswith("✔ Calculator.llm")
        for path in ("Calculator", LOOP, f"{LOOP}/Calculator.done"):
            assert lines[path].startswith("◌ "), lines[path]
        running = app.main.query_one("#running-now")
        assert running.get_option_at_index(0).prompt.plain == "nothing"
        while app.session.paused_at is not None:  # to the tick's end: its end statuses, nothing marked
            await pilot.press("s")
            await settle(app, pilot)
        lines = _lines(app)
        assert not any(line.startswith("◌") for line in lines.values())
        assert lines[f"{LOOP}/Calculator.done"].startswith("○ ") and lines["Calculator"].startswith("● ")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_paused_tick_in_a_real_terminal(tmp_path):
    session = f"jianmu-paused-{uuid.uuid4().hex[:8]}"

    def tmux(*args: str) -> str:
        return subprocess.run(["tmux", "-L", session, "-f", "/dev/null", *args], capture_output=True, text=True,
                              check=True, timeout=30).stdout

    env = {key: value for key, value in os.environ.items()
           if key not in ("JIANMU_BASE_URL", "OPENAI_BASE_URL", "COLUMNS", "LINES", "TMUX")}
    env["PYTHONPATH"] = str(ROOT)
    command = (f"{sys.executable} -c 'from studio.cli import main; main()' {REACT_CALCULATOR} "
               f"--db {tmp_path / 'runs.db'}; sleep 5")
    subprocess.run(["tmux", "-L", session, "-f", "/dev/null", "new-session", "-d", "-s", session, "-x", "160",
                    "-y", "48", command], env=env, check=True, timeout=30)
    screen = ""

    def expect(text: str) -> None:
        nonlocal screen
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            screen = tmux("capture-pane", "-p", "-t", session)
            if text in screen:
                return
            time.sleep(0.2)
        raise AssertionError(f"never saw {text!r} on the screen:\n{screen}")

    try:
        expect("○ Calculator.tools")
        for key, seen in (("n", "tick 1 "), ("n", "tick 2 "), ("s", "before Calculator "), ("s", "before Calculator/Calculator.loop "),
                          ("s", "before Calculator/Calculator.loop/Calculator.tools"),
                          ("s", "before Calculator/Calculator.loop/Calculator.done")):
            tmux("send-keys", "-t", session, key)
            expect(seen)
        expect("✔ Calculator.tools")
        assert "◌ Calculator.done" in screen and "◌ Calculator.loop" in screen and "✔ Calculator.llm" in screen
        assert "● Calculator.tools" not in screen
    finally:
        subprocess.run(["tmux", "-L", session, "kill-server"], capture_output=True, timeout=30)
