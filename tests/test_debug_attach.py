"""`jianmu-studio attach` on an agent in its own process, and the one session interface both sessions offer.

The TUI scenarios themselves run on a local and on a remote session where they are
(`BOTH` in test_tui_app, test_tui_timeline, test_breakpoints_screen, test_model_call_view)."""

from __future__ import annotations

import asyncio

import pytest
from debug_fixtures import LLM, TOKEN, agent_process, until
from test_tui_app import status_line, tree_label
from tui_fixtures import SIZE, settle, steady_terminal  # noqa: F401
from tui_fixtures import until as condition_holds

from runtime.debug import DebugClient
from studio.app import StudioApp
from studio.cli import main
from studio.remote_session import RemoteSession
from studio.session import DebugSession, RunState


async def until_state(session, state: RunState) -> None:
    await condition_holds(lambda: session.run_state == state)


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
