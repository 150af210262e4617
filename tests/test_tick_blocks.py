"""A local session takes a tick's telemetry as one block (issue #34 point 2): its `node.returned`,
`node.status` and `tick.completed` events are built only when read, and still read exactly as the
store rebuilds them from its record; the events pane builds only the rows it draws, and shows every
row of a tick when scrolled to it."""

from __future__ import annotations

import asyncio
import gc
import sys

import pytest
from py_trees.common import Status
from tui_fixtures import SIZE, settle, steady_terminal  # noqa: F401

from runtime import Agent
from runtime.engine import RuntimeEvent
from runtime.engine.record import TickReport, TickTelemetry
from runtime.memory.checkpoint import EventsRead
from sample_trees import large_tree
from studio.app import StudioApp
from studio.event_log import TICK_BLOCK, StampedEvent, TickEvents
from studio.loader import LoadedTree
from studio.session import DebugSession, open_store
from studio.widgets.event_rows import EventRows
from studio.widgets.events_pane import EventsPane

NODES = 600  # three stages of ~200 nodes: a step changes one stage's nodes at once


def _session(tmp_path, nodes: int = NODES) -> DebugSession:
    agent = Agent(large_tree.build_root(nodes, stages=3), state_schema=large_tree.LargeState)
    return DebugSession(LoadedTree(agent, tmp_path / "large.py", "build"), store=open_store(tmp_path / "runs.db"))


def _facts(events) -> list[tuple]:
    return [(e.seq, e.type, e.tick, e.node, e.payload) for e in events]


async def _steps(session: DebugSession, count: int) -> None:
    for _ in range(count):
        while session.debugger.waiting_on():  # a stage's pause: the next tick finds it done
            await asyncio.sleep(0.01)
        await session.step()


async def test_a_ticks_telemetry_is_one_block_that_reads_as_the_store_rebuilds_it(tmp_path):
    session = _session(tmp_path)
    told: list = []
    session.add_listener(lambda kind, data: told.append(data) if kind == "event" else None)
    await _steps(session, 3)
    blocks = [entry for entry in session.frame_events().entries if type(entry) is TickEvents]
    assert [block.tick for block in blocks] == [1, 2, 3] and all(block in told for block in blocks)
    assert not any(type(e) is StampedEvent and e.type in TICK_BLOCK for e in session.frame_events().entries)
    assert sum(len(block.paths) for block in blocks) > NODES // 3  # a stage's nodes changed, no event built each
    stored = [event for _, event in session.store.events(session.run_id, EventsRead()) if event.type in TICK_BLOCK]
    shown = [event for event in session.frame_events() if event.type in TICK_BLOCK]
    assert _facts(shown) == _facts(stored)


async def test_a_step_into_held_mid_tick_then_finished_logs_the_ticks_telemetry_once(tmp_path):
    session = _session(tmp_path)
    await _steps(session, 1)
    await session.step_into()
    assert session.paused_at is not None and len(session.frame.pending) > 0  # held inside tick 2
    assert [e.tick for e in session.frame_events().entries if type(e) is TickEvents] == [1]
    await session.step()  # the rest of tick 2
    stored = [event for _, event in session.store.events(session.run_id, EventsRead()) if event.type in TICK_BLOCK]
    assert _facts(e for e in session.frame_events() if e.type in TICK_BLOCK) == _facts(stored)
    node = next(path for path in session.runner.nodes if path.endswith("s1.b0.l0"))
    assert session.node_detail(node).history == [(2, "INVALID", "SUCCESS")]


@pytest.mark.parametrize("scroll", ["bottom", "the tick's first row"])
async def test_the_events_pane_builds_the_rows_it_draws_and_every_row_of_a_tick_scrolled_to(tmp_path, scroll):
    session = _session(tmp_path)
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await _steps(session, 2)
        await settle(app, pilot)
        pane = app.main.query_one(EventsPane)
        block = next(e for e in session.frame_events().entries if type(e) is TickEvents and e.tick == 2)
        formatted = [pane._rows[row - pane._rows.base] for row in pane._texts]
        assert sum(row in block for row in formatted) <= pane.size.height + 1  # only rows on screen were formatted
        if scroll != "bottom":
            first = next(i for i in range(pane.line_count) if pane._rows[i].seq == block.seq)
            pane.scroll_to(y=first, animate=False)
            await pilot.pause()
        top = int(pane.scroll_y)
        shown = [pane._rows[i] for i in range(top, min(pane.line_count, top + pane.size.height))]
        assert shown and all(row in block or type(row) is StampedEvent for row in shown)
        expected = [e for e in session.frame_events() if e.type == "node.status" and e.tick == 2]
        rows = [row for row in pane._rows if row.type == "node.status" and row.tick == 2]
        assert _facts(rows) == _facts(expected) and {e.node for e in expected} == set(block.paths)


