"""The studio attached to a run elsewhere: the same TUI scenarios on a local and a remote session,
and `jianmu-studio attach` on an agent in its own process."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from debug_fixtures import LLM, TOKEN, agent_process, until
from test_tui_app import status_line, tree_label
from tui_fixtures import CALC, SIZE, TEXT_PIPELINE, settle, steady_terminal  # noqa: F401

from runtime import Agent, CalculatorTool, ModelClient, ScriptedProvider, create_react_node, human
from runtime.debug import DebugClient, DebugServer
from studio.app import StudioApp
from studio.cli import main
from studio.loader import LoadedTree, load_tree
from studio.remote_session import RemoteSession
from studio.screens.approval import ApprovalScreen
from studio.session import DebugSession, RunState
from studio.widgets.tree_pane import TreePane


def pipeline() -> LoadedTree:
    return load_tree(str(TEXT_PIPELINE))


def approval_tree(tmp_path) -> LoadedTree:
    root = create_react_node(name="Calculator", model_client=ModelClient(ScriptedProvider([CALC, "110"])),
                             tools=[CalculatorTool()], constraints={"require_confirmation": ["calculator"]})
    return LoadedTree(Agent(root), tmp_path / "approval.py", "build", {"messages": [human("What is 25 * 4 + 10?")]})


async def until_state(session, *states: RunState) -> None:
    async def settled() -> None:
        while session.run_state not in states:
            await asyncio.sleep(0.01)
    await asyncio.wait_for(settled(), 30)


@contextlib.asynccontextmanager
async def session_on(kind: str, loaded: LoadedTree):
    """A local session on the tree, or a remote one attached to the same tree served in this process."""
    if kind == "local":
        yield DebugSession(loaded)
        return
    runner = loaded.agent.make_runner()
    server = DebugServer(runner, "127.0.0.1:0", token=TOKEN, heartbeat=30, wait=30)
    await server.listen()

    async def serve() -> None:
        await server.wait_for_client()
        try:
            await server.run(input_data=loaded.input_data)
        finally:
            await server.close()

    task = asyncio.create_task(serve())
    session = await RemoteSession.connect(f"127.0.0.1:{server.port}", TOKEN)
    try:
        await until_state(session, RunState.READY)  # held at its start, as a local session begins
        yield session
    finally:
        await session.close()
        await asyncio.wait([task], timeout=30)


BOTH = pytest.mark.parametrize("kind", ["local", "remote"])


@BOTH
async def test_step_shows_the_tick_in_the_tree_and_the_status_line(kind):
    async with session_on(kind, pipeline()) as session:
        app = StudioApp(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert "○ Normalize" in tree_label(app, "TextPipeline/Normalize")
            await pilot.press("n")
            await settle(app, pilot)
            assert "● Normalize" in tree_label(app, "TextPipeline/Normalize")
            assert "tick 1" in status_line(app) and "paused" in status_line(app)


@BOTH
async def test_continue_stops_at_a_node_breakpoint_set_with_b(kind):
    async with session_on(kind, pipeline()) as session:
        app = StudioApp(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert app.main.query_one(TreePane).jump("TextPipeline/Summarise")
            await pilot.press("b")
            await settle(app, pilot)
            assert tree_label(app, "TextPipeline/Summarise").startswith("◆")
            await pilot.press("c")
            await settle(app, pilot)
            assert session.last_stop.kind == "breakpoint" and "Summarise" in status_line(app)
            assert session.run_state == RunState.PAUSED


@BOTH
async def test_continue_stops_when_a_condition_becomes_true(kind):
    async with session_on(kind, pipeline()) as session:
        app = StudioApp(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            with pytest.raises(ValueError, match="no state key 'nope'"):
                session.add_condition_breakpoint("nope > 1")
            session.add_condition_breakpoint("len(normalized_text) > 0")
            await pilot.press("c")
            await settle(app, pilot)
            assert "breakpoint: when len(normalized_text) > 0" in status_line(app)
            assert session.state_snapshot()[""]["words"] == 0 and session.run_state == RunState.PAUSED


@BOTH
async def test_an_approval_dialog_answers_the_run(kind, tmp_path):
    async with session_on(kind, approval_tree(tmp_path)) as session:
        app = StudioApp(session)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("c")
            await settle(app, pilot)
            assert session.run_state == RunState.SUSPENDED and "suspended for approval" in status_line(app)
            assert isinstance(app.screen, ApprovalScreen) and app.screen.request.tool == "calculator"
            await pilot.click("#approve")
            await pilot.pause()
            await pilot.press("c")  # a local run waits for it; a remote one went on when it got the answer
            await settle(app, pilot)
            await until_state(session, RunState.FINISHED)
            assert session.state_snapshot()[""]["final_answer"] == "110"


async def test_the_tui_attached_to_an_agent_process_pauses_edits_and_finishes():
    async with agent_process() as target:
        session = await RemoteSession.connect(target.address, TOKEN)
        app = StudioApp(session)
        async with app.run_test(size=SIZE) as pilot:
            await until_state(session, RunState.READY)
            await settle(app, pilot)
            assert "attached to ws://" in app.sub_title
            assert session.toggle_node_breakpoint(LLM, on="before")
            await settle(app, pilot)
            assert tree_label(app, LLM).startswith("◆")
            await pilot.press("c")
            await settle(app, pilot)
            assert f"breakpoint: before {LLM}" in status_line(app) and session.tick == 1
            session.edit_state(None, "messages", [{"role": "user", "content": "What is 2 + 2?"}])
            assert not session.toggle_node_breakpoint(LLM)  # sent after the edit, in order
            await pilot.press("c")
            await settle(app, pilot)
            await until_state(session, RunState.FINISHED)
            await settle(app, pilot)
            assert "finished" in status_line(app) or "the run ended" in status_line(app)
            assert session.state_snapshot()[""]["final_answer"] == "25 * 4 + 10 = 110"
        await session.close()
        result = await target.result()
    assert result["status"] == "SUCCESS" and result["first_message"] == "What is 2 + 2?"


async def test_attach_refuses_a_wrong_token_with_one_line(capsys):
    async with agent_process(wait=30) as target:
        code = await asyncio.to_thread(main, ["attach", target.address, "--token", "wrong"])
        assert code == 2
        assert capsys.readouterr().err.strip() == f"jianmu-studio: {target.address}: wrong or missing token"
        client = await DebugClient.connect(target.address, TOKEN)  # the run is still there, waiting
        await until(client, "paused")
        await client.request("continue")
        assert (await target.result())["status"] == "SUCCESS"


@pytest.mark.parametrize("implementation", [DebugSession, RemoteSession])
def test_both_sessions_offer_everything_the_tui_asks_for(implementation):
    import inspect

    from studio.session_api import SessionAPI

    for name, member in vars(SessionAPI).items():
        if name.startswith("_"):
            continue
        mine = getattr(implementation, name, None)
        assert mine is not None, f"{implementation.__name__} lacks {name}"
        if inspect.isfunction(member):
            assert list(inspect.signature(mine).parameters) == list(inspect.signature(member).parameters), name
            assert inspect.iscoroutinefunction(mine) == inspect.iscoroutinefunction(member), name
