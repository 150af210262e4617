"""Breakpoints stop at the tick in which their cause happened (issue #10 point 7): work that
finishes between two ticks belongs to the earlier one, so the run stops before ticking again."""

from __future__ import annotations

from pathlib import Path

from studio.session import DebugSession

ROOT = Path(__file__).resolve().parents[1]


async def test_an_event_breakpoint_stops_after_the_tick_that_published_the_event(tmp_path):
    session = DebugSession.load(str(ROOT / "sample_trees/flaky_tools.py"), db=tmp_path / "runs.db")
    session.add_event_breakpoint("tool.call.failed")
    stop = await session.continue_()
    assert stop.kind == "breakpoint" and "tool.call.failed" in stop.message
    failed = [event for event in session.events if event.type == "tool.call.failed"]
    assert len(failed) == 1 and failed[0].tick == session.tick
    assert session.frame.tick == session.tick


async def test_a_condition_breakpoint_stops_after_the_first_tick_at_whose_end_it_holds(tmp_path):
    session = DebugSession.load(str(ROOT / "sample_trees/react_calculator.py"), db=tmp_path / "runs.db")
    session.add_condition_breakpoint("rounds >= 2")
    stop = await session.continue_()
    assert stop.kind == "breakpoint" and session.state_snapshot()[""]["rounds"] == 2
    written = [event for event in session.events if event.type == "state.changed" and "rounds" in event.payload["keys"]]
    assert written[-1].tick == session.tick  # the write that made it true came after this tick, before the next
    assert session.marks()["rounds"].between == session.tick
    assert (await session.continue_()).kind == "finished"
