"""The studio's memory is independent of a run's length (issue #34 point 2): what it holds for the
panes is a window of what they show, the rest read again from the session's record when scrolled
to, and what is read again is what was shown the first time."""

from __future__ import annotations

import asyncio
import gc
from array import array

from tui_fixtures import SIZE, settle, steady_terminal  # noqa: F401

from runtime import Agent
from runtime.engine.events import RuntimeEvent
from runtime.memory.checkpoint import EventsRead
from sample_trees import large_tree
from studio.app import StudioApp
from studio.event_log import TICK_BLOCK, StampedEvent, TickEvents, status_history
from studio.loader import LoadedTree
from studio.session import DebugSession, TimelineRow, open_store
from studio.timeline import RunTimeline
from studio.widgets import events_pane
from studio.widgets.events_pane import EventsPane, format_event
from studio.widgets.timeline import Timeline

KEPT = 30  # lines the pane keeps formatted here: fewer than the steps below draw


def _session(tmp_path) -> DebugSession:
    agent = Agent(large_tree.build_root(600, stages=8), state_schema=large_tree.LargeState)
    return DebugSession(LoadedTree(agent, tmp_path / "large.py", "build"), store=open_store(tmp_path / "runs.db"))


async def _steps(app: StudioApp, pilot, count: int) -> None:
    for _ in range(count):
        while app.session.debugger.waiting_on():  # a stage's pause: the next tick finds it done
            await asyncio.sleep(0.01)
        await app.session.step()
        await settle(app, pilot)


async def _stepped(session: DebugSession, count: int) -> DebugSession:
    """`session` stepped `count` ticks, each once its async stage's pause is over."""
    for _ in range(count):
        while session.debugger.waiting_on():
            await asyncio.sleep(0.01)
        await session.step()
    return session


def _shown(pane: EventsPane) -> list[str]:
    return [pane.render_line(y).text.rstrip() for y in range(pane.size.height)]


async def test_the_events_pane_keeps_a_window_of_lines_and_shows_the_first_rows_again_when_scrolled_back(
        tmp_path, monkeypatch):
    monkeypatch.setattr(events_pane, "LINES_KEPT", KEPT, raising=False)
    session = _session(tmp_path)
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        pane = app.main.query_one(EventsPane)
        await _steps(app, pilot, 2)
        width = pane.size.width
        pane.scroll_to(y=0, animate=False)
        await pilot.pause()
        first = _shown(pane)
        assert first[0] == format_event(session.frame_events()[0])[:width].rstrip()
        pane.scroll_end(animate=False)
        await pilot.pause()
        for steps in (3, 3):  # each step draws a screen of new rows
            await _steps(app, pilot, steps)
            assert len(pane._texts) <= KEPT and not pane._joined
        assert pane.line_count > 3 * KEPT
        pane.scroll_to(y=0, animate=False)
        await pilot.pause()
        assert _shown(pane) == first  # read again from the rows' record, as shown the first time
        events = session.frame_events()
        assert pane.lines == [format_event(event) for event in events]


def _tuples_held(index: dict) -> int:
    """Tuples an index's values hold, two levels down (a pair per tick was a tuple per tick)."""
    level = gc.get_referents(*index.values())
    return sum(type(o) is tuple for o in level + gc.get_referents(*level))


async def test_a_nodes_history_holds_a_number_a_tick_and_reads_as_the_store_recorded_it(tmp_path):
    session = await _stepped(_session(tmp_path), 6)
    root, leaf = session.node_views().paths[0], next(path for path in session.runner.nodes if path.endswith("s1.b0.l0"))
    for path in (root, leaf):
        stored = [event for _, event in session.store.events(session.run_id, EventsRead()) if event.node == path]
        assert session.node_detail(path).history == status_history(StampedEvent("main", e) for e in stored) != []
    assert _tuples_held(session.log._ticks) == 0 and _tuples_held(session.log._touching) == 0


