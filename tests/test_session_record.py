"""The studio's views read the record of a tick (issue #28 point 1), on react_calculator.py.

In tick 3 `Calculator.tools` returns SUCCESS and `Calculator.done` FAILURE, then the loop resets
the round for round 2: the tick's end shows neither. Paused before `done` the tree shows what
returned so far and marks the rest not yet ticked; afterwards the node pane's history, the
timeline's row, an "after" breakpoint, a recorded run and the past view all show the FAILURE.
"""

from __future__ import annotations

from pathlib import Path

from py_trees.common import Status

from runtime.engine import RuntimeEvent
from studio.event_log import StampedEvent, status_history
from studio.session import DebugSession

ROOT = Path(__file__).resolve().parents[1]
CALCULATOR = str(ROOT / "sample_trees/react_calculator.py")
LOOP = "Calculator/Calculator.loop"
TOOLS, DONE = f"{LOOP}/Calculator.tools", f"{LOOP}/Calculator.done"
ROUND_FAILED = [(3, "INVALID", "FAILURE"), (3, "FAILURE", "INVALID")]


async def _before_done_in_tick_3(session: DebugSession) -> None:
    await session.step()
    await session.step()
    while session.paused_at is None or session.paused_at.path != DONE:
        await session.step_into()


async def test_paused_inside_a_tick_the_frame_shows_what_returned_so_far_and_what_is_not_reached(tmp_path):
    session = DebugSession.load(CALCULATOR, db=tmp_path / "runs.db")
    await _before_done_in_tick_3(session)
    views = {view.path: view for view in session.node_views()}
    assert views[TOOLS].status == Status.SUCCESS and not views[TOOLS].pending  # it returned in this tick
    assert all(views[path].pending for path in (DONE, LOOP, "Calculator"))
    llm = views[f"{LOOP}/Calculator.llm"]  # the loop's memory passed it by in this tick: as it is
    assert llm.status == Status.SUCCESS and not llm.pending
    assert session.node_status(TOOLS) == Status.SUCCESS and session.node_statuses()[TOOLS] == Status.SUCCESS
    assert session.running_nodes() == []  # tools no longer runs: it returned
    assert session.node_detail(DONE).view.pending


async def test_after_the_tick_the_history_the_timeline_and_an_after_breakpoint_show_the_failed_round(tmp_path):
    session = DebugSession.load(CALCULATOR, db=tmp_path / "runs.db")
    session.add_node_breakpoint(DONE, on="after")
    stop = await session.continue_()
    assert session.tick == 3 and stop.kind == "breakpoint"  # not tick 6, where done ends SUCCESS
    assert session.node_view(DONE).status == Status.INVALID  # the tick's end: reset by the loop
    assert session.node_detail(DONE).history == ROUND_FAILED
    row = next(row for row in session.checkpoints() if row.tick == 3)
    assert row.summary.startswith("4 nodes")  # loop, llm, tools at the tick's end, and done inside it
    await session.continue_()
    assert session.tick == 6 and session.node_detail(DONE).history == [*ROUND_FAILED, (6, "INVALID", "SUCCESS")]


async def test_a_recorded_run_and_the_past_view_read_the_record_from_the_store(tmp_path):
    db = tmp_path / "runs.db"
    live = DebugSession.load(CALCULATOR, db=db)
    await live.continue_()
    live.store.close()
    recorded = DebugSession.open_recorded(db)
    assert recorded.node_detail(DONE).history == [*ROUND_FAILED, (6, "INVALID", "SUCCESS")]
    rows = {row.tick: row for row in recorded.checkpoints()}
    assert rows[3].summary.startswith("4 nodes")
    recorded.select_checkpoint(rows[2].id)  # tools running then; nothing runs at the recording's end
    assert recorded.running_nodes() == [TOOLS]
    assert list(recorded.frame.returns) == [(f"{LOOP}/Calculator.llm", Status.SUCCESS), (TOOLS, Status.RUNNING),
                                            (LOOP, Status.RUNNING), ("Calculator", Status.RUNNING)]
    assert recorded.node_detail(DONE).history == []  # nothing later than tick 2 leaks into it


def test_a_status_history_interleaves_the_returns_a_ticks_end_did_not_show():
    def event(seq: int, kind: str, tick: int, **payload) -> StampedEvent:
        return StampedEvent("main", RuntimeEvent(seq, kind, 0.0, tick, "n", "run", payload))

    events = [event(1, "node.status", 1, old="INVALID", new="RUNNING"),
              event(2, "node.returned", 2, status="FAILURE", end="SUCCESS"),  # ticked twice: FAILURE, then SUCCESS
              event(3, "node.status", 2, old="RUNNING", new="SUCCESS"),
              event(4, "node.returned", 3, status="FAILURE", end="SUCCESS"),  # failed, then put back as it was
              event(5, "node.error", 3, error="boom")]
    assert status_history(events) == [(1, "INVALID", "RUNNING"), (2, "RUNNING", "FAILURE"), (2, "FAILURE", "SUCCESS"),
                                      (3, "SUCCESS", "FAILURE"), (3, "FAILURE", "SUCCESS")]
    assert status_history(events[2:3]) == [(2, "RUNNING", "SUCCESS")]  # a lineage's events may start mid-run
