"""Breakpoints a user sets and finds again: before a node runs, step into, the list screen, kept beside the store.

The scenarios marked `BOTH` run on a local session and on a remote one (attached over the debug protocol)."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import DataTable, Input
from tui_fixtures import BOTH, REACT_CALCULATOR, SIZE, settle, steady_terminal, studio_on  # noqa: F401

from runtime.debug.breakpoints import Breakpoint
from studio.app import StudioApp
from studio.screens.breakpoints import BreakpointsScreen
from studio.session import DebugSession

LLM = "Calculator/Calculator.loop/Calculator.llm"
TOOLS = "Calculator/Calculator.loop/Calculator.tools"


def calculator(tmp_path: Path) -> DebugSession:
    return DebugSession.load(str(REACT_CALCULATOR), db=tmp_path / "runs.db")


def model_calls(session: DebugSession) -> list[str]:
    return [e.type for e in session.events if e.type.startswith("model.call")]


def rows(app: StudioApp) -> list[list[str]]:
    table = app.screen.query_one(DataTable)
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


async def type_in(pilot, selector: str, text: str) -> None:
    pilot.app.screen.query_one(selector, Input).value = text
    await pilot.press("enter")
    await pilot.pause()


# -- before / after / step into ----------------------------------------------------------
async def test_a_before_breakpoint_on_the_llm_stops_with_no_model_call_made(tmp_path):
    session = calculator(tmp_path)
    session.toggle_node_breakpoint(LLM)
    stop = await session.continue_()
    assert stop.message == f"breakpoint: before {LLM}"
    assert model_calls(session) == []  # nothing sent yet: the input can still be changed
    session.edit_state(None, "messages", [{"role": "user", "content": "What is 6 * 7?"}])
    await session.continue_()  # the model call starts with the edited messages
    assert model_calls(session) == ["model.call.started", "model.call.completed"]
    sent = session.agent.root.children[0].children[0].model_client.provider.requests[0].messages
    assert sent[-1].content == "What is 6 * 7?"


async def test_pilot_before_breakpoint_key_b_then_continue(tmp_path):
    app = StudioApp(calculator(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.main.query_one("#tree").jump(LLM)
        await pilot.press("b", "c")
        await settle(app, pilot)
        assert f"breakpoint: before {LLM}" in str(app.main.query_one("#status").render())
        assert model_calls(app.session) == []


async def test_after_breakpoint_stops_once_the_status_changed(tmp_path):
    session = calculator(tmp_path)
    session.add_node_breakpoint(TOOLS, on="after")
    stop = await session.continue_()
    assert stop.message == f"breakpoint: after {TOOLS} changes status"
    assert TOOLS in session.last_report.changed and session.paused_at is None


@BOTH
async def test_step_into_goes_node_by_node_and_n_finishes_the_tick(kind, tmp_path):
    async with studio_on(kind, REACT_CALCULATOR, tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        seen = []
        for _ in range(3):
            await pilot.press("s")
            await settle(app, pilot)
            seen.append(session.message)
        assert seen == [f"before {path} (tick 1, not run yet)"
                        for path in ("Calculator", "Calculator/Calculator.loop", LLM)]
        assert f"before {LLM} (tick 1, not run yet)" in str(app.main.query_one("#status").render())
        assert model_calls(session) == []
        await pilot.press("n")
        await settle(app, pilot)
        assert session.message.startswith("stepped: ") and session.tick == 1  # one tick, finished: step over
        assert model_calls(session) == ["model.call.started", "model.call.completed"]


# -- the list screen -------------------------------------------------------------------
@BOTH
async def test_breakpoint_screen_adds_disables_and_removes(kind, tmp_path):
    async with studio_on(kind, REACT_CALCULATOR, tmp_path) as (session, app, pilot):
        await breakpoints_added_disabled_and_removed(app, pilot)


async def breakpoints_added_disabled_and_removed(app: StudioApp, pilot) -> None:
    await settle(app, pilot)
    await pilot.press("B")
    await pilot.pause()
    assert isinstance(app.screen, BreakpointsScreen)
    assert "no breakpoints" in rows(app)[0][4]
    for spec in ("Calculator.llm", "event:tool.call.failed", "after:Calculator.tools", "rounds >= 2"):
        await pilot.press("a")
        await pilot.pause()
        await type_in(pilot, "#prompt-input", spec)
    assert [row[2:5] for row in rows(app)] == [
        ["node", "before it runs", "Calculator/…/Calculator.llm"], ["event", "after its tick", "tool.call.failed"],
        ["node", "after it changes", "Calculator/…/Calculator.tools"], ["condition", "when it turns true",
                                                                          "rounds >= 2"]]
    app.screen.query_one(DataTable).move_cursor(row=1)
    await pilot.press("space")  # disable the event breakpoint
    assert rows(app)[1][0] == "○" and not app.session.breakpoints[1].enabled
    await pilot.press("o")  # an event breakpoint has no before/after: said, not crashed
    assert "only a node breakpoint" in str(app.screen.query_one("#breakpoints-message").render())
    app.screen.query_one(DataTable).move_cursor(row=2)
    await pilot.press("o")  # after -> before
    assert rows(app)[2][3] == "before it runs"
    await pilot.press("d")
    assert [row[4] for row in rows(app)] == ["Calculator/…/Calculator.llm", "tool.call.failed", "rounds >= 2"]
    await pilot.press("a")
    await pilot.pause()
    await type_in(pilot, "#prompt-input", "after:Nowhere")
    assert "no node named 'Nowhere'" in str(app.screen.query_one("#prompt-error").render())
    await pilot.press("escape")
    await pilot.press("escape")
    await pilot.pause()
    assert app.screen is app.main
    await pilot.press("c")  # the disabled event breakpoint and the deleted one do not stop it
    await settle(app, pilot)
    assert app.session.message == f"breakpoint: before {LLM}" and app.session.tick == 1


@BOTH
async def test_a_disabled_breakpoints_node_is_not_marked_in_the_tree(kind, tmp_path):
    """◆ says the run stops there: a breakpoint disabled in the list takes its mark away, enabled puts it back,
    and b on a node whose breakpoint is disabled enables it (b does what the mark shows)."""
    async with studio_on(kind, REACT_CALCULATOR, tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        tree = app.main.query_one("#tree")
        tree.jump(LLM)
        await pilot.press("b")
        await settle(app, pilot)
        assert tree.label_of(LLM).plain.startswith("◆")
        for enabled in (False, True):
            await pilot.press("B")
            await pilot.pause()
            await pilot.press("space", "escape")
            await settle(app, pilot)
            assert app.session.breakpoints[0].enabled is enabled
            assert tree.label_of(LLM).plain.startswith("◆") is enabled, tree.label_of(LLM).plain
        await pilot.press("B")
        await pilot.pause()
        await pilot.press("space", "escape")  # disabled, so unmarked: b marks it again, the same breakpoint
        await pilot.press("b")
        await settle(app, pilot)
        assert [(bp.node, bp.enabled) for bp in app.session.breakpoints] == [(LLM, True)]
        assert tree.label_of(LLM).plain.startswith("◆")


@BOTH
async def test_hit_counts_show_in_the_list(kind, tmp_path):
    async with studio_on(kind, REACT_CALCULATOR, tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        session.toggle_node_breakpoint(TOOLS)
        for _ in range(2):
            await pilot.press("c")
            await settle(app, pilot)
        await pilot.press("B")
        await pilot.pause()
        assert rows(app)[0][1] == "2"


async def test_a_disabled_breakpoint_does_not_stop(tmp_path):
    session = calculator(tmp_path)
    session.set_breakpoint(session.add_node_breakpoint(LLM), enabled=False)
    assert (await session.continue_()).kind == "finished"
    assert session.breakpoints[0].hits == 0


# -- kept across restart, beside the store ---------------------------------------------
async def test_breakpoints_are_kept_beside_the_store_and_come_back(tmp_path):
    session = calculator(tmp_path)
    session.add_node_breakpoint(LLM)
    session.add_condition_breakpoint("rounds >= 2")
    session.set_breakpoint(session.add_event_breakpoint("tool.call.failed"), enabled=False)
    saved = session.breakpoints_file
    assert saved.parent == tmp_path / "runs.studio"  # beside runs.db
    assert not list(REACT_CALCULATOR.parent.glob("*.breakpoints.json"))  # never in the source tree
    assert json.loads(saved.read_text())[0] == {"kind": "node", "node": LLM, "when": "before", "enabled": True}
    again = calculator(tmp_path)
    assert [(bp.kind, bp.where, bp.enabled) for bp in again.breakpoints] == [
        ("node", LLM, True), ("condition", "rounds >= 2", True), ("event", "tool.call.failed", False)]
    assert again.runner.stop_before == {LLM}
    assert (await again.continue_()).message == f"breakpoint: before {LLM}"


async def test_a_damaged_breakpoints_file_is_one_warning_not_a_crash(tmp_path):
    session = calculator(tmp_path)
    session.breakpoints_file.parent.mkdir(parents=True)
    session.breakpoints_file.write_text('[{"kind": "node", "node": "X", "on": "sideways"}, {"kind": "event", '
                                        '"event_type": "log"}]')
    again = calculator(tmp_path)
    assert [bp.where for bp in again.breakpoints] == ["log"]
    assert len(again.breakpoint_warnings) == 1 and "not a breakpoint" in again.breakpoint_warnings[0]
    session.breakpoints_file.write_text("{not json")
    assert "not valid JSON" in calculator(tmp_path).breakpoint_warnings[0]


def test_breakpoint_json_round_trip():
    for bp in (Breakpoint("node", node="A/B", on="after", enabled=False), Breakpoint("event", event_type="log")):
        assert Breakpoint.from_json(bp.to_json()).to_json() == bp.to_json()
