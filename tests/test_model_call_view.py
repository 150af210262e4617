"""Model calls a user can read (request as a conversation, tools, config, response, attempts), and full values."""

from __future__ import annotations

from textual.widgets import OptionList, Static
from tui_fixtures import BOTH, REACT_CALCULATOR, SIZE, settle, steady_terminal, studio_on, until  # noqa: F401

from runtime import Agent, CalculatorTool, ModelClient, ScriptedProvider, create_react_node, human
from runtime.config import ModelResilienceConfig
from runtime.model.errors import ModelHTTPError
from studio.app import StudioApp
from studio.loader import LoadedTree
from studio.screens.model_call import ModelCallScreen, ModelCallsScreen
from studio.screens.value import ValueScreen
from studio.session import DebugSession, RunState
from studio.widgets.events_pane import EventsPane
from studio.widgets.state_pane import StatePane
from studio.widgets.tree_pane import TreePane

LLM = "Calculator/Calculator.loop/Calculator.llm"


def option_texts(app: StudioApp, selector: str) -> list[str]:
    from test_tui_app import plain

    options = app.screen.query_one(selector, OptionList)
    texts = []
    for i in range(options.option_count):
        static = Static(options.get_option_at_index(i).prompt)
        texts.append(plain(static))
    return texts


async def finished_calculator(app: StudioApp, pilot) -> None:
    await settle(app, pilot)
    await pilot.press("c")
    await settle(app, pilot)


async def llm_model_calls(app: StudioApp, pilot) -> list[str]:
    """`m` on the calculator's LLM node: the lines of the model calls screen it opens."""
    app.main.query_one(TreePane).jump(LLM)
    await pilot.press("m")
    await pilot.pause()
    assert isinstance(app.screen, ModelCallsScreen)
    return option_texts(app, "#model-calls-list")


@BOTH
async def test_the_model_call_view_shows_request_and_response(kind, tmp_path):
    async with studio_on(kind, REACT_CALCULATOR, tmp_path) as (session, app, pilot):
        await finished_calculator(app, pilot)
        await until(lambda: session.run_state == RunState.FINISHED)  # attached: held at its end for the studio
        await settle(app, pilot)
        listed = await llm_model_calls(app, pilot)
        assert [line.split("  ")[0] for line in listed] == ["Calculator.llm round 0 (tick 1)",
                                                             "Calculator.llm round 1 (tick 4)"]
        await pilot.press("down", "enter")  # the second round: after the tool answered
        await until(lambda: isinstance(app.screen, ModelCallScreen))  # attached: the I/O is asked for
        text = "\n".join(option_texts(app, "#model-call-items"))
        facts = [" ".join(line.split()) for line in text.splitlines()[:6]]  # one fact a line
        assert facts == [f"node {LLM}", "round 1 tick 4", "model scripted", facts[3], "usage prompt 171, "
                         "completion 5, total 176", "outcome stop, 176 tokens"] and facts[3].startswith("latency ")
        assert "attempt 1  scripted  ✔ answered" in text
        # the conversation, not JSON: roles, the tool call and the tool's result
        assert "user\nWhat is 25 * 4 + 10?" in text
        assert '→ calls calculator({"expression": "25 * 4 + 10"})  call_1' in text
        assert "tool  result of calculator (call_1)\n110" in text
        assert "tool offered calculator  Evaluate an arithmetic expression" in text
        assert "config timeout=60.0, stream=False" in text  # what the node set: no sampling default
        assert "response\nassistant\n25 * 4 + 10 = 110" in text
        assert '"role"' not in text
        # enter on the system message: the whole of it
        app.screen.query_one("#model-call-items", OptionList).highlighted = 2  # call, attempts, then the messages
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ValueScreen)
        assert app.screen.value["role"] == "system"
        body = str(app.screen.query_one("#value-body").render())
        assert "Available tools" in body and '"role": "system"' in body  # pretty JSON of the message


@BOTH
async def test_the_model_call_of_a_held_run_shows_its_recorded_request_and_response(kind, tmp_path):
    async with studio_on(kind, REACT_CALCULATOR, tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        session.toggle_node_breakpoint("Calculator/Calculator.loop/Calculator.tools")
        await pilot.press("c")  # held before the tools run: the first round's call is made and recorded
        await settle(app, pilot)
        listed = await llm_model_calls(app, pilot)
        assert [line.split("  ")[0] for line in listed] == ["Calculator.llm round 0 (tick 1)"]
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, ModelCallScreen))  # attached: the I/O is asked for
        text = "\n".join(option_texts(app, "#model-call-items"))
        assert "user\nWhat is 25 * 4 + 10?" in text
        assert "tool offered calculator  Evaluate an arithmetic expression" in text
        assert '→ calls calculator({"expression": "25 * 4 + 10"})' in text


async def test_a_failed_call_shows_its_retried_attempts(tmp_path):
    class Flaky(ScriptedProvider):
        async def complete(self, messages, config, on_delta=None):
            if not self.requests:
                self.requests.append(None)
                raise ModelHTTPError(429, "slow down")
            return await super().complete(messages, config, on_delta)

    client = ModelClient(Flaky(["done"]), resilience=ModelResilienceConfig(max_retries=2, backoff_initial=0))
    root = create_react_node(name="Calculator", model_client=client, tools=[CalculatorTool()])
    loaded = LoadedTree(Agent(root), tmp_path / "flaky.py", "build", {"messages": [human("hi")]})
    session = DebugSession(loaded, store=None)
    await session.continue_()
    (call,) = session.model_calls(LLM)
    call = session.model_call(call)
    assert [(a.number, a.error, a.will_retry) for a in call.attempts] == [
        (1, "ModelHTTPError: model endpoint answered HTTP 429: slow down", True), (2, None, False)]
    assert call.response["message"]["content"] == "done" and call.messages[-1]["content"] == "hi"


