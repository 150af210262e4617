"""The approval dialog's keys work wherever the focus is, Enter in the reason denies, arguments can be corrected."""

from __future__ import annotations

import contextlib
import json

from textual.widgets import Button, Input, TextArea
from tui_fixtures import (  # noqa: F401
    APPROVAL_TREE,
    BOTH,
    SIZE,
    approval_session,
    settle,
    steady_terminal,
    studio_on,
    until,
)

from studio.app import StudioApp
from studio.screens.approval import ApprovalScreen
from studio.session import RunState


def observation(session) -> str:
    return session.state_snapshot()[""]["messages"][2]["content"]


async def suspended(app: StudioApp, pilot) -> None:
    await pilot.press("c")
    await settle(app, pilot)
    assert isinstance(app.screen, ApprovalScreen)


async def finish(app: StudioApp, pilot) -> None:
    await until(lambda: app.session.run_state == RunState.PAUSED)  # attached: held once the answer arrived
    await pilot.pause()
    await pilot.press("c")
    await settle(app, pilot)
    await until(lambda: app.session.run_state == RunState.FINISHED)


async def test_enter_in_the_reason_box_denies_with_that_reason(tmp_path):
    app = StudioApp(approval_session(tmp_path, answer="no calculator"))
    async with app.run_test(size=SIZE) as pilot:
        await suspended(app, pilot)
        await pilot.click("#approval-reason")
        await pilot.press(*"too risky", "enter")
        await finish(app, pilot)
        assert observation(app.session) == "Error: tool 'calculator' was not approved: too risky"


async def test_ctrl_n_denies_while_the_reason_box_has_focus(tmp_path):
    app = StudioApp(approval_session(tmp_path, answer="no calculator"))
    async with app.run_test(size=SIZE) as pilot:
        await suspended(app, pilot)
        app.screen.query_one("#approval-reason", Input).focus()
        await pilot.press(*"later", "ctrl+n")
        await finish(app, pilot)
        assert observation(app.session) == "Error: tool 'calculator' was not approved: later"


async def test_keys_meant_for_stepping_neither_edit_nor_decide_the_call(tmp_path):
    """The dialog pops up while the user steps: their next keys must not land in the arguments."""
    app = StudioApp(approval_session(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await suspended(app, pilot)
        await pilot.press("n", "n", "c", "enter", "s")
        await pilot.pause()
        assert isinstance(app.screen, ApprovalScreen)
        assert app.screen.query_one("#approval-arguments", TextArea).text == app.screen._original
        await pilot.press("ctrl+o")
        await finish(app, pilot)
        assert observation(app.session) == "110"  # the call as the model asked for it


async def test_tab_reaches_the_arguments_editor_whose_keys_edit_text(tmp_path):
    """ctrl+a and ctrl+d are the editor's line start and delete, not approve and deny."""
    app = StudioApp(approval_session(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await suspended(app, pilot)
        await pilot.press("tab")
        editor = app.screen.query_one("#approval-arguments", TextArea)
        assert app.screen.focused is editor
        editor.move_cursor((0, 1))
        await pilot.press("ctrl+a", "ctrl+d")
        await pilot.pause()
        assert isinstance(app.screen, ApprovalScreen)
        assert editor.text == app.screen._original[1:]


async def test_ctrl_o_approves_while_a_text_box_has_focus(tmp_path):
    app = StudioApp(approval_session(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await suspended(app, pilot)
        app.screen.query_one("#approval-reason", Input).focus()
        await pilot.press("ctrl+o")
        await finish(app, pilot)
        assert observation(app.session) == "110"


@contextlib.asynccontextmanager
async def correcting(kind: str, tmp_path, arguments: dict):
    """The approval dialog of a calculator call (local or attached), its arguments edited to `arguments`,
    approve pressed; yields (app, pilot)."""
    async with studio_on(kind, APPROVAL_TREE, tmp_path) as (session, app, pilot):
        await suspended(app, pilot)
        app.screen.query_one("#approval-arguments", TextArea).text = json.dumps(arguments)
        await pilot.click("#approve")
        yield app, pilot


@BOTH
async def test_approve_with_corrected_arguments(kind, tmp_path):
    async with correcting(kind, tmp_path, {"expression": "6 * 7"}) as (app, pilot):
        await finish(app, pilot)
        assert observation(app.session) == "42"  # the corrected call ran
        started = [e for e in app.session.events if e.type == "tool.call.started"]
        assert started[0].payload["arguments"] == {"expression": "6 * 7"}


@BOTH
async def test_arguments_that_do_not_fit_the_schema_keep_the_dialog_open(kind, tmp_path):
    async with correcting(kind, tmp_path, {"expr": "6 * 7"}) as (app, pilot):
        await pilot.pause()
        assert isinstance(app.screen, ApprovalScreen)
        error = str(app.screen.query_one("#approval-error").render())
        assert error.startswith("✘ tool 'calculator': invalid argument")  # named by the tool's schema
        app.screen.query_one("#approval-arguments", TextArea).text = "{not json"
        app.screen.query_one("#approve", Button).press()
        await pilot.pause()
        assert "arguments are not JSON" in str(app.screen.query_one("#approval-error").render())
        await settle(app, pilot)
        assert app.session.pending_approvals()  # nothing was decided


async def test_a_with_nothing_pending_says_so(tmp_path):
    app = StudioApp(approval_session(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("a")
        await pilot.pause()
        assert app.screen is app.main
        assert any("no tool call is waiting for approval" in str(n.message) for n in app._notifications)


@BOTH
async def test_stepping_into_an_approval_asks_for_it_at_once(kind, tmp_path):
    """The tool asks after the step that started it (its node runs on): the run is suspended and the
    dialog open without another key; a local run says so once (run.suspended, as `runner.run()`)."""
    async with studio_on(kind, APPROVAL_TREE, tmp_path) as (session, app, pilot):
        for _ in range(2):  # tick 1 asks the model, tick 2 starts the tool
            await pilot.press("n")
            await settle(app, pilot)
        await until(lambda: isinstance(app.screen, ApprovalScreen))
        assert session.run_state == RunState.SUSPENDED and session.message.startswith("suspended: waiting for approval")
        app.screen.dismiss(None)  # later
        await pilot.press("n")  # still waiting: it says so again, and no second run.suspended
        await settle(app, pilot)
        assert session.run_state == RunState.SUSPENDED
        if kind == "local":  # a served run stepped into a suspension publishes none (runner.run() would)
            assert [e.type for e in session.events].count("run.suspended") == 1
