"""DebugSession, the controller every view drives: stepping, breakpoints and edits."""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from itertools import compress
from pathlib import Path

import py_trees
import pytest
from py_trees.common import Status

from runtime.debug.breakpoints import BreakpointError
from studio.session import DebugSession, EditError, RunState

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = str(ROOT / "sample_trees/text_pipeline.py")


@pytest.fixture
def session() -> DebugSession:
    return DebugSession.load(PIPELINE)


async def test_step_ticks_once_and_reports_what_changed(session):
    assert session.run_state == RunState.READY
    report = await session.step()
    assert report.tick == 1 and session.tick == 1
    assert report.changed["TextPipeline/Normalize"] == (Status.INVALID, Status.RUNNING)
    assert session.run_state == RunState.PAUSED
    assert session.waiting_on() == ["TextPipeline/Normalize"]
    report = await session.step()  # waits for the async node, then ticks
    assert report.tick == 2
    assert "normalized_text" in report.state_changes
    assert session.state_snapshot()[""]["normalized_text"].startswith("the quick brown fox")


async def test_running_now_and_the_tree_shape_follow_a_tree_that_grows(session):
    """Both are worked out once per tree (not at every redraw): a re-indexed tree counts again."""
    await session.step()
    assert session.running_nodes() == ["TextPipeline/Normalize"]
    shape = session.tree_shape
    assert session.tree_shape == shape and "TextPipeline/Normalize" in shape[0]
    spin = py_trees.behaviours.Running(name="Spin")
    session.runner.root.add_child(spin)
    session.runner.refresh_tree()  # as a deferred subtree compiling indexes its nodes
    spin.status = Status.RUNNING
    assert session.tree_shape != shape and "TextPipeline/Spin" in session.tree_shape[0]
    assert session.running_nodes() == ["TextPipeline/Normalize", "TextPipeline/Spin"]


def test_the_tree_shape_keeps_no_copy_of_the_paths(session):
    """It is the runner's own paths (a view of `nodes`): a copy was ~42 B a node, 4 MB at 100,000."""
    session.runner.root.add_child(py_trees.composites.Sequence("wide", memory=True, children=[
        py_trees.behaviours.Success(f"leaf{i}") for i in range(2000)]))
    session.runner.refresh_tree()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        shape = session.tree_shape
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 2000 and "TextPipeline/wide/leaf1999" in shape[0], grown


async def test_continue_runs_to_the_end(session):
    stop = await session.continue_()
    assert stop.kind == "finished"
    assert session.run_state == RunState.FINISHED and session.root_status == Status.SUCCESS
    assert session.state_snapshot()["all"]["words"] == 11
    assert session.state_snapshot()["unique"]["words"] == 9
    assert await session.step() is None  # a finished run does not step; restart does
    await session.restart()
    assert session.run_state == RunState.READY and session.tick == 0


async def test_node_breakpoint_stops_before_the_node_runs(session):
    assert session.toggle_node_breakpoint("TextPipeline/Summarise")
    assert session.node_view("TextPipeline/Summarise").breakpoint
    stop = await session.continue_()
    assert stop.kind == "breakpoint" and stop.message == "breakpoint: before TextPipeline/Summarise"
    assert session.paused_at.path == "TextPipeline/Summarise"  # inside the tick, before its update
    assert session.node_view("TextPipeline/Summarise").status == Status.INVALID
    assert session.run_state == RunState.PAUSED
    assert (await session.continue_()).kind == "finished"  # not again when its async work is collected
    assert session.breakpoints[0].hits == 1


async def test_status_breakpoint_and_toggle_off(session):
    session.toggle_node_breakpoint("TextPipeline/Count", on="after")
    stop = await session.continue_()
    assert stop.kind == "breakpoint"
    assert "TextPipeline/Count" in session.last_report.changed
    assert not session.toggle_node_breakpoint("TextPipeline/Count")
    assert (await session.continue_()).kind == "finished"


