"""Compare, what-if, re-send and a tool call's recorded I/O in an attached studio, the same as in a local one: the
served run's debugger and store do the work (`runtime.debug.served_whatifs`), the studio shows it with
the same screens."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from debug_fixtures import TOKEN, agent_process
from openai_server import completion, json_reply
from py_trees.common import Status
from test_debug_controls import sample, served
from test_debug_controls import until as protocol_until
from test_snapshots import filter_events_with
from test_tui_app import plain
from textual.widgets import DataTable, OptionList, Static, TextArea
from tui_fixtures import REACT_CALCULATOR, session_on, settle, steady_terminal, studio_on, until  # noqa: F401

from runtime.debug import DebugError
from runtime.debug.compare import Target
from runtime.debug.past import NO_STORE
from runtime.engine.events import EventType
from runtime.memory.checkpoint import InMemoryCheckpointStore
from runtime.memory.checkpoint.whatif_marks import RESEND, CallRef
from studio.edits import EditError
from studio.screens.answer_editor import AnswerEditor
from studio.screens.compare import ComparePicker, CompareScreen
from studio.screens.tool_call import ToolCallScreen
from studio.session import RunState
from studio.session.attached import RemoteSession
from studio.widgets.events_pane import EventsPane

LLM = "Calculator/Calculator.loop/Calculator.llm"


async def settled(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def to_the_end(session) -> None:
    while session.run_state != RunState.FINISHED:
        await session.continue_()
        await until(lambda: session.run_state in (RunState.FINISHED, RunState.PAUSED))


def compared(comparison) -> tuple:
    """What a comparison shows, but the cells' summaries (and the order of a tick's state keys, which is
    the order the run wrote its state in)."""
    a, b = comparison.a, comparison.b
    return ((a.branch, a.label), (b.branch, b.label), comparison.first, comparison.first_line,
            [(row.tick, row.a and row.a.status, row.b and row.b.status,
              sorted((d.line, d.detail) for d in row.differences)) for row in comparison.rows])


async def both(tmp_path, scenario) -> tuple[Any, Any]:
    """The scenario's result on a local session and on an attached one (test_same_stops.both)."""
    results = []
    for kind in ("local", "remote"):
        (tmp_path / kind).mkdir()
        async with session_on(kind, REACT_CALCULATOR, tmp_path / kind) as session:
            results.append(await scenario(session))
            if kind == "local":
                session.runner.stop()
    return results[0], results[1]


async def what_if_on_the_answer_then_compare(session) -> tuple:
    await to_the_end(session)
    run_id = session.run_id
    branch = await settled(session.what_if(CallRef(run_id, "main", "model", LLM, 0), "About 110."))
    assert session.run_state == RunState.PAUSED
    await to_the_end(session)
    choices = await settled(session.compare_targets())
    comparison = await settled(session.compare(choices[0]))
    states = [sorted((d.what, d.summary, len(d.detail)) for d in await settled(comparison.states(row)))
              for row in comparison.rows]  # (not the detail's text: a tool call's id is a process's count)
    rows = [row.summary for row in session.checkpoints() if row.branch == branch]
    return (branch, session.state_snapshot()[""]["final_answer"], [(t.run_id == run_id, t.branch, t.label) for t in choices],
            compared(comparison), states, rows[0], [(row.a and row.a.summary, row.b and row.b.summary)
                                                    for row in comparison.rows][:2])


async def test_a_what_if_and_its_comparison_with_main_are_the_same_local_and_attached(tmp_path):
    local, attached = await both(tmp_path, what_if_on_the_answer_then_compare)
    branch, final, choices, shown, states, first_row, cells = local
    assert (branch, final, choices) == ("whatif-1", "About 110.", [(True, "main", "main")])
    assert first_row.startswith("✎ what if Calculator.llm round 0 answered 'About 110.'")  # on the timeline
    assert cells[0][0] == "input" and cells[1][0].startswith("✎ what if")
    assert shown[:3] == (("whatif-1", "whatif-1"), ("main", "main"), 1)
    assert [what for what, _, _ in states[2]] == ["state key 'actions'", "state key 'done'", "state key 'final_answer'",
                                                  "state key 'messages'", "state key 'usage'"]
    assert attached == local


