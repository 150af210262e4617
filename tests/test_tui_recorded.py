"""`jianmu-studio replay FILE.db`: a recorded run opens in the past, read-only until a replay or
fork; its status line, events, timeline and counters are the recording's (issue #10 point 3)."""

from __future__ import annotations

from pathlib import Path

from tui_fixtures import SIZE, settle, steady_terminal  # noqa: F401

from studio.app import StudioApp
from studio.screens.choice import ChoiceScreen
from studio.session import RECORDING, DebugSession
from studio.widgets.events_pane import EventsPane
from studio.widgets.status_line import StatusLine
from studio.widgets.timeline import Timeline
from studio.widgets.tree_pane import TreePane

ROOT = Path(__file__).resolve().parents[1]


async def recorded(tmp_path: Path, sample: str = "react_calculator.py") -> tuple[Path, int, int]:
    """A finished run of the sample in a fresh store: (store, its checkpoints, its events)."""
    db = tmp_path / "runs.db"
    live = DebugSession.load(str(ROOT / "sample_trees" / sample), db=db)
    assert (await live.continue_()).kind == "finished"
    counts = len(live.checkpoints()), len(live.store.events(live.run_id))
    live.store.close()
    return db, *counts


def status(app) -> str:
    return str(app.main.query_one(StatusLine).render())


async def test_a_recorded_run_shows_its_last_checkpoint_everywhere(tmp_path):
    db, checkpoints, events = await recorded(tmp_path)
    session = DebugSession.open_recorded(db)
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        line = status(app)
        assert line.startswith(" RECORDING (read-only)  │ ") and " │ tick 6 │ root ✔ SUCCESS" in line
        assert "tokens 0" not in line
        timeline = app.main.query_one(Timeline)
        assert timeline.row_count == checkpoints == 7
        summaries = [row.summary for row in session.checkpoints()]
        assert summaries[0] == "input" and all("nodes" in s for s in summaries[1:])  # not the source "loop"
        pane = app.main.query_one(EventsPane)
        assert pane.line_count == events > 40  # every stored event of the recording, in order
        assert pane.lines[-1].split()[2] == "run.completed"
        tree = app.main.query_one(TreePane)
        assert "iter 2/10" in str(tree.label_of("Calculator"))  # the loop's counter, recorded: 2 rounds


async def test_a_recorded_run_is_read_only_until_a_fork(tmp_path):
    db, checkpoints, events = await recorded(tmp_path)
    session = DebugSession.open_recorded(db)
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        for key in ("n", "c", "escape", "n", "r"):
            await pilot.press(key)
            await settle(app, pilot)
            assert RECORDING in status(app), key
            assert session.viewing is not None and session.tick == 0
        assert len(session.store.list(session.recorded_run)) == checkpoints  # nothing ran into the file
        assert len(session.store.events(session.recorded_run)) == events
        run_id = session.recorded_run

        await pilot.press("f")
        await pilot.pause()
        assert isinstance(app.screen, ChoiceScreen)
        await pilot.click("#fork")
        await settle(app, pilot)
        assert session.recorded_run is None and session.branch == "fork-1" and session.run_id == run_id
        await pilot.press("c")
        await settle(app, pilot)
        assert "root ✔ SUCCESS" in status(app) and "branch fork-1" in status(app)
        main = [info for info in session.store.list(run_id) if info.branch == "main"]
        assert len(main) == checkpoints  # the recording itself is as it was
