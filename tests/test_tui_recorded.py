"""`jianmu-studio replay FILE.db`: a recorded run opens in the past, read-only, nothing executed."""

from __future__ import annotations

from pathlib import Path

from tui_fixtures import SIZE, settle, steady_terminal  # noqa: F401

from studio.app import StudioApp
from studio.session import DebugSession
from studio.widgets.status_line import StatusLine
from studio.widgets.timeline import Timeline

ROOT = Path(__file__).resolve().parents[1]


async def test_a_recorded_run_opens_on_its_last_checkpoint(tmp_path):
    db = tmp_path / "runs.db"
    live = DebugSession.load(str(ROOT / "sample_trees/text_pipeline.py"), db=db)
    await live.continue_()
    live.store.close()
    session = DebugSession.open_recorded(db)
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.main.query_one(Timeline).row_count == len(session.checkpoints()) >= 4
        status = str(app.main.query_one(StatusLine).render())
        assert "PAST" in status
        await pilot.press("n")  # the past cannot be stepped
        await settle(app, pilot)
        assert session.tick == 0 and session.viewing is not None
