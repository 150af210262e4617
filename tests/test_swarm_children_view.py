"""Sub-agents are visible: swarm agents' trees and namespaces in the panes, breakpoints on them, every token counted."""

from __future__ import annotations

from pathlib import Path

import pytest
from py_trees.common import Status
from test_tui_app import plain
from tui_fixtures import BOTH, SIZE, session_on, settle, steady_terminal, studio_on, until  # noqa: F401

from runtime.debug.breakpoints import BreakpointError
from runtime.engine.events import EventType
from studio.app import StudioApp
from studio.session import DebugSession, RunState
from studio.widgets.state_pane import StatePane
from studio.widgets.tree_pane import TreePane

ROOT = Path(__file__).resolve().parents[1]
SWARM_CHAT = str(ROOT / "sample_trees/swarm_chat.py")
SKILL_SUBAGENT = str(ROOT / "sample_trees/skill_subagent.py")
RESEARCH_LLM = "@researcher/Researcher/Research/Research.loop/Research.llm"


def model_call_tokens(session: DebugSession) -> int:
    return sum(e.payload["usage"]["total_tokens"] for e in session.events
               if e.type == EventType.MODEL_CALL_COMPLETED and e.run_id == session.run_id)


@BOTH
async def test_swarm_agents_trees_hang_under_the_node_that_spawned_them(kind, tmp_path):
    async with studio_on(kind, Path(SWARM_CHAT), tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        await pilot.press("c")
        await until(lambda: session.run_state == RunState.FINISHED)
        await until(lambda: session.node_status("@writer/Writer").name == "SUCCESS")  # the agents' last ticks
        await settle(app, pilot)
        tree = app.main.query_one(TreePane)
        assert tree.parent_of("@researcher/Researcher") == "Coordinator/Hire/Hire researcher"
        assert tree.parent_of("@writer/Writer") == "Coordinator/Hire/Hire writer"
        assert "✔ Research.llm" in str(tree.label_of(RESEARCH_LLM))
        assert "iter 2/10" in str(tree.label_of("@researcher/Researcher/Research"))
        assert tree.kids_of("@writer/Writer") == [
            "@writer/Writer/Wait for notes", "@writer/Writer/Draft", "@writer/Writer/Send draft"]
        state = app.main.query_one(StatePane)
        assert ("@researcher", "final_answer") in state._key_nodes  # the agent's own state
        assert ("@researcher", "streaming_output") in state._key_nodes  # all of it, not only what was written
        assert ("@writer", "draft") in state._key_nodes
        assert tree.jump(RESEARCH_LLM)
        await settle(app, pilot)
        detail = " ".join(plain(app.main.query_one("#node-detail-body")).split())
        assert "AgentLLMNode" in detail
        assert "namespace @researcher " in detail  # the agent's own state, as the state pane names it
        assert "messages → messages = [{\"role\": \"user\", \"content\": \"Three hives" in detail  # read there
        assert session.tokens == 370  # the agents' model calls counted, the host calls none


@BOTH
async def test_stepping_the_coordinator_moves_its_agents_with_it_to_the_end(kind, tmp_path):
    """The agents are held with the coordinator between steps and run while it steps (a step that
    waits for their message lets them run until it comes): stepping alone finishes the run."""
    async with studio_on(kind, Path(SWARM_CHAT), tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        for _ in range(40):
            await pilot.press("n")
            await settle(app, pilot)
            if session.run_state == RunState.FINISHED:
                break
        assert session.root_status.name == "SUCCESS", session.failure
        assert session.tick > 1
        assert "iter 2/10" in str(app.main.query_one(TreePane).label_of("@researcher/Researcher/Research"))


async def test_an_attached_studio_shows_the_agents_as_a_local_one_does(tmp_path):
    """The same finished swarm run, locally and attached: every node (the agents' too) as the tree pane
    gets it, and every namespace with its keys."""
    seen = {}
    for kind in ("local", "remote"):
        (tmp_path / kind).mkdir()
        async with session_on(kind, Path(SWARM_CHAT), tmp_path / kind) as session:
            await session.continue_()
            await until(lambda: session.run_state == RunState.FINISHED)
            await until(lambda: session.node_status("@writer/Writer").name == "SUCCESS")
            views = [session.node_view(view.path) for view in session.node_views()]
            seen[kind] = ([(v.path, v.parent, v.children, v.status, v.namespace, v.counter) for v in views],
                          {ns: sorted(values) for ns, values in session.state_snapshot().items()},
                          session.node_detail(RESEARCH_LLM).view.namespace)
    assert any(path.startswith("@writer/") for path, *_ in seen["local"][0])
    assert seen["remote"] == seen["local"]


GATED = """\
from py_trees.common import Status
from pydantic import BaseModel

from runtime import Agent, RunContext
from runtime.node import Node, Sequence
from runtime.swarm import SendMessage, SpawnAgent, SwarmRuntime, WaitMessage


class HostState(BaseModel):
    go: bool = False
    reply: str = ""


class WorkerState(BaseModel):
    order: str = ""


class Gate(Node):
    def update(self):
        return Status.SUCCESS if self.read_state("go") else Status.RUNNING


def worker(agent):
    return Agent(Sequence("Worker", memory=True, children=[
        WaitMessage("Wait for order", from_agent_id="host", timeout=60).bind(outputs={"message": "order"}),
        SendMessage("Report", to_agent_id="host").bind(inputs={"message": "order"}),
    ]), state_schema=WorkerState)


def build():
    swarm = SwarmRuntime(host_id="host", roles={"worker": worker})
    return Agent(Sequence("Host", memory=True, children=[
        SpawnAgent("Hire", role="worker", agent_id="worker", reuse_if_present=True),
        Gate("Gate"),
        SendMessage("Order", to_agent_id="worker", message="build it"),
        WaitMessage("Wait for report", from_agent_id="worker", timeout=60).bind(outputs={"message": "reply"}),
    ]), state_schema=HostState, context=RunContext(runtime=swarm))
"""
WAIT_FOR_ORDER = "@worker/Worker/Wait for order"


@BOTH
async def test_an_after_breakpoint_on_an_agents_node_stops_the_run_and_releases_it(kind, tmp_path):
    """The worker waits for the host's order, the host for `go`: nothing races. The breakpoint on the
    worker's node fires when the order arrives, holding the run; continuing lets both finish."""
    tree = tmp_path / "gated_swarm.py"
    tree.write_text(GATED)
    async with session_on(kind, tree, tmp_path) as session:
        await session.step()  # the worker is spawned and waits
        await until(lambda: WAIT_FOR_ORDER in {view.path for view in session.node_views()}
                    and session.node_status(WAIT_FOR_ORDER).name == "RUNNING")
        with pytest.raises(BreakpointError, match="a swarm agent runs on its own"):
            session.add_node_breakpoint(WAIT_FOR_ORDER, "before")
        assert session.toggle_node_breakpoint(WAIT_FOR_ORDER)
        assert session.breakpoints[0].on == "after"  # an agent's runner runs on its own: it stops after
        session.edit_state(None, "go", True)
        stop = await session.continue_()
        assert stop.kind == "breakpoint" and stop.message == f"breakpoint: after {WAIT_FOR_ORDER} changes status"
        assert session.breakpoints[0].hits == 1
        await until(lambda: session.node_status(WAIT_FOR_ORDER).name == "SUCCESS")
        assert session.node_status("@worker/Worker/Report").name != "SUCCESS"  # the worker is held there
        assert (await session.continue_()).kind == "finished"
        await until(lambda: session.state_snapshot()[""]["reply"] == "build it")



RESEARCH_DONE = "@researcher/Researcher/Research/Research.loop/Research.done"


@BOTH
async def test_an_after_breakpoint_on_an_agents_node_fires_when_it_returns_though_its_loop_resets_it(kind, tmp_path):
    """The researcher's answer check returns FAILURE in its first round and its loop resets it in that
    same tick (its status ends as it began): the breakpoint stops there, before any answer (the agent's
    record, `moved`), and again when the check succeeds with the answer (#28.1)."""
    async with session_on(kind, Path(SWARM_CHAT), tmp_path) as session:
        await session.step()  # the agents are spawned, each held after its first tick
        await until(lambda: RESEARCH_DONE in {view.path for view in session.node_views()})
        assert session.toggle_node_breakpoint(RESEARCH_DONE)
        stop = await session.continue_()
        assert (stop.kind, stop.hits) == ("breakpoint", 1), stop.message
        await until(lambda: "@researcher" in session.state_snapshot())
        assert not session.state_snapshot()["@researcher"]["final_answer"]  # round 1 failed its check
        assert session.node_status(RESEARCH_DONE) == Status.INVALID  # reset by its loop in that tick
        stop = await session.continue_()
        assert (stop.kind, stop.hits) == ("breakpoint", 2), stop.message
        await until(lambda: bool(session.state_snapshot()["@researcher"]["final_answer"]))
        assert session.node_status(RESEARCH_DONE) == Status.SUCCESS

SPAWNED_IN_CODE = """\
from py_trees.common import Status

from runtime import Agent, RunContext
from runtime.node import Node, Sequence
from runtime.swarm import SwarmRuntime


class Done(Node):
    def update(self):
        return Status.SUCCESS


class Recruit(Node):
    \"\"\"Spawns its helpers in code, not through a SpawnAgent node: no event names a node.\"\"\"

    def update(self):
        swarm = self.ctx.runtime
        swarm.spawn("helper", agent_id="side", reuse_if_present=True)
        swarm.spawn("helper", agent_id="nested", parent="side", reuse_if_present=True)
        return Status.SUCCESS


def helper(agent):
    return Agent(Sequence("Helper", memory=True, children=[Done("Work")]))


def build():
    return Agent(Sequence("Host", memory=True, children=[Recruit("Recruit"), Done("After")]),
                 context=RunContext(runtime=SwarmRuntime(host_id="host", roles={"helper": helper})))
"""


@BOTH
async def test_agents_spawned_outside_any_node_hang_under_the_root_of_their_spawner(kind, tmp_path):
    """No node spawned them, yet their trees are drawn: under the host's root, or under the root of
    the agent named as their parent, not left out of the tree pane."""
    tree = tmp_path / "spawned_in_code.py"
    tree.write_text(SPAWNED_IN_CODE)
    async with studio_on(kind, tree, tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        await pilot.press("c")
        await until(lambda: session.run_state == RunState.FINISHED)
        await until(lambda: session.node_status("@nested/Helper").name == "SUCCESS")
        await settle(app, pilot)
        lines = app.main.query_one(TreePane)
        assert lines.parent_of("@side/Helper") == "Host"
        assert lines.parent_of("@nested/Helper") == "@side/Helper"
        assert "✔ Work" in str(lines.label_of("@nested/Helper/Work"))
        assert session.node_view("@side/Helper").parent == "Host"


async def test_a_breakpoint_on_a_swarm_agents_node_stops_the_run(tmp_path):
    session = DebugSession.load(SWARM_CHAT, db=tmp_path / "runs.db")
    await session.step()  # the researcher is spawned
    await session.step()
    session.children.runners()
    assert session.toggle_node_breakpoint(RESEARCH_LLM)
    assert session.breakpoints[0].on == "after"  # an agent's runner runs on its own: it stops after
    stop = await session.continue_()
    assert stop.kind == "breakpoint" and stop.message == f"breakpoint: after {RESEARCH_LLM} changes status"
    assert session.breakpoints[0].hits == 1
    held = session.node_view(RESEARCH_LLM).status
    assert (await session.continue_()).kind in ("breakpoint", "finished")  # released: it carries on
    assert session.node_view(RESEARCH_LLM).status != held or session.runner.finished


async def test_swarm_token_total_counts_the_agents(tmp_path):
    session = DebugSession.load(SWARM_CHAT, db=tmp_path / "runs.db")
    await session.continue_()
    assert session.tokens == model_call_tokens(session) > 0  # the host itself calls no model


async def test_skill_token_total_is_the_sum_of_its_model_calls(tmp_path):
    session = DebugSession.load(SKILL_SUBAGENT, db=tmp_path / "runs.db")
    await session.continue_()
    assert session.root_status.value == "SUCCESS"
    # the skills' namespaces were cleared when they ended, their usage with them: still counted
    assert not any(ns and ns.startswith("skill_runtime") for ns in session.runner.state_manager.namespaces())
    assert session.tokens == model_call_tokens(session)
    assert session.tokens > session.runner.state_manager.get("llm.usage")["total_tokens"]


async def test_status_line_shows_the_full_token_total(tmp_path):
    app = StudioApp(DebugSession.load(SKILL_SUBAGENT, db=tmp_path / "runs.db"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("c")
        await settle(app, pilot)
        assert f"tokens {model_call_tokens(app.session)}" in str(app.main.query_one("#status").render())


async def test_b_on_a_swarm_agents_node_says_it_stops_after_and_a_restart_stops_there(tmp_path):
    """The agents run on their own and finish quickly: set the breakpoint on a finished run, restart, and
    the new run stops at that agent's node."""
    app = StudioApp(DebugSession.load(SWARM_CHAT, db=tmp_path / "runs.db"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("c")
        await settle(app, pilot)
        tree = app.main.query_one(TreePane)
        assert tree.jump(RESEARCH_LLM)
        await pilot.press("b")
        await settle(app, pilot)
        said = [str(n.message) for n in app._notifications]
        assert f"breakpoint: after {RESEARCH_LLM} changes status (B lists them)" in said  # not "before"
        assert "◆" in str(tree.label_of(RESEARCH_LLM))
        await pilot.press("r")
        await settle(app, pilot)
        await pilot.press("c")
        await settle(app, pilot)
        assert app.session.breakpoints[0].hits == 1
        assert f"breakpoint: after {RESEARCH_LLM} changes status" in str(app.main.query_one("#status").render())
        for _ in range(10):  # released, the agent carries on, stopping each time that node's status changes
            await pilot.press("c")
            await settle(app, pilot)
            if app.session.runner.finished:
                break
        assert app.session.breakpoints[0].hits > 1 and app.session.runner.finished and app.session.root_status.value == "SUCCESS"


def test_headless_token_total_is_the_sum_of_every_model_call_of_skills_and_agents(tmp_path):
    import json
    import subprocess
    import sys

    for tree in (SKILL_SUBAGENT, SWARM_CHAT):
        trace = tmp_path / f"{Path(tree).stem}.jsonl"
        result = subprocess.run([sys.executable, "-m", "studio.cli", "run", tree, "--json", "--db",
                                 str(tmp_path / "runs.db"), "--trace", str(trace)],
                                capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert result.returncode == 0, result.stderr
        events = [json.loads(line) for line in trace.read_text().splitlines()]
        used = sum(e["payload"]["usage"]["total_tokens"] for e in events if e["type"] == "model.call.completed")
        assert json.loads(result.stdout.splitlines()[-1])["summary"]["tokens"] == used > 0, tree


async def test_agents_are_held_with_the_coordinator_between_steps_and_finish_when_it_continues(tmp_path):
    """After the step that spawns them the researcher is held with the coordinator
    (`children.held`) before it finishes its research: it moves on only when the host does."""
    session = DebugSession.load(SWARM_CHAT, db=tmp_path / "runs.db")
    await session.step()
    await until(lambda: "researcher" in session.children.held)
    researcher = session.children.runners()["researcher"]
    assert not researcher.finished  # two model rounds take more ticks than the step's own
    ticks = researcher.tick_count
    await session.step()
    await until(lambda: researcher.tick_count > ticks)  # moved with the host
    await session.continue_()
    await until(lambda: session.runner.finished)
    assert researcher.status.name == "SUCCESS"
    assert session.runner.status.name == "SUCCESS", session.failure
    assert session.state_snapshot()[""]["drafted_by"] == "writer"