async def tool_call_then_what_if(session) -> tuple:
    await to_the_end(session)
    [completed] = [e for e in session.frame_events() if e.type == EventType.TOOL_CALL_COMPLETED]
    call = await settled(session.tool_call(completed))
    branch = await settled(session.what_if(call.ref, "999"))
    await to_the_end(session)
    told = [m["content"] for m in session.state_snapshot()[""]["messages"] if m["role"] == "tool"]
    return (call.ref.kind, call.ref.node, call.ref.round, call.ref.index, call.tick, call.name, call.arguments,
            call.result, call.error), branch, told


async def test_a_tool_call_s_recorded_io_and_a_what_if_on_its_result_are_the_same_local_and_attached(tmp_path):
    local, attached = await both(tmp_path, tool_call_then_what_if)
    assert local[0][5:] == ("calculator", {"expression": "25 * 4 + 10"}, "110", None)
    assert local[1:] == ("whatif-1", ["999"])
    assert attached == local


async def test_pressing_d_in_an_attached_studio_compares_a_what_if_with_main(tmp_path):
    async with studio_on("remote", REACT_CALCULATOR, tmp_path) as (session, app, pilot):
        assert app.main.check_action("compare", ()) is True
        await settle(app, pilot)
        await to_the_end(session)
        await session.what_if(CallRef(session.run_id, "main", "model", LLM, 0), "About 110.")
        await to_the_end(session)
        await settle(app, pilot)
        await pilot.press("d")
        await until(lambda: isinstance(app.screen, ComparePicker))
        options = app.screen.query_one(OptionList)
        assert [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)] == ["main"]
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, CompareScreen))
        screen = app.screen
        assert plain(screen.query_one("#compare-first", Static)) == (
            "first divergence: tick 1, node Calculator/Calculator.loop/Calculator.llm: model answer differs: "
            "round 0, at content\n")
        table = screen.query_one("#compare-rows", DataTable)
        assert (table.row_count, table.cursor_row) == (7, 1)
        detail = screen.query_one("#compare-tick", Static)
        await until(lambda: "state at tick 1: the same" in plain(detail))  # asked of the server
        await pilot.press("down")
        await until(lambda: "state at tick 2: 5 keys differ" in plain(detail))
        assert "state key 'final_answer': whatif-1 'About 110.', main ''" in plain(detail)


async def test_compare_with_a_run_the_store_no_longer_holds_is_one_line_local_and_attached(tmp_path):
    async def gone(session) -> list[str]:
        await to_the_end(session)
        refusals = []
        for target in (Target("0" * 32, "main", "run 00000000 main"), Target(session.run_id, "replay-9", "replay-9")):
            with pytest.raises(EditError) as refused:
                await settled(session.compare(target))
            refusals.append(str(refused.value).replace(session.run_id[:8], "<run>"))
        return refusals

    local, attached = await both(tmp_path, gone)
    assert local == attached == ["compare: run 00000000 has no branch 'main' in the store (deleted?)",
                                 "compare: run <run> has no branch 'replay-9' in the store (deleted?)"]


async def test_an_attached_run_that_records_nothing_says_so_in_one_line():
    async with agent_process(str(REACT_CALCULATOR)) as target:
        session = await RemoteSession.connect(target.address, TOKEN)
        try:
            await until(lambda: session.run_state == RunState.READY)
            with pytest.raises(EditError) as refused:
                await session.compare_targets()
            assert str(refused.value) == NO_STORE
            with pytest.raises(EditError) as refused:
                await session.what_if(CallRef(session.run_id or "r", "main", "model", LLM, 0), "x")
            assert "\n" not in str(refused.value)
        finally:
            await session.close()


async def test_a_re_send_as_edited_is_the_same_local_and_attached_and_leaves_the_run_untouched(tmp_path, server,
                                                                                               monkeypatch):
    for name, value in (("JIANMU_BASE_URL", server.url), ("JIANMU_API_KEY", "k"), ("JIANMU_MODEL", "served-model")):
        monkeypatch.setenv(name, value)  # the sample's model is this endpoint (the served process's too)
    calc = {"id": "c1", "type": "function", "function": {"name": "calculator", "arguments": '{"expression": "25 * 4 + 10"}'}}
    server.script(*[json_reply(completion(tool_calls=[calc])), json_reply(completion("110")),
                    json_reply(completion("one hundred and ten"))] * 2)  # each run's two calls, then the re-send

    async def re_send(session) -> tuple:
        await to_the_end(session)
        rows = [(row.id, row.branch) for row in session.checkpoints()]
        mark = await session.resend(CallRef(session.run_id, "main", "model", LLM, 0), parameters={"temperature": 0.5})
        landed = [row.summary for row in session.checkpoints() if row.tick == 1]
        return (mark.kind, mark.tick, mark.recorded, mark.answer["message"]["content"],
                mark.edited["config"]["temperature"], [(row.id, row.branch) for row in session.checkpoints()] == rows,
                landed)

    local, attached = await both(tmp_path, re_send)
    assert local[:2] == (RESEND, 1) and local[3:6] == ("one hundred and ten", 0.5, True)
    assert [summary.split(" · ")[0] for summary in local[6]] == ["↻ Calculator.llm round 0 re-sent"]
    assert attached == local
    assert [sent.body.get("temperature") for sent in server.requests][2::3] == [0.5, 0.5]