async def test_enter_on_a_state_value_opens_it_whole(tmp_path):
    app = StudioApp(DebugSession.load(str(REACT_CALCULATOR), db=tmp_path / "runs.db"))
    async with app.run_test(size=SIZE) as pilot:
        await finished_calculator(app, pilot)
        state = app.main.query_one(StatePane)
        state.focus()
        state.move_cursor(state._key_nodes[("", "messages")])
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ValueScreen)
        assert [m["role"] for m in app.screen.value] == ["user", "assistant", "tool", "assistant"]
        body = str(app.screen.query_one("#value-body").render())
        assert '"content": "What is 25 * 4 + 10?"' in body
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main


async def test_model_calls_are_the_frames_own_branch_and_tick(tmp_path):
    """After a fork that asks another question, the fork lists its own calls with its own I/O; main
    and a past checkpoint list only theirs."""
    session = DebugSession.load(str(REACT_CALCULATOR), db=tmp_path / "runs.db")
    await session.continue_()
    main_calls = session.model_calls(LLM)
    assert [(c.round, c.branch) for c in main_calls] == [(0, "main"), (1, "main")]
    start = session.checkpoints()[0]
    session.select_checkpoint(start.id)
    assert session.model_calls() == []  # nothing was asked at the input
    session.edit_state(None, "messages", [human("What is 7 * 6?")])
    await session.fork_from(start.id)
    await session.continue_()
    fork_calls = session.model_calls(LLM)
    assert [(c.round, c.branch) for c in fork_calls] == [(0, "fork-1"), (1, "fork-1")]
    asked = session.model_call(fork_calls[0]).messages
    assert asked[-1]["content"] == "What is 7 * 6?"  # the fork's request, not main's
    session.select_checkpoint(next(r.id for r in session.checkpoints() if r.branch == "main" and r.tick == 2))
    assert [(c.round, c.branch) for c in session.model_calls(LLM)] == [(0, "main")]  # up to tick 2 only
    assert session.model_call(session.model_calls(LLM)[0]).messages[-1]["content"] == "What is 25 * 4 + 10?"


async def test_tokens_are_those_of_the_frames_lineage(tmp_path):
    session = DebugSession.load(str(REACT_CALCULATOR), db=tmp_path / "runs.db")
    await session.continue_()
    main_total = session.tokens
    assert main_total == sum(c.usage.get("total_tokens", 0) for c in session.model_calls()) > 0
    start = session.checkpoints()[0]
    session.select_checkpoint(start.id)
    assert session.tokens == 0  # nothing was asked at the input
    session.edit_state(None, "messages", [human("What is 7 * 6?")])
    await session.fork_from(start.id)
    await session.continue_()
    fork_total = session.tokens
    assert fork_total == sum(c.usage.get("total_tokens", 0) for c in session.model_calls()) > 0
    assert fork_total == session.state_snapshot()[""]["llm.usage"]["total_tokens"]  # main's calls not added
    session.select_checkpoint(next(r.id for r in session.checkpoints() if r.branch == "main" and r.tick == 6))
    assert session.tokens == main_total


async def test_enter_on_a_model_call_event_opens_that_call_and_on_another_event_shows_it_whole(tmp_path):
    from test_snapshots import filter_events_with

    app = StudioApp(DebugSession.load(str(REACT_CALCULATOR), db=tmp_path / "runs.db"))
    async with app.run_test(size=SIZE) as pilot:
        await finished_calculator(app, pilot)
        await filter_events_with(pilot, "type:model.call.completed")
        events = app.main.query_one(EventsPane)
        events.focus()
        await pilot.press("up")  # the cursor starts on the newest row shown: the second round's call
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, ModelCallScreen))
        assert app.screen.call.round == 1 and app.screen.call.messages[-1]["role"] == "tool"
        await pilot.press("escape")
        await pilot.press("up", "enter")  # one older: the first round
        await until(lambda: isinstance(app.screen, ModelCallScreen))
        assert app.screen.call.round == 0 and app.screen.call.messages[-1]["content"] == "What is 25 * 4 + 10?"
        await pilot.press("escape")
        await filter_events_with(pilot, "type:run.completed")  # (a tool call's event opens that call: test_whatif_screens)
        events.focus()
        await pilot.press("up", "enter")
        await until(lambda: isinstance(app.screen, ValueScreen))
        assert app.screen.value["type"] == "run.completed" and app.screen.value["payload"]["status"] == "SUCCESS"
        assert '"status": "SUCCESS"' in str(app.screen.query_one("#value-body").render())


async def test_the_events_cursor_stops_following_and_end_follows_again(tmp_path):
    app = StudioApp(DebugSession.load(str(REACT_CALCULATOR), db=tmp_path / "runs.db"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("n")
        await settle(app, pilot)
        events = app.main.query_one(EventsPane)
        events.focus()
        await pilot.press("up", "up")
        chosen = events.chosen
        assert chosen is not None and events.cursor == events.line_count - 2
        await pilot.press("c")  # more events arrive: the cursor stays on its event
        await settle(app, pilot)
        assert events.chosen is chosen and events.line_count > events.cursor + 2
        await pilot.press("end")
        assert events.cursor is None and events.chosen is None