async def test_conditional_breakpoint_fires_when_it_becomes_true(session):
    session.add_condition_breakpoint("all.words > 0 and len(normalized_text) > 5")
    stop = await session.continue_()
    assert stop.kind == "breakpoint" and "all.words > 0" in stop.message
    assert session.state_snapshot()["all"]["words"] == 11
    assert (await session.continue_()).kind == "finished"  # edge-triggered: no second stop


@pytest.mark.parametrize("expression, reason", [
    ("rounds >= ", "syntax error"),
    ("__import__('os')", "only len"),
    ("no_such_key > 1", "no state key 'no_such_key'"),
    ("text.__class__", "private attribute"),
    ("[x for x in text]", "is not allowed"),
])
def test_bad_conditions_are_errors_not_crashes(session, expression, reason):
    with pytest.raises(BreakpointError, match=reason):
        session.add_condition_breakpoint(expression)
    assert session.breakpoints == []


async def test_event_breakpoint(session):
    session.add_event_breakpoint("log")
    stop = await session.continue_()
    assert stop.kind == "breakpoint" and "event log" in stop.message
    assert any(e.type == "log" and e.tick == session.tick for e in session.events)


async def test_pause_interrupts_a_wait_for_async_work(session):
    await session.step()  # Normalize now sleeps 200 ms
    task = asyncio.create_task(session.continue_())
    await asyncio.sleep(0.05)
    assert session.run_state == RunState.WAITING and "Normalize" in session.message
    session.pause()
    stop = await asyncio.wait_for(task, 1)
    assert stop.kind == "paused" and session.tick == 1


async def test_edit_binding_takes_effect_at_the_next_tick(session):
    session.edit_binding("TextPipeline/Normalize", "in", "source_text", "summary")
    session.edit_state(None, "summary", "EDITED   Text")
    assert any(e.type == "binding.changed" for e in session.events)
    await session.continue_()
    assert session.state_snapshot()[""]["normalized_text"] == "edited text"
    detail = session.node_detail("TextPipeline/Normalize")
    port = next(p for p in detail.ports if p.port == "source_text")
    assert port.key == "summary" and port.direction == "in"


def test_bad_bindings_are_rejected_with_a_reason(session):
    with pytest.raises(EditError, match="no state field 'nope' in PipelineState"):
        session.edit_binding("TextPipeline/Normalize", "in", "source_text", "nope")
    with pytest.raises(EditError, match="needs a state key"):
        session.edit_binding("TextPipeline/Normalize", "out", "normalized_text", "  ")
    with pytest.raises(EditError, match="no node at path"):
        session.edit_binding("TextPipeline/Ghost", "in", "x", "text")
    assert session.node_detail("TextPipeline/Normalize").ports[0].key == "text"


def test_bindings_file_round_trip(tmp_path):
    tree = tmp_path / "src" / "pipeline.py"
    tree.parent.mkdir()
    tree.write_text(Path(PIPELINE).read_text())
    session = DebugSession.load(str(tree), db=tmp_path / "runs.db")
    session.edit_binding("TextPipeline/Normalize", "in", "source_text", "summary")
    saved = session.save_bindings()
    assert saved.parent == tmp_path / "runs.studio" and saved.name.startswith("pipeline-")  # beside the store
    assert list(tree.parent.iterdir()) == [tree]  # nothing written into the source tree
    assert json.loads(saved.read_text())["TextPipeline/Normalize"]["inputs"] == {"source_text": "summary"}
    reopened = DebugSession.load(str(tree), db=tmp_path / "runs.db")
    assert reopened.apply_bindings_file() == []
    assert reopened.node_detail("TextPipeline/Normalize").ports[0].key == "summary"


def test_bad_state_edits_are_rejected_and_change_nothing(session):
    with pytest.raises(EditError, match="state key 'words'"):
        session.edit_state(None, "words", "many")
    with pytest.raises(EditError, match="invalid namespace"):
        session.edit_state("all.", "words", 1)
    assert session.state_snapshot()[""]["words"] == 0


