"""`check`: a tree re-run against its recording, offline, and the first place where they part."""

from __future__ import annotations

import asyncio

import pytest
from check_fixtures import LLM, ROOT, cli, offline, record, write_tree  # noqa: F401 (offline: an autouse fixture)
from py_trees.common import ParallelPolicy, Status
from pydantic import BaseModel

from runtime import Agent, ModelClient, ai
from runtime.check import check_run
from runtime.check.recording import tree_for_run
from runtime.engine.events import EventType
from runtime.memory.checkpoint import InMemoryCheckpointStore, open_store
from runtime.model import ModelResponse
from runtime.node import Parallel, SimpleLLMNode

SAMPLES = sorted(p for p in (ROOT / "sample_trees").glob("*.py") if p.stem not in ("__init__", "mcp_server"))


async def checked(db, run_id, tree=None, **options):
    store = open_store(str(db), create=False)
    try:
        choice = tree_for_run(store, run_id, None if tree is None else str(tree))
        return await check_run(store, run_id, choice.build, **options), choice.notes
    finally:
        store.close()


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.stem)
async def test_every_sample_recorded_then_checked_matches(sample, tmp_path):
    db = tmp_path / "runs.db"
    run_id = await record(sample, db)
    report, notes = await checked(db, run_id)
    assert report.ok, "\n".join(report.lines())
    assert report.ticks > 0 and notes == []


async def check_changed(tmp_path, change: str):
    """Record the fixtures' tree, then check that run against the tree with `change` made."""
    db = tmp_path / "runs.db"
    run_id = await record(write_tree(tmp_path), db)
    return await checked(db, run_id, write_tree(tmp_path, "fixed.py", change))


async def test_a_changed_prompt_is_found_at_the_model_call_that_sends_it(tmp_path):
    report, notes = await check_changed(tmp_path, "prompt")
    found = report.divergence
    assert (found.tick, found.node, found.what) == (2, LLM, "model request")
    assert "messages[0].content" in found.line
    assert any("Be terse." in line for line in found.detail) and any("careful assistant" in line for line in found.detail)
    assert "differs from the tree the run was recorded with" in notes[0]


async def test_a_changed_tool_list_is_found_at_the_first_call_that_offers_it(tmp_path):
    found = (await check_changed(tmp_path, "tool list"))[0].divergence
    assert (found.tick, found.node, found.what) == (2, LLM, "model request")
    assert "tools offered (-calculator)" in found.line
    assert found.detail == ("- recorded: append_note, calculator", "+ now: append_note")


async def test_a_changed_node_is_found_at_the_tick_it_returns_and_named(tmp_path):
    found = (await check_changed(tmp_path, "node"))[0].divergence
    assert (found.tick, found.node, found.what) == (2, "Pipeline/tidy", "state key 'topic'")
    assert found.detail == ("- topic recorded 'bees'", "+ topic now      'BEES'")


async def test_a_node_returning_another_status_is_found_by_what_it_returned(tmp_path):
    report, _ = await check_changed(tmp_path, "node fails")
    found = report.divergence
    assert (found.tick, found.node, found.what) == (2, "Pipeline/tidy", "returned status")
    assert found.line.endswith("returned status differs: return 1 of the tick: recorded SUCCESS, now FAILURE")
    assert found.detail[0].startswith("recorded: tidy SUCCESS") and found.detail[1].startswith("now: tidy FAILURE")
    assert report.also == ["status at Pipeline", "state key 'topic'"]


async def test_a_side_effecting_tool_is_never_run_by_a_check(tmp_path):
    db = tmp_path / "runs.db"
    tree = write_tree(tmp_path)
    run_id = await record(tree, db)
    log = tmp_path / "appended.log"
    assert log.read_text() == "bees\n"  # the recording ran it once
    report, _ = await checked(db, run_id)
    assert report.ok and report.tools_run == 0
    assert log.read_text() == "bees\n"


async def test_tools_live_runs_the_tools_and_serves_only_the_model(tmp_path):
    db = tmp_path / "runs.db"
    run_id = await record(write_tree(tmp_path), db)
    report, _ = await checked(db, run_id, tools_live=True)
    assert report.ok and report.tools_run == 2
    assert (tmp_path / "appended.log").read_text() == "bees\nbees\n"


async def test_a_run_answered_by_approvals_is_checked_with_the_same_answers(tmp_path):
    db = tmp_path / "runs.db"
    run_id = await record(ROOT / "sample_trees/approval_guard.py", db)
    report, _ = await checked(db, run_id)
    assert report.ok, report.lines()


MCP_TREE = '''
import sys
from pathlib import Path
from runtime import Agent, ModelClient, ReActState, ScriptedProvider, create_react_node, human
from runtime.tools import MCPToolProvider

SERVER = Path(__file__).with_name("server.py")
SCRIPT = [{"tool_calls": [{"name": "word_count", "arguments": {"text": "one two three"}}]}, "Three words."]
INPUT = {"messages": [human("How many words in 'one two three'?")]}


def build():
    client = ModelClient.resolve(ScriptedProvider(SCRIPT), env_override=True)
    server = MCPToolProvider(sys.executable, [str(SERVER)], name="counted", call_timeout=20)
    return Agent(create_react_node(name="Counter", model_client=client, tool_providers=[server]),
                 state_schema=ReActState)
'''

SERVER = '''
from pathlib import Path

Path(__file__).with_name("started.log").open("a").write("started\\n")
exec(compile(Path({sample!r}).read_text(), {sample!r}, "exec"))
'''


