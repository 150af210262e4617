"""What if in the studio: on a model call and on a tool call, edit the answer and fork from just before
it; re-send a model call as edited and see the new answer beside the recorded one; compare the run with
another branch side by side (#29.4, #29.5)."""

from __future__ import annotations

import json

import pytest
from openai_server import completion, json_reply
from test_snapshots import filter_events_with
from test_tui_app import plain
from textual.widgets import DataTable, OptionList, Static, TextArea
from tui_fixtures import REACT_CALCULATOR, SIZE, settle, steady_terminal, studio_on, until  # noqa: F401

from runtime.memory.checkpoint import open_store
from runtime.memory.checkpoint.whatif_marks import FORK, RESEND, marks
from studio.app import StudioApp
from studio.screens.answer_editor import AnswerEditor
from studio.screens.compare import ComparePicker, CompareScreen
from studio.screens.model_call import ModelCallScreen, ModelCallsScreen
from studio.screens.resent import ResentScreen
from studio.screens.tool_call import ToolCallScreen
from studio.session import DebugSession, RunState
from studio.widgets.events_pane import EventsPane
from studio.widgets.tree_pane import TreePane

LLM = "Calculator/Calculator.loop/Calculator.llm"


async def finished(app: StudioApp, pilot) -> None:
    await settle(app, pilot)
    await pilot.press("c")
    await settle(app, pilot)
    await until(lambda: app.session.run_state == RunState.FINISHED)


async def first_model_call(app: StudioApp, pilot) -> ModelCallScreen:
    """`m` on the LLM node, enter on its first round."""
    app.main.query_one(TreePane).jump(LLM)
    await pilot.press("m")
    await until(lambda: isinstance(app.screen, ModelCallsScreen))
    await pilot.press("enter")
    await until(lambda: isinstance(app.screen, ModelCallScreen))
    return app.screen


async def edited(app: StudioApp, pilot, text: str) -> None:
    """In the answer editor: the text replaced, then ctrl+s."""
    await until(lambda: isinstance(app.screen, AnswerEditor))
    app.screen.query_one(TextArea).text = text
    await pilot.press("ctrl+s")


def summaries(session: DebugSession, branch: str) -> list[str]:
    return [row.summary for row in session.checkpoints() if row.branch == branch]


@pytest.mark.parametrize("kind", ["local", "remote"])
async def test_what_if_on_a_model_answer_forks_before_the_call_and_the_fork_runs_on_the_edited_answer(tmp_path, kind):
    """The same in an attached studio: the served run's debugger forks and its store records the mark."""
    async with studio_on(kind, REACT_CALCULATOR, tmp_path) as (session, app, pilot):
        await finished(app, pilot)
        screen = await first_model_call(app, pilot)  # (attached: its I/O asked of the served run's store)
        assert "w: what if" in screen.query_one(".dialog").border_subtitle
        await pilot.press("w")
        await until(lambda: isinstance(app.screen, AnswerEditor))
        assert '"name": "calculator"' in app.screen.query_one(TextArea).text  # the recorded answer, to edit
        await edited(app, pilot, "not JSON, so plain text: About 110.")
        await until(lambda: app.screen is app.main)
        await settle(app, pilot)
        assert session.branch == "whatif-1" and session.run_state == RunState.PAUSED
        assert summaries(session, "whatif-1")[0].startswith("✎ what if Calculator.llm round 0 answered "
                                                             "'not JSON, so plain text: About 110.'")
        await finished(app, pilot)
        assert session.state_snapshot()[""]["final_answer"] == "not JSON, so plain text: About 110."
        store = open_store(str(tmp_path / ("runs.db" if kind == "local" else "served.db")))
        assert [m.kind for m in marks(store, session.run_id)] == [FORK]


async def test_an_answer_that_is_no_answer_is_refused_in_the_editor(tmp_path):
    session = DebugSession.load(str(REACT_CALCULATOR), db=tmp_path / "runs.db")
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await finished(app, pilot)
        await first_model_call(app, pilot)
        await pilot.press("w")
        await edited(app, pilot, '{"role": "wizard", "content": "hi"}')
        await until(lambda: "✘" in plain(app.screen.query_one("#answer-error", Static)))
        error = plain(app.screen.query_one("#answer-error", Static))
        assert error.startswith("✘ what if: the edited answer is not a model answer: role:")
        assert isinstance(app.screen, AnswerEditor) and session.store.branches(session.run_id) == ["main"]


