"""`jianmu-studio attach` on an agent in its own process, and the one session interface both sessions offer.

The TUI scenarios themselves run on a local and on a remote session where they are
(`BOTH` in test_tui_app, test_tui_timeline, test_breakpoints_screen, test_model_call_view)."""

from __future__ import annotations

import asyncio
import re

import pytest
from debug_fixtures import LLM, TOKEN, agent_process, until
from py_trees.common import Status
from test_model_call_view import option_texts
from test_tui_app import status_line, tree_label
from tui_fixtures import (  # noqa: F401
    BOTH,
    CALC,
    REACT_CALCULATOR,
    SIZE,
    TEXT_PIPELINE,
    session_on,
    settle,
    steady_terminal,
    studio_on,
)
from tui_fixtures import until as condition_holds

from runtime import Agent, CalculatorTool, ModelClient, ReActState, ScriptedProvider, create_react_node, human
from runtime.debug import DebugClient, DebugServer
from runtime.engine.events import EventType
from runtime.memory.checkpoint import Source, open_store, run_liveness
from studio.app import StudioApp
from studio.cli import main
from studio.screens.model_call import ModelCallScreen, ModelCallsScreen
from studio.session import DebugSession, RunState
from studio.session.attached import RemoteSession
from studio.widgets.tree_pane import TreePane


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
            assert "finished: SUCCESS (held for this studio: its process gets the result when you quit)" in \
                status_line(app)
            assert session.state_snapshot()[""]["final_answer"] == "25 * 4 + 10 = 110"
            assert target.process.returncode is None  # held at its end while the studio is attached
        await session.close()
        result = await target.result()  # detached: the run returned to its caller
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

    from studio.session.api import SessionAPI

    for name, member in vars(SessionAPI).items():
        if name.startswith("_"):
            continue
        mine = getattr(implementation, name, None)
        assert mine is not None, f"{implementation.__name__} lacks {name}"
        if inspect.isfunction(member):
            assert list(inspect.signature(mine).parameters) == list(inspect.signature(member).parameters), name
            assert inspect.iscoroutinefunction(mine) == inspect.iscoroutinefunction(member), name


class HeldSecondRound(ScriptedProvider):
    """The scripted calculator whose second model call waits for `go`: a run busy when a studio attaches."""

    def __init__(self) -> None:
        super().__init__([CALC, "25 * 4 + 10 = 110"])
        self.waiting, self.go = asyncio.Event(), asyncio.Event()

    async def complete(self, messages, config, on_delta=None):
        if self.requests:
            self.waiting.set()
            await self.go.wait()
        return await super().complete(messages, config, on_delta)