async def test_no_mcp_server_is_started_by_a_check(tmp_path):
    (tmp_path / "server.py").write_text(SERVER.format(sample=str(ROOT / "sample_trees/mcp_server.py")))
    tree = tmp_path / "mcp_tree.py"
    tree.write_text(MCP_TREE)
    db = tmp_path / "runs.db"
    run_id = await record(tree, db)
    started = tmp_path / "started.log"
    assert started.read_text() == "started\n"  # recording it started the server once
    report, _ = await checked(db, run_id)
    assert report.ok, report.lines()
    assert started.read_text() == "started\n"



async def test_the_command_exits_1_with_one_line_then_the_excerpt(tmp_path):
    db = tmp_path / "runs.db"
    run_id = await record(write_tree(tmp_path), db)
    ok = cli("check", str(db))
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines()[-1].startswith(f"run {run_id}: ok, ")
    failed = cli("check", str(db), "--run", run_id, "--tree", str(write_tree(tmp_path, "fixed.py", "node")))
    assert failed.returncode == 1, failed.stderr
    note, line, old, new = failed.stdout.splitlines()[:4]
    assert note.startswith("note: the tree given")
    assert line == f"run {run_id}: tick 2, node Pipeline/tidy: state key 'topic' differs: recorded 'bees', now 'BEES'"
    assert (old, new) == ("  - topic recorded 'bees'", "  + topic now      'BEES'")
    live = cli("check", str(db), "--tools", "live")
    assert live.returncode == 0 and live.stdout.startswith("tools run live:") and "2 tool calls made for real" in live.stdout


async def test_without_run_every_run_is_checked_and_the_exit_status_is_the_worst(tmp_path):
    db = tmp_path / "runs.db"
    await record(write_tree(tmp_path), db)
    await record(write_tree(tmp_path, "other.py", "prompt"), db)
    (tmp_path / "other.py").write_text((tmp_path / "tree.py").read_text())  # the second run's tree changed since
    result = cli("check", str(db))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].endswith("ok, 10 ticks match the recording (" + str(tmp_path / "tree.py") + ":build)")
    assert lines[1].startswith("note: the file ") and "differs from the tree the run was recorded with" in lines[1]
    assert "model request differs" in lines[2]


@pytest.mark.parametrize("case", ["missing run", "not a store", "tree does not load", "no such file"])
async def test_bad_input_is_one_line(case, tmp_path):
    db = tmp_path / "runs.db"
    run_id = await record(write_tree(tmp_path), db)
    bad = tmp_path / "bad.py"
    bad.write_text("def build(:\n")
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    args, expected = {
        "missing run": (["check", str(db), "--run", "nope"], f"{db}: no run 'nope'"),
        "not a store": (["check", str(text)], f"{text}: not a checkpoint store (not an SQLite database)"),
        "tree does not load": (["check", str(db), "--run", run_id, "--tree", str(bad)], f"{bad}:1: syntax error"),
        "no such file": (["check", str(tmp_path / "gone.db")], f"{tmp_path / 'gone.db'}: no such checkpoint store"),
    }[case]
    result = cli(*args)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"jianmu-studio: {expected}"] or expected in result.stderr.splitlines()[0]
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr


async def test_a_swarm_agent_is_checked_like_the_host_and_a_change_in_it_found_at_its_call(tmp_path):
    db = tmp_path / "runs.db"
    run_id = await record(ROOT / "sample_trees/swarm_chat.py", db)
    changed = tmp_path / "swarm_chat.py"
    changed.write_text((ROOT / "sample_trees/swarm_chat.py").read_text().replace(
        'create_react_node(name="Research", model_client=client,',
        'create_react_node(name="Research", model_client=client, config=ReActConfig(system_prompt="Be terse."),').replace(
        "    ReActState,", "    ReActConfig,\n    ReActState,"))
    report, _ = await checked(db, run_id, changed)
    found = report.divergence
    assert (found.tick, found.node, found.what) == (2, "@researcher/Researcher/Research/Research.loop/Research.llm",
                                                     "model request")
    assert "messages[0].content" in found.line


class Gated:
    """A model whose one answer comes when the test opens it."""

    def __init__(self, answer: str):
        self.answer = answer
        self.open = asyncio.Event()

    async def complete(self, messages, config, on_delta=None):
        await self.open.wait()
        return ModelResponse(message=ai(self.answer), model="gated", finish_reason="stop")


class TwoAnswers(BaseModel):
    messages: list = []
    final_answer: str | None = None
    second_answer: str | None = None


def two_at_once(first: Gated, second: Gated) -> Agent:
    """Two model calls in parallel, each answer in a key of its own."""
    return Agent(Parallel("Both", policy=ParallelPolicy.SuccessOnAll(), children=[
        SimpleLLMNode("First", model_client=ModelClient(first)).bind(outputs={"messages": "first_reply"}),
        SimpleLLMNode("Second", model_client=ModelClient(second)).bind(
            outputs={"messages": "second_reply", "final_answer": "second_answer"}),
    ]), state_schema=TwoAnswers)


async def test_parallel_answers_that_landed_in_separate_ticks_land_there_again():
    store = InMemoryCheckpointStore()
    first, second = Gated("one"), Gated("two")
    runner = two_at_once(first, second).make_runner(checkpointer=store)
    runner.start_fresh({"messages": [ai("go")]})
    runner.event_bus.publish(EventType.RUN_STARTED, {"fresh": True, "tick": 0})  # (what a run's first step says)
    await runner.step()  # both calls asked
    first.open.set()
    assert (await runner.step()).changed == {"Both/First": (Status.RUNNING, Status.SUCCESS)}  # the first answer only
    second.open.set()
    assert (await runner.step()).status == Status.SUCCESS
    report = await check_run(store, runner.run_id, lambda: two_at_once(Gated("one"), Gated("two")), rebuild=False)
    assert report.ok and report.ticks == 3, report.lines()