async def test_what_if_on_a_tool_result_forks_before_the_tool_call(tmp_path):
    session = DebugSession.load(str(REACT_CALCULATOR), db=tmp_path / "runs.db")
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await finished(app, pilot)
        await filter_events_with(pilot, "type:tool.call.completed")
        app.main.query_one(EventsPane).focus()
        await pilot.press("up", "enter")
        await until(lambda: isinstance(app.screen, ToolCallScreen))
        body = plain(app.screen.query_one("#tool-call-body", Static))
        assert "calculator" in body and "25 * 4 + 10" in body and "110" in body
        await pilot.press("w")
        await until(lambda: isinstance(app.screen, AnswerEditor))
        assert app.screen.query_one(TextArea).text == "110"
        await edited(app, pilot, "999")
        await until(lambda: app.screen is app.main)
        await settle(app, pilot)
        assert session.branch == "whatif-1"
        assert summaries(session, "whatif-1")[0].startswith("✎ what if Calculator.tools round 1 answered '999'")
        await pilot.press("c")
        await settle(app, pilot)
        await until(lambda: session.run_state == RunState.FINISHED)
        tool_message = [m for m in session.state_snapshot()[""]["messages"] if m["role"] == "tool"]
        assert [m["content"] for m in tool_message] == ["999"]  # the fork's model was told 999


async def test_re_send_as_edited_shows_the_new_answer_beside_the_recorded_one(tmp_path, server, monkeypatch):
    session = DebugSession.load(str(REACT_CALCULATOR), db=tmp_path / "runs.db")  # built scripted
    monkeypatch.setenv("JIANMU_BASE_URL", server.url)  # the endpoint a re-send of a scripted model's call goes to
    monkeypatch.setenv("JIANMU_API_KEY", "k")
    monkeypatch.setenv("JIANMU_MODEL", "served-model")
    server.script(json_reply(completion("one hundred and ten")))
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await finished(app, pilot)
        assert server.requests == []  # the run's model is the scripted one
        rows_before = [row.id for row in session.checkpoints()]
        await first_model_call(app, pilot)
        await pilot.press("r")
        await until(lambda: isinstance(app.screen, AnswerEditor))
        request = json.loads(app.screen.query_one(TextArea).text)  # the recorded request, to edit
        assert request["messages"][-1]["content"] == "What is 25 * 4 + 10?"
        assert [tool["function"]["name"] for tool in request["tools"]] == ["calculator"]
        request["parameters"]["temperature"] = 0.5
        await edited(app, pilot, json.dumps(request))
        await until(lambda: isinstance(app.screen, ResentScreen))
        recorded = plain(app.screen.query_one("#resent-recorded Static", Static))
        answered = plain(app.screen.query_one("#resent-new Static", Static))
        assert "→ calls calculator" in recorded and "one hundred and ten" in answered
        [sent] = server.requests
        assert sent.body["model"] == "served-model" and sent.body["temperature"] == 0.5 and sent.body["messages"][-1]["content"] == "What is 25 * 4 + 10?"
        assert [row.id for row in session.checkpoints()] == rows_before  # the run is not touched
        assert [m.kind for m in marks(session.store, session.run_id)] == [RESEND]
        assert "↻ Calculator.llm round 0 re-sent" in [row for row in session.checkpoints() if row.tick == 1][0].summary


async def test_compare_a_fork_with_main_side_by_side_with_the_first_divergence_selected(tmp_path):
    session = DebugSession.load(str(REACT_CALCULATOR), db=tmp_path / "runs.db")
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await finished(app, pilot)
        start = session.checkpoints()[0].id
        session.select_checkpoint(start)
        session.edit_state(None, "messages", [{"role": "user", "content": "What is 7 * 6?"}])
        await session.fork_from(start)
        await pilot.press("c")
        await settle(app, pilot)
        await until(lambda: session.run_state == RunState.FINISHED)
        await pilot.press("d")
        await until(lambda: isinstance(app.screen, ComparePicker))
        options = app.screen.query_one(OptionList)
        assert [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)] == ["main"]
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, CompareScreen))
        screen = app.screen
        first = plain(screen.query_one("#compare-first", Static))
        assert first.startswith("first divergence: tick 0: state key 'messages' differs")
        table = screen.query_one("#compare-rows", DataTable)
        assert table.cursor_row == 0 and table.row_count == 7
        detail = plain(screen.query_one("#compare-tick", Static))
        assert "state at tick 0: 1 key differs" in detail and "What is 7 * 6?" in detail
        await pilot.press("down", "down")  # tick 2: the tool's result differs in the state
        await pilot.pause()
        detail = plain(screen.query_one("#compare-tick", Static))
        assert detail.startswith("tick 2:") and "state key 'messages'" in detail