def _block(first: int, nodes: int) -> TickEvents:
    """A tick's block of `nodes` changes, numbered from `first` (its tick.completed last)."""
    changed = {f"n{i}": (Status.INVALID, Status.SUCCESS) for i in range(nodes)}
    report = TickReport(1, Status.SUCCESS, changed=changed, ticked=list(changed), returned=[Status.SUCCESS] * nodes,
                        telemetry=TickTelemetry((first - 1, 0.0), (first, 0.0), (first + nodes, 0.0)))
    return TickEvents.of("main", "run", report)


def _event(seq: int) -> StampedEvent:
    return StampedEvent("main", RuntimeEvent(seq, "log", 0.0, 1, None, "run", {}))


def test_rows_past_the_limit_drop_off_a_block_at_a_time_and_keep_their_numbers():
    rows = EventRows(limit=10)
    assert rows.extend([_event(1), _block(2, 6), _event(9)]) == 9 and len(rows) == 9
    assert [row.seq for row in rows] == list(range(1, 10)) and rows.base == 0
    assert rows.extend([_event(seq) for seq in range(10, 15)]) == 5
    assert [row.seq for row in rows] == list(range(5, 15)) and rows[0].seq == 5 and rows.last.seq == 14
    assert rows.base == 4  # row 0 is the fifth row since the rows began
    rows.extend([_event(seq) for seq in range(15, 19)])
    assert [row.seq for row in rows] == list(range(9, 19)) and rows.base == 8


def test_a_block_keeps_its_changes_compactly_and_no_event_it_built():
    """A run's length of blocks held a dict of each tick's changes, and the `tick.completed` the pane
    built (its payload naming each change again): ~200 KB a tick at 100,000 nodes, for the run's length."""
    block = _block(2, 10_000)
    held = sum(map(sys.getsizeof, gc.get_referents(block)))  # (a slotted object: its fields)
    assert held < 12 * 10_000  # the paths in order and a byte a change (a dict: ~37 bytes a change)
    assert block[-1].payload["changed"]["n7"] == ["INVALID", "SUCCESS"] and block[7].node == "n7"
    list(block)  # every row read (a pane scrolled over it)
    assert sum(map(sys.getsizeof, gc.get_referents(block))) == held  # no event kept


async def test_a_nodes_history_looks_at_each_tick_once_and_keeps_nothing_in_the_blocks(tmp_path, monkeypatch):
    """The node pane reads the selected node's history each step: it looked at every tick of the run each
    time (~0.15 ms a tick at 10,000 changes: 150 ms a step after 1,000 ticks), and kept each event it built
    in its tick's block, where a pane's letting go never reaches."""
    session = _session(tmp_path)
    await _steps(session, 2)
    looked: list[str] = []
    touches = TickEvents.touches
    monkeypatch.setattr(TickEvents, "touches", lambda block, path: looked.append(path) or touches(block, path))
    root = session.node_views().paths[0]
    first = session.node_detail(root).history
    assert len(looked) == 2 and first  # the two ticks, once
    assert session.node_detail(root).history == first and len(looked) == 2  # nothing new: nothing looked at
    await _steps(session, 2)
    assert len(session.node_detail(root).history) > len(first) and len(looked) == 4  # the new ticks only


async def test_a_filter_on_types_passes_over_a_ticks_rows_without_building_them(tmp_path):
    session = _session(tmp_path)
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        pane = app.main.query_one(EventsPane)
        pane.refilter("-type:node.status", session.frame_events())
        await _steps(session, 2)
        await settle(app, pilot)
        assert [row.tick for row in pane._rows if row.type == "tick.completed"] == [1, 2]
        assert all(row.type != "node.status" for row in pane._rows)
        pane.refilter("type:node.status node:s1.b0", session.frame_events())
        await settle(app, pilot)
        assert [row.node for row in pane._rows] == [e.node for e in session.frame_events()
                                                    if e.type == "node.status" and "s1.b0" in e.node] != []