async def test_a_studio_attaching_mid_run_sees_the_events_and_model_calls_from_before(tmp_path):
    provider = HeldSecondRound()
    root = create_react_node(name="Calculator", model_client=ModelClient(provider), tools=[CalculatorTool()])
    runner = Agent(root, state_schema=ReActState).make_runner(checkpointer=open_store(tmp_path / "runs.db"))
    server = DebugServer(runner, "127.0.0.1:0", token=TOKEN)
    await server.listen()
    run = asyncio.create_task(server.run(input_data={"messages": [human("What is 25 * 4 + 10?")]}))
    try:
        await asyncio.wait_for(provider.waiting.wait(), 30)  # nobody attached: the first round is done
        session = await RemoteSession.connect(f"127.0.0.1:{server.port}", TOKEN)
        app = StudioApp(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert "tool.call.completed" in {event.type for event in session.events}
            app.main.query_one(TreePane).jump(LLM)
            await pilot.press("m")
            await pilot.pause()
            assert isinstance(app.screen, ModelCallsScreen)  # the round made before this studio attached, and
            assert [line.split("  ")[0] for line in option_texts(app, "#model-calls-list")] == [  # the one in flight
                "Calculator.llm round 0 (tick 1)", "Calculator.llm round 1 (tick 4)"]
            await pilot.press("enter")
            await condition_holds(lambda: isinstance(app.screen, ModelCallScreen))
            assert "user\nWhat is 25 * 4 + 10?" in "\n".join(option_texts(app, "#model-call-items"))
            provider.go.set()
            await until_state(session, RunState.FINISHED)
            assert [call.round for call in session.model_calls(LLM)] == [0, 1]
        await session.close()
        assert await asyncio.wait_for(run, 30) == Status.SUCCESS
    finally:
        provider.go.set()
        await asyncio.wait([run], timeout=30)
        await server.close()


async def test_a_remote_timeline_shows_a_run_whose_end_was_recorded_as_error(tmp_path):
    """A run whose save failed has its end recorded with status ERROR (the CLI does so): attached, that
    checkpoint is a row like any other, and viewing it shows a failed root, as a local session does."""
    root = create_react_node(name="Calculator", model_client=ModelClient(ScriptedProvider([CALC, "110"])),
                             tools=[CalculatorTool()])
    runner = Agent(root, state_schema=ReActState).make_runner(checkpointer=open_store(tmp_path / "runs.db"))
    server = DebugServer(runner, "127.0.0.1:0", token=TOKEN, wait=30, hold_end=0)
    await server.listen()

    async def run():
        await server.wait_for_client()
        return await server.run(input_data={"messages": [human("What is 25 * 4 + 10?")]})

    task = asyncio.create_task(run())
    session = await RemoteSession.connect(f"127.0.0.1:{server.port}", TOKEN)
    try:
        await until_state(session, RunState.READY)
        await session.step()
        runner.checkpoints.save(Source.UPDATE, status="ERROR")  # as `jianmu-studio run` records a stopped run
        runner.event_bus.publish(EventType.RUN_FAILED, {"status": "ERROR", "error": "the store is full"})
        await condition_holds(lambda: session.checkpoints() and session.checkpoints()[-1].status == "ERROR")
        error_row = session.checkpoints()[-1]
        session.select_checkpoint(error_row.id)
        await session.drained()
        assert session.viewing.id == error_row.id and session.frame.tick == error_row.tick
        assert session.frame.root_status == Status.FAILURE  # CheckpointInfo.root_status: ERROR is a FAILURE
        session.select_live()
    finally:
        await session.close()
        await asyncio.wait_for(task, 30)
        await server.close()


def shown(marks) -> dict:
    return {key: (mark.old, mark.new, mark.between) for key, mark in marks.items()}


async def test_the_changed_marks_attached_are_the_local_sessions_for_the_same_frames(tmp_path):
    """The same run, locally and attached: at its start, after a step whose model answer lands between
    ticks, at its end, and at every checkpoint of its timeline, the marks are the same (and the state's
    keys, in the same order)."""
    seen = {}
    for kind in ("local", "remote"):
        (tmp_path / kind).mkdir()
        async with session_on(kind, REACT_CALCULATOR, tmp_path / kind) as session:
            frames = [shown(session.marks())]  # tick 0: nothing marked (the input is no change)
            await session.step()
            await condition_holds(lambda: session.state_snapshot()[""]["rounds"] == 1)  # the answer landed
            await condition_holds(lambda: "llm.usage" in session.marks())
            frames.append(shown(session.marks()))
            while (await session.continue_()).kind != "finished":
                pass
            frames.append(shown(session.marks()))
            frames.append(list(session.state_snapshot()[""]))  # one name per value (llm.usage, not usage too)
            for row in session.checkpoints():
                session.select_checkpoint(row.id)
                await condition_holds(lambda row=row: session.viewing is not None and session.viewing.id == row.id)
                frames.append((row.tick, shown(session.marks())))
            seen[kind] = frames
    assert seen["local"][0] == {}
    assert seen["local"][1]["messages"][2] == 1  # written by the answer, after tick 1's checkpoint
    assert len(seen["local"]) > 7 and any(marks for _, marks in seen["local"][4:])
    assert seen["remote"] == seen["local"]


@BOTH
async def test_the_tree_shows_the_loops_counter_and_the_ticked_nodes_of_the_last_tick(kind, tmp_path):
    """A loop's counter moves while its status stays RUNNING: its line is re-read because the tick visited
    it (attached, the tick's report says which nodes it visited, as a local runner's does)."""
    async with studio_on(kind, REACT_CALCULATOR, tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        assert "iter 0/10" in tree_label(app, "Calculator")
        await pilot.press("c")
        await condition_holds(lambda: session.run_state == RunState.FINISHED)
        await settle(app, pilot)
        assert session.node_view("Calculator").counter == "iter 2/10"
        assert "iter 2/10" in tree_label(app, "Calculator")  # was "iter 0/10" attached: never re-read
        ticked = app.main.query_one(TreePane)._ticked
        assert "Calculator/Calculator.loop/Calculator.done" in ticked and ticked == set(session.last_report.ticked)


async def test_once_the_served_run_is_gone_the_studio_says_where_its_recording_is(tmp_path):
    """Following a recording is for a store another process writes (`jianmu-studio replay`): an attached
    studio is live and follows nothing, and when the run is gone it says how to open what it recorded."""
    async with session_on("remote", TEXT_PIPELINE, tmp_path) as session:
        await session.continue_()
        await until_state(session, RunState.FINISHED)
        assert not hasattr(session, "follow")
    assert session.message.endswith(f"; its recording: jianmu-studio replay {tmp_path / 'served.db'}")
    recorded = DebugSession.open_recorded(tmp_path / "served.db", tree=str(TEXT_PIPELINE))  # the whole run
    assert recorded.run_id is None and recorded.recorded_run == session.run_id
    assert [row.tick for row in recorded.checkpoints()] == [row.tick for row in session.checkpoints()]


WAITING_TREE = """\
from py_trees.common import Status
from pydantic import BaseModel

from runtime import Agent
from runtime.node import Node, Sequence


class S(BaseModel):
    go: bool = False


class Gate(Node):
    def update(self):
        return Status.SUCCESS if self.read_state("go") else Status.RUNNING


def build():
    return Agent(Sequence("Root", memory=True, children=[Gate("Gate")]), state_schema=S)
"""


@BOTH
async def test_p_pauses_a_run_that_waits_for_a_wake_at_once(kind, tmp_path):
    """The gate waits for `go` (nothing wakes the run): `p` holds it now, and an edit made there lets it
    finish."""
    tree = tmp_path / "waiting.py"
    tree.write_text(WAITING_TREE)
    async with studio_on(kind, tree, tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        await pilot.press("c")
        await condition_holds(lambda: session.tick == 1 and session.node_status("Root/Gate") == Status.RUNNING)
        await pilot.pause()  # not settle(): the continue goes on until the pause
        assert session.run_state in (RunState.RUNNING, RunState.WAITING)
        await pilot.press("p")
        await condition_holds(lambda: session.run_state == RunState.PAUSED)
        await settle(app, pilot)
        assert "paused" in status_line(app)
        session.edit_state(None, "go", True)
        await pilot.press("c")
        await condition_holds(lambda: session.run_state == RunState.FINISHED)
        assert session.root_status == Status.SUCCESS


SLOW_TREE = """\
import asyncio

from py_trees.common import Status
from pydantic import BaseModel

from runtime import Agent
from runtime.node import AsyncNode, Sequence

RELEASE = asyncio.Event()


class S(BaseModel):
    done: bool = False


class Fetch(AsyncNode):
    async def update_async(self):
        await RELEASE.wait()
        return Status.SUCCESS


def build():
    return Agent(Sequence("Root", memory=True, children=[Fetch("Fetch")]), state_schema=S)
"""


@BOTH
async def test_a_continuing_run_says_which_async_node_it_waits_for(kind, tmp_path):
    """The work in flight keeps the run from ticking: the status line names the node, local and attached."""
    tree = tmp_path / "slow.py"
    tree.write_text(SLOW_TREE)
    async with studio_on(kind, tree, tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        await pilot.press("c")
        await condition_holds(lambda: session.run_state == RunState.WAITING)
        assert session.waiting_on() == ["Root/Fetch"]
        await pilot.pause()
        assert "waiting for Fetch" in status_line(app)
        await pilot.press("n")  # refused while it waits, as while it runs
        await pilot.press("p")
        await condition_holds(lambda: session.run_state == RunState.PAUSED)
        await pilot.pause()
        assert "paused" in status_line(app) and "waiting for" not in status_line(app)


async def test_a_served_run_whose_process_is_killed_is_abandoned_attached_and_in_its_store(tmp_path):
    """kill -9 of the process an attached studio drives (#28.5): the studio says the run is abandoned
    and when it was last seen, and its store lists it abandoned too."""
    async with agent_process(db=tmp_path / "served.db") as target:
        session = await RemoteSession.connect(target.address, TOKEN)
        app = StudioApp(session)
        async with app.run_test(size=SIZE) as pilot:
            await until_state(session, RunState.READY)
            await pilot.press("n")
            await condition_holds(lambda: session.tick == 1)
            target.process.kill()
            await until_state(session, RunState.FINISHED)
            await settle(app, pilot)
            assert re.fullmatch(r"abandoned, last seen \d{4}-\d\d-\d\d \d\d:\d\d:\d\d: the debug connection was lost; "
                                rf"its recording: jianmu-studio replay {re.escape(str(tmp_path))}/served.db",
                                session.message), session.message
            assert session.message[:40] in status_line(app)
        await session.close()
    store = open_store(tmp_path / "served.db")
    (run,) = store.runs()
    assert run.run_id == session.run_id and str(run_liveness(run)).startswith("abandoned, last seen ")
    store.close()
