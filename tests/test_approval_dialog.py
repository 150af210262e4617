"""The approval dialog's keys work wherever the focus is, Enter in the reason denies, arguments can be corrected."""

from __future__ import annotations

import json

from textual.widgets import Button, Input, TextArea
from tui_fixtures import SIZE, approval_session, settle, steady_terminal  # noqa: F401

from studio.app import StudioApp
from studio.screens.approval import ApprovalScreen


def observation(session) -> str:
    return session.state_snapshot()[""]["messages"][2]["content"]


async def suspended(app: StudioApp, pilot) -> None:
    await pilot.press("c")
    await settle(app, pilot)
    assert isinstance(app.screen, ApprovalScreen)


async def finish(app: StudioApp, pilot) -> None:
    await pilot.pause()
    await pilot.press("c")
    await settle(app, pilot)


async def test_enter_in_the_reason_box_denies_with_that_reason(tmp_path):
    app = StudioApp(approval_session(tmp_path, answer="no calculator"))
    async with app.run_test(size=SIZE) as pilot:
        await suspended(app, pilot)
        await pilot.click("#approval-reason")
        await pilot.press(*"too risky", "enter")
        await finish(app, pilot)
        assert observation(app.session) == "Error: tool 'calculator' was not approved: too risky"


async def test_ctrl_d_denies_while_the_reason_box_has_focus(tmp_path):
    app = StudioApp(approval_session(tmp_path, answer="no calculator"))
    async with app.run_test(size=SIZE) as pilot:
        await suspended(app, pilot)
        app.screen.query_one("#approval-reason", Input).focus()
        await pilot.press(*"later", "ctrl+d")
        await finish(app, pilot)
        assert observation(app.session) == "Error: tool 'calculator' was not approved: later"


async def test_ctrl_a_approves_while_a_text_box_has_focus(tmp_path):
    app = StudioApp(approval_session(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await suspended(app, pilot)
        app.screen.query_one("#approval-reason", Input).focus()
        await pilot.press("ctrl+a")
        await finish(app, pilot)
        assert observation(app.session) == "110"


async def test_approve_with_corrected_arguments(tmp_path):
    app = StudioApp(approval_session(tmp_path, answer="42"))
    async with app.run_test(size=SIZE) as pilot:
        await suspended(app, pilot)
        editor = app.screen.query_one("#approval-arguments", TextArea)
        editor.text = json.dumps({"expression": "6 * 7"})
        await pilot.click("#approve")
        await finish(app, pilot)
        assert observation(app.session) == "42"  # the corrected call ran
        started = [e for e in app.session.events if e.type == "tool.call.started"]
        assert started[0].payload["arguments"] == {"expression": "6 * 7"}


async def test_arguments_that_do_not_fit_the_schema_keep_the_dialog_open(tmp_path):
    app = StudioApp(approval_session(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await suspended(app, pilot)
        editor = app.screen.query_one("#approval-arguments", TextArea)
        editor.text = json.dumps({"expr": "6 * 7"})
        await pilot.click("#approve")
        await pilot.pause()
        assert isinstance(app.screen, ApprovalScreen)
        error = str(app.screen.query_one("#approval-error").render())
        assert error.startswith("✘ tool 'calculator': invalid argument")
        editor.text = "{not json"
        app.screen.query_one("#approve", Button).press()
        await pilot.pause()
        assert "arguments are not JSON" in str(app.screen.query_one("#approval-error").render())
        assert app.session.pending_approvals()  # nothing was decided


async def test_a_with_nothing_pending_says_so(tmp_path):
    app = StudioApp(approval_session(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("a")
        await pilot.pause()
        assert app.screen is app.main
        assert any("no tool call is waiting for approval" in str(n.message) for n in app._notifications)