def test_node_views_show_class_namespace_and_children(session):
    views = {v.path: v for v in session.node_views()}
    assert views["TextPipeline"].children[0] == "TextPipeline/Normalize"
    assert views["TextPipeline/Count/AllWords"].namespace == "all"
    assert views["TextPipeline/Count/AllWords"].class_name == "CountWords"
    assert views["TextPipeline/Normalize"].status == Status.INVALID


async def test_a_recorded_run_reopens_in_the_past_and_replays_offline(tmp_path):
    db = tmp_path / "runs.db"
    calculator = str(ROOT / "sample_trees/react_calculator.py")
    live = DebugSession.load(calculator, db=db)
    assert (await live.continue_()).kind == "finished"
    final = live.state_snapshot()
    run_id = live.run_id
    live.store.close()

    recorded = DebugSession.open_recorded(db)
    assert recorded.recorded_run == run_id and recorded.tick == 0  # nothing executed
    rows = recorded.checkpoints()
    assert recorded.viewing.id == rows[-1].id and rows[-1].status == "SUCCESS"
    assert recorded.state_snapshot()[""]["final_answer"] == "25 * 4 + 10 = 110"
    assert recorded.node_view("Calculator").status == Status.SUCCESS

    await recorded.replay_from(rows[0].id)  # the scripted model is not asked: recorded answers only
    assert (await recorded.continue_()).kind == "finished"
    assert recorded.state_snapshot()[""]["final_answer"] == final[""]["final_answer"]
    llm = recorded.runner.nodes["Calculator/Calculator.loop/Calculator.llm"]
    assert llm.model_client.provider.requests == []


def test_opening_a_recorded_run_names_what_is_wrong(tmp_path):
    from runtime.memory.checkpoint import StoreError, open_store

    with pytest.raises(StoreError, match="no such checkpoint store"):
        DebugSession.open_recorded(tmp_path / "missing.db")
    open_store(tmp_path / "empty.db").close()
    with pytest.raises(StoreError, match="holds no runs"):
        DebugSession.open_recorded(tmp_path / "empty.db")


async def test_a_step_remembers_its_checkpoint_with_the_statuses_the_tick_reported(session):
    """The head's statuses for the next step's marks and timeline row are the tick's own report,
    not a second pass over every node (~2 ms a step at 10,000 nodes), and they are the nodes' now."""
    for _ in range(2):
        await session.step()
        saved = session.timeline.saved(session.runner.checkpoints.head)
        paths, statuses = session.runner.reported_statuses()
        assert saved.statuses.statuses is statuses and saved.statuses.paths is paths
        assert dict(saved.statuses) == {path: node.status.value for path, node in session.runner.nodes.items()}


async def test_running_now_and_the_statuses_are_the_nodes_whether_or_not_a_tick_is_held(session):
    """Both come from the runner's reported statuses between ticks, from the nodes while a tick is held."""
    nodes = session.runner.nodes
    for step in (session.step, session.step_into, session.step_into, session.step, session.step):
        await step()
        assert session.running_nodes() == [p for p, n in nodes.items() if not n.children and n.status is Status.RUNNING]
        assert session.node_statuses() == {p: n.status for p, n in nodes.items()}


async def test_running_now_is_picked_out_once_a_tick_not_at_every_redraw(session, monkeypatch):
    """A redraw between ticks (an event: at 100,000 nodes a step's async stage writes after it) reuses
    the leaves picked out of the status list the last tick reported; the next tick's are those less and
    plus the places it moved (`moved_between`), the list not read again; a held tick's, from the nodes."""
    from studio import frames

    picks = []
    nodes = session.runner.nodes
    monkeypatch.setattr(frames, "compress", lambda data, selectors: (  # every node's status tested
        picks.append(1) if len(data) == len(nodes) else None) or compress(data, selectors))
    counted = []
    for step in (session.step, session.step_into, session.step, session.step):
        await step()
        picks.clear()
        for _ in range(3):
            session._notify("changed")  # another frame, the same tick
            assert session.running_nodes() == [p for p, n in nodes.items() if not n.children and n.status is Status.RUNNING]
        counted.append(len(picks))
    assert counted == [1, 3, 0, 0]  # the first tick's picked out; held, each time; then from the tick's moves