async def test_a_re_send_with_no_endpoint_to_send_it_to_is_one_line_attached(tmp_path):
    async with session_on("remote", REACT_CALCULATOR, tmp_path) as session:  # a scripted model, no $JIANMU_BASE_URL
        await to_the_end(session)
        with pytest.raises(EditError) as refused:
            await session.resend(CallRef(session.run_id, "main", "model", LLM, 0))
        assert str(refused.value).startswith("re-send: no model configured: ") and "\n" not in str(refused.value)


async def test_enter_on_a_tool_call_s_event_in_an_attached_studio_opens_it_and_w_forks_with_its_result_edited(tmp_path):
    async with studio_on("remote", REACT_CALCULATOR, tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        await to_the_end(session)
        await settle(app, pilot)
        await filter_events_with(pilot, "type:tool.call.completed")
        app.main.query_one(EventsPane).focus()
        await pilot.press("up", "enter")
        await until(lambda: isinstance(app.screen, ToolCallScreen))  # its I/O asked of the served run's store
        body = plain(app.screen.query_one("#tool-call-body", Static))
        assert "calculator" in body and "25 * 4 + 10" in body and "110" in body
        await pilot.press("w")
        await until(lambda: isinstance(app.screen, AnswerEditor))
        assert app.screen.query_one(TextArea).text == "110"
        app.screen.query_one(TextArea).text = "999"
        await pilot.press("ctrl+s")
        await until(lambda: app.screen is app.main)
        await settle(app, pilot)
        assert session.branch == "whatif-1" and session.run_state == RunState.PAUSED
        await to_the_end(session)
        assert [m["content"] for m in session.state_snapshot()[""]["messages"] if m["role"] == "tool"] == ["999"]


async def test_bad_compare_what_if_and_tool_requests_are_refused_in_one_line_and_change_nothing():
    agent, data = sample("text_pipeline")
    async with served(agent, data, store=InMemoryCheckpointStore()) as (runner, client, task):
        await client.request("step")
        await protocol_until(client, "paused")
        run_id = runner.run_id
        call = {"run_id": run_id, "branch": "main", "kind": "model", "node": "TextPipeline/Normalize", "round": 0}
        refusals = [
            ("compare", {"run_id": run_id, "branch": "main", "target": "main"}, "compare: a comparison's side is "),
            ("compare", {"run_id": run_id, "branch": "main", "target": {"run_id": "gone", "branch": "main", "label": "x"}},
             "compare: run gone has no branch 'main' in the store (deleted?)"),
            ("compare_state", {"a": "a", "b": "b", "tick": 1, "checkpoints": [1]}, "compare_state: 'tick' is a whole"),
            ("tool_io", {"run_id": run_id, "node": "n", "round": "0", "index": 0, "branches": []}, "tool_io: round and"),
            ("what_if", {"call": {**call, "kind": "prompt"}, "answer": "x"}, "what_if: the call's kind is model or tool"),
            ("what_if", {"call": {**call, "round": 1.5}, "answer": "x"}, "what_if: round and index are whole numbers"),
            ("what_if", {"call": call, "answer": "x"}, f"what if: run {run_id} holds no recorded model call of "),
            ("resend", {"call": [1]}, "resend: 'call' is {run_id, branch, kind, node, round, index}"),
        ]
        for request, fields, message in refusals:
            with pytest.raises(DebugError) as refused:
                await client.request(request, **fields)
            assert refused.value.code == "bad_request" and refused.value.message.startswith(message), request
            assert "\n" not in refused.value.message
        assert runner.checkpoints.branch == "main" and runner.tick_count == 1  # nothing forked
        assert (await client.request("compare_targets", run_id=run_id, branch="main"))["targets"] == []
        await client.request("continue")
        assert await task == Status.SUCCESS
