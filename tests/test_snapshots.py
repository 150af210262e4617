"""Snapshots of the main screen at a fixed size (update with `pytest tests/test_snapshots.py --snapshot-update`).

Event lines that carry timings or random ids (`tick.completed`, `approval.requested`) are
filtered out through the events pane's own filter, so the pictures are stable.
"""

from __future__ import annotations

from textual.widgets import Input
from tui_fixtures import SIZE, approval_session, pipeline_session, settle, steady_terminal  # noqa: F401

from studio.app import StudioApp

STABLE_EVENTS = "-type:tick.completed -type:approval."
WAITING_EVENTS = f"{STABLE_EVENTS} -type:run.suspended"  # its payload names the approval's random id too


async def filter_events(pilot) -> None:
    await filter_events_with(pilot, STABLE_EVENTS)


async def filter_events_with(pilot, text: str) -> None:
    """Type a filter into the events pane's prompt (`/`), as a user does."""
    await pilot.press("slash")
    await pilot.pause()
    pilot.app.screen.query_one("#prompt-input", Input).value = text
    await pilot.press("enter")
    await pilot.pause()


def test_snapshot_loaded(snap_compare):
    assert snap_compare(StudioApp(pipeline_session()), terminal_size=SIZE)


def test_snapshot_after_two_steps(snap_compare):
    app = StudioApp(pipeline_session())

    async def run_before(pilot) -> None:
        await pilot.press("n")
        await settle(app, pilot)
        await pilot.pause(0.3)
        await pilot.press("n")
        await settle(app, pilot)
        await filter_events(pilot)
        app.main.query_one("#tree-view").focus()
        await pilot.press("down")
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_approval_dialog(snap_compare, tmp_path):
    app = StudioApp(approval_session(tmp_path))

    async def run_before(pilot) -> None:
        await filter_events_with(pilot, WAITING_EVENTS)
        await pilot.press("c")
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
