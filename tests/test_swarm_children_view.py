"""Sub-agents are visible: swarm agents' trees and namespaces in the panes, breakpoints on them, every token counted."""

from __future__ import annotations

from pathlib import Path

from test_tui_app import plain
from tui_fixtures import SIZE, settle, steady_terminal, until  # noqa: F401

from runtime.engine.events import EventType
from studio.app import StudioApp
from studio.session import DebugSession
from studio.widgets.state_pane import StatePane
from studio.widgets.tree_pane import TreePane

ROOT = Path(__file__).resolve().parents[1]
SWARM_CHAT = str(ROOT / "sample_trees/swarm_chat.py")
SKILL_SUBAGENT = str(ROOT / "sample_trees/skill_subagent.py")
RESEARCH_LLM = "@researcher/Researcher/Research/Research.loop/Research.llm"


def model_call_tokens(session: DebugSession) -> int:
    return sum(e.payload["usage"]["total_tokens"] for e in session.events
               if e.type == EventType.MODEL_CALL_COMPLETED and e.run_id == session.run_id)


async def test_swarm_agents_trees_hang_under_the_node_that_spawned_them(tmp_path):
    app = StudioApp(DebugSession.load(SWARM_CHAT, db=tmp_path / "runs.db"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("c")
        await settle(app, pilot)
        tree = app.main.query_one(TreePane)
        researcher = tree._tree_nodes["@researcher/Researcher"]
        assert researcher.parent.data == "Coordinator/Hire/Hire researcher"
        assert tree._tree_nodes["@writer/Writer"].parent.data == "Coordinator/Hire/Hire writer"
        assert "✔ Research.llm" in str(tree._tree_nodes[RESEARCH_LLM].label)
        assert [child.data for child in tree._tree_nodes["@writer/Writer"].children] == [
            "@writer/Writer/Wait for notes", "@writer/Writer/Draft", "@writer/Writer/Send draft"]
        state = app.main.query_one(StatePane)
        assert ("@researcher", "final_answer") in state._key_nodes  # the agent's own state
        assert ("@writer", "draft") in state._key_nodes
        assert tree.jump(RESEARCH_LLM)
        await settle(app, pilot)
        detail = " ".join(plain(app.main.query_one("#node-detail-body")).split())
        assert "AgentLLMNode" in detail
        assert "namespace @researcher " in detail  # the agent's own state, as the state pane names it
        assert "messages → messages = [{\"role\": \"user\", \"content\": \"Three hives" in detail  # read there


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
        assert "◆" in str(tree._tree_nodes[RESEARCH_LLM].label)
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


async def test_the_agents_find_each_other_however_long_the_coordinator_is_held(tmp_path):
    """The agents run on while the studio holds the coordinator after a step: the researcher
    finishes and sends its notes before the coordinator's next tick, so the writer must exist."""
    session = DebugSession.load(SWARM_CHAT, db=tmp_path / "runs.db")
    await session.step()
    await until(lambda: "researcher" in session.children.runners())
    researcher = session.children.runners()["researcher"]
    await until(lambda: researcher.finished)  # the coordinator held all along
    await session.continue_()
    await until(lambda: session.runner.finished)
    assert researcher.status.name == "SUCCESS"
    assert session.runner.status.name == "SUCCESS", session.failure
    assert session.state_snapshot()[""]["drafted_by"] == "writer"
