"""`jianmu-studio replay` of a run that another process left waiting for an approval offers the same
decision as the live run (#30.1): the approval dialog opens on the recording, and answering it resumes
the run live from its last checkpoint, here, recording into the same store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import resume_tree
from textual.widgets import Input
from tui_fixtures import SIZE, settle, steady_terminal, until  # noqa: F401

from studio.app import StudioApp
from studio.screens.approval import ApprovalScreen
from studio.session import DebugSession, RunState

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    path = tmp_path / "ledger.txt"
    monkeypatch.setenv(resume_tree.EFFECTS, str(path))
    return path


def left_waiting(store: Path) -> None:
    """`jianmu-studio run` in another process, left waiting for the approval of `append_line`."""
    result = subprocess.run([sys.executable, "-m", "studio.cli", "run", resume_tree.__file__, "--db", str(store)],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 1 and "waits for approval" in result.stderr, result.stderr


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def test_approving_a_recorded_waiting_run_resumes_it_live(tmp_path, ledger):
    store = tmp_path / "runs.db"
    left_waiting(store)
    session = DebugSession.open_recorded(store)
    run_id = session.recorded_run
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, ApprovalScreen)  # offered as the live run offers it
        assert app.screen.request.tool == "append_line"
        await pilot.press("ctrl+o")
        await settle(app, pilot)
        assert (session.recorded_run, session.run_state, session.run_id) == (None, RunState.PAUSED, run_id)
        await pilot.press("c")
        await settle(app, pilot)
        await until(lambda: session.run_state == RunState.FINISHED)
    assert lines(ledger) == ["payment 42 sent"]
    assert session.store.latest(run_id).status == "SUCCESS"


async def test_denying_a_recorded_waiting_run_resumes_it_without_the_call(tmp_path, ledger):
    store = tmp_path / "runs.db"
    left_waiting(store)
    session = DebugSession.open_recorded(store)
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.screen.query_one("#approval-reason", Input).focus()
        await pilot.press(*"not today", "enter")
        await settle(app, pilot)
        await pilot.press("c")
        await settle(app, pilot)
        await until(lambda: session.run_state == RunState.FINISHED)
    assert lines(ledger) == []
    tool_messages = [m["content"] for m in session.state_snapshot()[""]["messages"] if m["role"] == "tool"]
    assert tool_messages == ["Error: tool 'append_line' was not approved: not today"]


async def test_a_recording_that_waits_for_nothing_offers_nothing(tmp_path):
    store = tmp_path / "runs.db"
    subprocess.run([sys.executable, "-m", "studio.cli", "run", str(ROOT / "sample_trees/text_pipeline.py"),
                    "--db", str(store)], capture_output=True, cwd=ROOT, timeout=120, check=True)
    session = DebugSession.open_recorded(store)
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert not isinstance(app.screen, ApprovalScreen) and session.pending_approvals() == []
        await pilot.press("a")
        await settle(app, pilot)
        assert not isinstance(app.screen, ApprovalScreen) and session.run_state == RunState.RECORDED
