"""Runs in one studio session: restart is a fresh run, fork and replay work offline and keep
the recorded branch as it was (issue #10 points 1 and 2), through `DebugSession` on the samples."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from py_trees.common import Status

from studio.session import DebugSession, StopReason

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = sorted(p.name for p in (ROOT / "sample_trees").glob("*.py") if p.stem not in ("__init__", "mcp_server"))
CALCULATOR = str(ROOT / "sample_trees/react_calculator.py")
_ID = re.compile(r"^[0-9a-f]{8,32}$")


def comparable(value):
    """A state snapshot with ids aside: maps keyed by ids become their values, id strings `<id>`."""
    if isinstance(value, dict):
        if value and all(isinstance(k, str) and _ID.match(k) for k in value):
            return sorted((comparable(v) for v in value.values()), key=repr)
        return {k: comparable(v) for k, v in value.items() if k not in ("time", "created_at", "duration_ms")}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return "<id>" if isinstance(value, str) and _ID.match(value) else value


async def finish(session: DebugSession) -> StopReason:
    """Continue to the end, approving whatever the run asks for."""
    for _ in range(20):
        stop = await session.continue_()
        if stop.kind != "suspended":
            return stop
        for request in session.pending_approvals():
            session.approve(request.id)
    raise AssertionError("the run never finished")


def event_types(session: DebugSession) -> list[str]:
    return [event.type for event in session.events if event.run_id == session.run_id]


@pytest.mark.parametrize("sample", SAMPLES)
async def test_restart_runs_the_tree_file_again_with_the_same_result(sample, tmp_path):
    session = DebugSession.load(str(ROOT / "sample_trees" / sample), db=tmp_path / "runs.db")
    session.toggle_node_breakpoint(session.node_views()[0].path)  # kept across the restart
    session.remove_breakpoint(session.breakpoints[0])
    session.toggle_node_breakpoint(session.node_views()[0].path)
    session.breakpoints[0].enabled = False
    first = await finish(session)
    assert first.kind == "finished", first.message
    status, state, types, run_id = session.root_status, session.state_snapshot(), event_types(session), session.run_id

    await session.restart()
    assert session.run_id != run_id and session.tick == 0 and session.root_status == Status.INVALID
    assert len(session.breakpoints) == 1
    assert session.state_snapshot() != state or not state  # the old run's values are gone at tick 0
    second = await finish(session)
    assert second.kind == "finished", second.message
    assert session.root_status == status
    assert comparable(session.state_snapshot()) == comparable(state)
    assert event_types(session) == types


def _main_checkpoints(session: DebugSession) -> list[tuple]:
    """Every main checkpoint of the run, whole: header, statuses, resume data and state."""
    out = []
    for row in session.checkpoints():
        if row.branch == "main":
            cp = session.store.get(row.id)
            out.append((cp.info, cp.statuses, cp.resume, comparable(cp.state)))
    return out


async def test_fork_from_every_checkpoint_with_and_without_an_edit_works_offline(tmp_path):
    session = DebugSession.load(CALCULATOR, db=tmp_path / "runs.db")
    assert (await session.continue_()).kind == "finished"
    final = session.state_snapshot()
    rows = [row for row in session.checkpoints() if row.branch == "main"]
    assert [row.tick for row in rows] == list(range(7))  # the input, then six ticks
    for row in rows:
        branch = await session.fork_from(row.id)
        assert branch.startswith("fork-")
        assert (await session.continue_()).kind == "finished"
        assert session.state_snapshot() == final, f"fork from tick {row.tick} without an edit"

        session.select_checkpoint(row.id)
        session.edit_state(None, "rounds", 9)
        assert session.state_snapshot()[""]["rounds"] == 9  # shown as staged
        await session.fork_from(row.id)
        stop = await session.continue_()
        assert stop.kind == "finished" and session.root_status == Status.SUCCESS, f"tick {row.tick}: {stop.message}"
        answer = session.state_snapshot()[""]
        assert answer["final_answer"] == "25 * 4 + 10 = 110" and answer["rounds"] >= 9


async def test_a_fork_that_changes_the_question_asks_the_model_from_where_it_was(tmp_path):
    from runtime import human

    session = DebugSession.load(CALCULATOR, db=tmp_path / "runs.db")
    assert (await session.continue_()).kind == "finished"
    start = session.checkpoints()[0]
    session.select_checkpoint(start.id)
    session.edit_state(None, "messages", [human("What is 7 * 6?")])
    await session.fork_from(start.id)
    assert (await session.continue_()).kind == "finished"
    llm = session.runner.nodes["Calculator/Calculator.loop/Calculator.llm"]
    assert llm.model_client.provider.position == 2  # the script read from its start once more, not exhausted
    assert session.state_snapshot()[""]["messages"][0]["content"] == "What is 7 * 6?"


async def test_replay_makes_its_own_branch_and_leaves_the_recorded_one_untouched(tmp_path):
    session = DebugSession.load(CALCULATOR, db=tmp_path / "runs.db")
    assert (await session.continue_()).kind == "finished"
    final, recorded = session.state_snapshot(), _main_checkpoints(session)
    events = [pair for pair in session.store.events(session.run_id) if pair[0] == "main"]
    for number, row in enumerate(session.checkpoints()[:3], start=1):
        assert await session.replay_from(row.id) == f"replay-{number}"
        assert (await session.continue_()).kind == "finished"
        assert session.state_snapshot() == final
    assert _main_checkpoints(session) == recorded
    assert [pair for pair in session.store.events(session.run_id) if pair[0] == "main"] == events
    assert {row.branch for row in session.checkpoints()} == {"main", "replay-1", "replay-2", "replay-3"}
    first = next(row for row in session.checkpoints() if row.branch == "replay-1")
    assert first.summary.startswith("replay: ")  # the timeline says what started the branch


async def test_replaying_a_recorded_run_does_not_rewrite_it(tmp_path):
    db = tmp_path / "runs.db"
    live = DebugSession.load(CALCULATOR, db=db)
    assert (await live.continue_()).kind == "finished"
    recorded_before = _main_checkpoints(live)
    live.store.close()

    session = DebugSession.open_recorded(db)
    await session.replay_from(session.checkpoints()[2].id)
    assert (await session.continue_()).kind == "finished"
    assert session.branch == "replay-1"
    assert _main_checkpoints(session) == recorded_before


async def test_a_state_edit_before_the_first_tick_is_kept(tmp_path):
    session = DebugSession.load(CALCULATOR, db=tmp_path / "runs.db")
    session.edit_state(None, "rounds", 1)  # run-scoped: the start of the run must not reset it afterwards
    await session.step()
    assert session.state_snapshot()[""]["rounds"] == 1


async def test_a_fork_served_from_the_recording_moves_the_scripted_model_on(tmp_path):
    """Requests that match the recording call the scripted model again (its position moves on as it
    did then), so every checkpoint of the fork saves the position main saved at that tick."""
    session = DebugSession.load(CALCULATOR, db=tmp_path / "runs.db")
    assert (await session.continue_()).kind == "finished"
    await session.fork_from(session.checkpoints()[0].id)
    assert (await session.continue_()).kind == "finished"
    llm = "Calculator/Calculator.loop/Calculator.llm"
    assert session.runner.nodes[llm].model_client.provider.position == 2

    def positions(branch: str) -> list[tuple[int, int]]:
        return [(row.tick, session.store.get(row.id).resume[llm]["model"]["position"])
                for row in session.checkpoints() if row.branch == branch]

    assert positions("fork-1")[1:] == positions("main")[1:]