async def test_a_ticks_block_holds_its_records_numbers_in_one_array_and_reads_as_the_store_rebuilds_it(tmp_path):
    session = await _stepped(_session(tmp_path), 3)
    blocks = [entry for entry in session.frame_events().entries if type(entry) is TickEvents]
    assert blocks and all(dict not in set(map(type, gc.get_referents(block))) for block in blocks)  # no record dict
    shown = [e.event for e in session.frame_events() if e.type in TICK_BLOCK]
    assert all(type(e.seq) is int and type(e.payload.get("ticked", 0)) is int for e in shown)
    facts = [(e.seq, e.type, e.time, e.tick, e.node, e.payload) for e in shown]
    stored = [event for _, event in session.store.events(session.run_id, EventsRead()) if event.type in TICK_BLOCK]
    assert facts == [(e.seq, e.type, e.time, e.tick, e.node, e.payload) for e in stored]


async def test_a_ticks_block_keeps_its_paths_and_one_bytes_the_kinds_and_state_keys_shared_with_other_ticks(tmp_path):
    session = await _stepped(_session(tmp_path), 10)
    blocks = [entry for entry in session.frame_events().entries if type(entry) is TickEvents]
    assert len(blocks) >= 8
    for field in ("kinds", "state_keys"):  # equal values are one object: a tuple a tick was an object a tick
        assert len({id(getattr(block, field)) for block in blocks}) == len({tuple(getattr(block, field)) for block in blocks})
    held = [o for block in blocks for o in gc.get_referents(block) if o is not block.returned]
    assert not [o for o in held if type(o) in (list, array, dict)]  # the numbers and codes: one bytes a block


def _held_by(timeline: RunTimeline) -> int:
    """Objects the timeline holds of a run's headers (its store, names and bounded caches aside)."""
    seen: set[int] = set()
    todo = [value for name, value in vars(timeline).items() if name not in ("store", "names", "_cache", "_remembered")]
    while todo:
        obj = todo.pop()
        if id(obj) not in seen and not isinstance(obj, type):
            seen.add(id(obj))
            todo.extend(gc.get_referents(obj))
    return len(seen)


async def test_the_timelines_headers_are_columns_of_numbers_and_read_as_the_store_lists_them(tmp_path):
    session = _session(tmp_path)
    counted = []
    for _ in range(9):
        await _stepped(session, 1)
        rows = session.checkpoints()  # each row's summary noted beside its header
        counted.append((len(rows), _held_by(session.timeline)))
    (rows_then, held_then), (rows_now, held_now) = counted[2], counted[-2]  # (the last: a new status, SUCCESS)
    assert rows_now >= rows_then + 5 and held_now == held_then  # no object a checkpoint
    headers, listed = session.timeline.infos(session.run_id), session.store.list(session.run_id)
    assert list(headers) == listed and [headers[headers.place(info.id)] for info in listed] == listed
    assert [row.summary for row in rows] == [session.timeline.summary(info) for info in listed]
    fresh = RunTimeline(session.store, session.timeline.names)
    assert [fresh.summary(info) for info in listed] == [row.summary for row in rows]  # as worked out anew
    assert fresh.lineage(None, session.run_id, "main") == session.timeline.lineage(None, session.run_id, "main")


def _containers(obj, given: list | None = None) -> int:
    """Dicts, lists and tuples reachable from `obj` through containers alone (not into the events they
    hold, nor into the `given` objects)."""
    skip = set(map(id, given or ()))
    found, todo = 0, [obj]
    while todo:
        held = todo.pop()
        if type(held) in (dict, list, tuple) and id(held) not in skip:
            found += 1
            todo.extend(gc.get_referents(held))
    return found


async def test_the_state_writes_index_holds_no_container_a_tick_and_reads_each_ticks_writes_as_stored(tmp_path):
    session = await _stepped(_session(tmp_path), 9)
    stored = [event for _, event in session.store.events(session.run_id, EventsRead()) if event.type == "state.changed"]
    lineage = session.timeline.lineage(None, session.run_id, "main")
    by_tick = {tick: [e.event for e in session.log.writes(lineage, tick)] for tick in range(session.tick + 1)}
    assert len(stored) >= 4 and sorted(e.tick for e in stored) == [t for t, events in by_tick.items() for _ in events]
    assert [e.seq for e in stored] == sorted(e.seq for events in by_tick.values() for e in events)
    assert _containers(session.log._writes) <= 2  # the index and the run's: not a key and a list a tick


async def test_the_timeline_pane_keeps_the_rows_it_was_given_and_no_object_of_its_own_a_row():
    from test_timeline_rows import TimelineApp, rows

    app = TimelineApp()
    async with app.run_test() as pilot:
        timeline = app.query_one(Timeline)
        given = rows(600)
        counted = []
        for count in (100, 600):
            timeline.sync(given[:count], viewing=given[count // 2])
            await pilot.pause()
            held = [value for name, value in vars(timeline).items() if name in ("_rows", "_ids", "_keys", "_index",
                                                                                  "_cells", "_widths", "_viewing")]
            counted.append(_containers(held, given))
        assert counted[1] == counted[0]  # the rows' list, not a key, an index entry and a tuple a row
        assert [timeline.get_row_at(row)[1] for row in range(600)] == [str(row["tick"]) for row in given]
        assert timeline.get_row_index("300") == 300 and timeline.get_cell("300", "mark") == "▶"
        assert timeline.cursor_key == "300"  # on the row viewed


async def test_a_ticks_start_and_state_writes_are_packed_and_read_as_the_store_recorded_them(tmp_path):
    session = await _stepped(_session(tmp_path), 10)
    logged = [e for e in session.frame_events().plain() if e.type in ("tick.started", "state.changed")]
    assert len(logged) >= 15 and all(type(e._event) is bytes for e in logged)  # no event, payload, number, time
    written = [e._written for e in logged if e.type == "state.changed"]
    assert len({id(w) for w in written}) == len(set(written))  # the same keys written: one tuple the ticks share
    stored = [event for _, event in session.store.events(session.run_id, EventsRead())
              if event.type in ("tick.started", "state.changed")]
    assert [e.event for e in logged] == stored
    assert all(type(e.seq) is type(e.tick) is int and type(e.event.time) is float for e in logged)
    lineage = session.timeline.lineage(None, session.run_id, "main")
    assert [e.event for tick in range(session.tick + 1) for e in session.log.writes(lineage, tick)] == \
        [e for e in stored if e.type == "state.changed"]


async def test_the_sessions_timeline_rows_are_built_when_read_and_hold_no_object_a_checkpoint(tmp_path):
    session = await _stepped(_session(tmp_path), 3)
    rows = session.checkpoints()
    await _stepped(session, 6)
    grown = session.checkpoints()
    assert len(grown) >= len(rows) + 5 and not [o for o in gc.get_referents(grown) if type(o) in (list, tuple, dict, TimelineRow)]
    assert [row.summary for row in grown] == [session.timeline.summary(info) for info in session.store.list(session.run_id)]
    assert [row.id for row in grown[:len(rows)]] == [row.id for row in rows] and grown[-1].id == grown[len(grown) - 1].id


def test_an_event_packed_reads_back_exactly_and_one_it_could_not_give_back_is_kept_as_it_came():
    started = RuntimeEvent(300, "tick.started", 1.5, 299, None, "r", {})
    wrote = RuntimeEvent(301, "state.changed", 1.6, 299, None, "r", {"namespace": None, "keys": ["a", "b"]})
    for event in (started, wrote):
        stamped = StampedEvent("main", event, True)
        assert type(stamped._event) is bytes and stamped.event == event and stamped == StampedEvent("main", event, True)
        assert (stamped.seq, stamped.tick, stamped.type, stamped.node, stamped.run_id, stamped.payload, stamped.between) \
            == (event.seq, event.tick, event.type, None, "r", event.payload, True)
    kept = [RuntimeEvent(302, "tick.started", 2, 299, None, "r", {}),  # an int time
            RuntimeEvent(303, "tick.started", 2.0, 299, None, "r", {"why": 1}),
            RuntimeEvent(304, "state.changed", 2.0, 299, None, "r", {"keys": ["a"], "namespace": "ns"}),  # its order
            RuntimeEvent(305, "state.changed", 2.0, 299, "/n", "r", {"namespace": None, "keys": ["a"]}),
            RuntimeEvent(306, "state.changed", 2.0, 299, None, "r", {"namespace": None, "keys": [("a",)]}),
            RuntimeEvent(307, "log", 2.0, 299, None, "r", {})]
    assert all(StampedEvent("main", event).event is event for event in kept)
