"""Past and back at 10,000 nodes (issue #14 point 5): what esc and enter read is cut, not scanned,
and must still be exactly what each frame holds."""

from __future__ import annotations

import itertools
import random

import pytest
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets._footer import FooterKey
from tui_fixtures import BOTH, REACT_CALCULATOR, ROOT, settle, steady_terminal, studio_on, until  # noqa: F401

from runtime.engine.events import EventType, RuntimeEvent
from studio.event_log import EventLog, StampedEvent
from studio.session import RunState
from studio.timeline import Lineage
from studio.widgets import events_pane
from studio.widgets.events_pane import CHUNK, MAX_ROWS, EventsPane, format_event
from studio.widgets.footer import KeysFooter
from studio.widgets.state_pane import StatePane
from studio.widgets.timeline import Timeline
from studio.widgets.tree_pane import TreePane, node_label
from studio.widgets.values import preview


def _logged(log: EventLog, everything: list[StampedEvent], run: str, branch: str, seq: int, tick: int,
            kind: str = EventType.NODE_STATUS) -> None:
    stamped = StampedEvent(branch, RuntimeEvent(seq, kind, 0.0, tick, "Root", run, {}))
    log.add(stamped)
    everything.append(stamped)


def _a_run_with_a_fork_and_a_replay(log: EventLog, everything: list[StampedEvent]) -> None:
    """main ticks 1-6 (seq 1-60, its end after tick 6's checkpoint at 60); fork-1 from tick 3 (seq 31
    on, numbering restarted there); replay-1 from fork-1's tick 5 (seq 51 on); another run between;
    one block of main numbered out of order (a subscriber publishing inside a block)."""
    seq = itertools.count(1)
    for tick in range(1, 7):
        for _ in range(10):
            _logged(log, everything, "r1", "main", next(seq), tick)
    _logged(log, everything, "r1", "main", 61, 6, EventType.RUN_COMPLETED)
    _logged(log, everything, "r2", "main", 1, 1)
    seq = itertools.count(31)
    for tick in range(4, 7):
        for _ in range(10):
            _logged(log, everything, "r1", "fork-1", next(seq), tick)
            if tick == 5:  # replay-1 runs interleaved with fork-1 in the log
                _logged(log, everything, "r1", "replay-1", 1000 + len(everything), tick + 1)
    _logged(log, everything, "r1", "fork-1", 61, 6, EventType.RUN_FAILED)
    for seq in (70, 72, 71, 73):  # out of order: this branch is filtered, not cut
        _logged(log, everything, "r1", "odd", seq, 7)


def test_a_frame_s_events_are_exactly_the_ones_its_lineage_holds_in_the_order_logged():
    log, everything = EventLog(), []
    _a_run_with_a_fork_and_a_replay(log, everything)
    limits = [None, 0, 10, 30, 35, 50, 60, 61, 1000, 1020, 71, 72]
    rng = random.Random(14)
    lineages = [Lineage(run, branch, tick, {branch: limit})
                for run in ("r1", "r2", "r3") for branch in ("main", "fork-1", "odd", "nowhere")
                for limit in limits for tick in (None, 3, 6, 7)]
    for _ in range(300):  # a branch and its ancestors, each up to a limit
        names = rng.sample(["replay-1", "fork-1", "main", "odd"], rng.randint(2, 4))
        chosen = {name: rng.choice(limits) for name in names}
        lineages.append(Lineage("r1", names[0], rng.choice([None, 5, 6, 7]), chosen))
    for lineage in lineages:
        assert log.of(lineage) == [e for e in everything if e.in_lineage(lineage)], lineage
    assert any(e.type == EventType.RUN_COMPLETED for e in log.of(Lineage("r1", "main", 6, {"main": 60})))


def test_forgetting_a_run_forgets_its_events_and_the_others_keep_theirs():
    log, everything = EventLog(), []
    _a_run_with_a_fork_and_a_replay(log, everything)
    log.keep_only("r2")
    assert log.of(Lineage("r1", "main", None, {"main": None})) == []
    assert [e.seq for e in log.of(Lineage("r2", "main", None, {"main": None}))] == [1]
    _logged(log, everything, "r1", "main", 1, 1)  # a run seen again starts its log afresh
    assert [e.seq for e in log.of(Lineage("r1", "main", None, {"main": None}))] == [1]


def _lines_on_screen(pane) -> dict[str, str]:
    """Each line on screen as the tree draws it now (its cached renders included), by path."""
    tree = pane.tree
    top = tree.scroll_offset.y
    drawn = tree.render_lines(Region(0, 0, *tree.size))
    rows = (tree.lines[line] if line < tree.line_count else None for line in range(top, top + tree.size.height))
    return {tree.rows.paths[row]: strip.text for row, strip in zip(rows, drawn, strict=True) if row is not None}


@BOTH
@pytest.mark.parametrize("tree", [REACT_CALCULATOR, ROOT / "sample_trees" / "swarm_chat.py"])
async def test_every_checkpoint_and_back_live_restates_each_line_as_the_frame_holds_it(kind, tree, tmp_path):
    """esc and enter restate the tree from all the frame's statuses at once (not one call per node):
    every node the pane knows, and every line on screen, as the frame shown holds it."""
    async with studio_on(kind, tree, tmp_path) as (session, app, pilot):
        await pilot.press("c")
        await until(lambda: session.run_state == RunState.FINISHED)
        await settle(app, pilot)
        pane, screen = app.main.query_one(TreePane), app.main
        rows = session.checkpoints()
        for row in [*rows, rows[0], None, rows[len(rows) // 2], None]:
            if row is None:
                screen.action_live()
            else:
                screen.view_checkpoint(row.id)
            await settle(app, pilot)
            assert (session.viewing is None) == (row is None)
            statuses = session.node_statuses()
            assert statuses == {path: session.node_status(path) for path in statuses}
            assert pane.statuses() == {p: statuses[p] for p in pane.statuses()}
            shown = _lines_on_screen(pane)
            assert shown and all(node_label(session.node_view(path), False).plain.rstrip() in line
                                 for path, line in shown.items()), shown


class EventsApp(App):
    def compose(self) -> ComposeResult:
        yield EventsPane()


def _history(count: int, branch: str) -> list[StampedEvent]:
    """`count` events with text.delta streams (one row each) where the pane's chunks of CHUNK events
    begin and end, across two of them, and chunks with none (taken at once)."""
    events = []
    for seq in range(count):
        at = seq % (4 * CHUNK)
        stream = at < 3 or CHUNK - 3 <= at < CHUNK or 2 * CHUNK <= at < 2 * CHUNK + 2 or 3 * CHUNK - 8 <= at < 3 * CHUNK + 8
        kind, payload = (EventType.TEXT_DELTA, {"delta": f"d{seq}"}) if stream else ("log", {"message": seq})
        events.append(StampedEvent(branch, RuntimeEvent(seq, kind, 0.0, 1, "A/llm", "r", payload)))
    return events


def _expected(events: list[StampedEvent], branch: bool) -> list[str]:
    lines: list[str] = []
    for i, stamped in enumerate(events):
        if stamped.type == EventType.TEXT_DELTA and i and events[i - 1].type == EventType.TEXT_DELTA:
            lines[-1] += stamped.payload["delta"]
        else:
            lines.append(format_event(stamped, branch))
    return lines[-MAX_ROWS:]


async def test_a_refill_s_rows_are_the_frame_s_events_each_line_formatted_for_its_frame():
    """Rows are the events themselves, lines formatted on demand and kept by event: after a past
    frame, the live one (with a branch column), a refill that overflows the buffer and a switch
    back, every line is its own event's (or stream's), and no line outlives its row."""
    app = EventsApp()
    async with app.run_test() as pilot:
        pane = app.query_one(EventsPane)
        for count, branch, show in ((300, "main", False), (2 * MAX_ROWS, "fork-1", True), (300, "main", False)):
            history = _history(count, branch)
            pane.show_branch = show
            pane.refilter("", history)
            while pane.backlog:
                await pilot.pause()
            await pilot.pause()
            assert pane.lines == _expected(history, show)
            assert all(pane._rows.base <= row < pane._rows.base + pane.line_count for row in pane._texts)
            assert pane.lines[-1] == format_event(history[-1], show)
        pane.refilter("type:log", history)  # a filter: only its events, none formatted to be kept
        while pane.backlog:
            await pilot.pause()
        assert pane.lines == [format_event(e, False) for e in history if e.type == "log"]


async def test_the_timeline_marks_only_the_row_viewed_as_it_draws_it_and_the_rest_stay_as_drawn(tmp_path):
    """The ▶ moves by dropping only its row's cached renders (not every row's): each line the
    timeline draws after enter, esc and enter elsewhere has the ▶ on the row viewed alone."""
    async with studio_on("local", REACT_CALCULATOR, tmp_path) as (session, app, pilot):
        await pilot.press("c")
        await until(lambda: session.run_state == RunState.FINISHED)
        await settle(app, pilot)
        timeline, screen = app.main.query_one(Timeline), app.main
        rows = session.checkpoints()
        assert timeline.size.height > len(rows) + 1  # every row on screen, under the header

        def drawn() -> list[str]:
            lines = [strip.text for strip in timeline.render_lines(Region(0, 0, *timeline.size))]
            return [line.lstrip("│ ") for line in lines[2:len(rows) + 2]]  # under the border and the header

        live = drawn()
        for row in [rows[1], None, rows[-1], rows[1], rows[0], None]:
            if row is None:
                screen.action_live()
            else:
                screen.view_checkpoint(row.id)
            await settle(app, pilot)
            lines = drawn()
            assert [line.startswith("▶") for line in lines] == [row is not None and r.id == row.id for r in rows], lines
            assert [line.lstrip("▶ ") for line in lines] == [line.lstrip("▶ ") for line in live]


def _keys_drawn(footer) -> list[tuple[str, str, str, bool, str]]:
    """The footer's keys as drawn: key, action, description, disabled, the text rendered."""
    return [(key.key, key.action, key.description, key.has_class("-disabled"), str(key.render()))
            for key in footer.query(FooterKey)]


async def test_the_footer_s_keys_change_in_place_and_match_what_a_rebuild_draws(tmp_path):
    """enter and esc turn the live key on and off: the keys staying are the same widgets, the one
    coming is mounted where Textual would put it, and every key is what a full rebuild draws."""
    async with studio_on("local", REACT_CALCULATOR, tmp_path) as (session, app, pilot):
        await pilot.press("n")
        await settle(app, pilot)
        footer, screen = app.main.query_one(KeysFooter), app.main
        kept = {(key.key, key.action): key for key in footer.query(FooterKey)}
        rows = session.checkpoints()
        for row in [rows[0], None, rows[-1], None]:
            if row is None:
                screen.action_live()
            else:
                screen.view_checkpoint(row.id)
            await settle(app, pilot)
            drawn = _keys_drawn(footer)
            assert ("escape" in [key for key, *_ in drawn]) == (row is not None)
            now = {(key.key, key.action): key for key in footer.query(FooterKey)}
            assert kept.keys() != now.keys()  # a key came or went
            assert all(key is kept[place] for place, key in now.items() if place in kept)  # in place, not rebuilt
            footer.call_later(footer.recompose)  # what Textual's Footer does on every change
            await settle(app, pilot)
            assert not set(now.values()) & set(footer.query(FooterKey)) and _keys_drawn(footer) == drawn
            kept = {(key.key, key.action): key for key in footer.query(FooterKey)}


async def test_a_refill_measures_the_lines_it_is_about_to_show_before_they_are_drawn(monkeypatch):
    """Found wider only while drawn, the lines would lay the screen out and draw it twice per refill."""
    monkeypatch.setattr(events_pane, "SLICE", 60.0)  # the whole refill in one take, however loaded the machine
    app = EventsApp()
    async with app.run_test() as pilot:
        pane = app.query_one(EventsPane)
        await pilot.pause()
        history = [StampedEvent("main", RuntimeEvent(seq, "log", 0.0, 1, "A", "r", {"message": "x" * (seq % 97)}))
                   for seq in range(2000)]
        pane.refilter("", history)
        assert not pane.backlog
        shown = history[-pane.size.height:]
        assert pane.virtual_size == (max(len(format_event(e)) for e in shown), len(history))


async def test_a_step_repaints_the_tree_pane_only_where_it_changed(tmp_path, monkeypatch):
    """The panes' titles are set when they change: setting one repaints the whole pane, and a real
    terminal is sent every cell of it again at every step. The titles still follow past and live."""
    repainted: list[str] = []
    original = Widget.refresh

    def counting(widget, *regions, **kwargs):
        if isinstance(widget, TreePane) and not regions:
            repainted.append(type(widget).__name__)
        return original(widget, *regions, **kwargs)

    async with studio_on("local", REACT_CALCULATOR, tmp_path) as (session, app, pilot):
        await pilot.press("n")
        await settle(app, pilot)
        monkeypatch.setattr(Widget, "refresh", counting)
        for _ in range(2):
            await pilot.press("n")
            await settle(app, pilot)
        assert repainted == []
        tree, state = app.main.query_one(TreePane), app.main.query_one(StatePane)
        app.main.view_checkpoint(session.checkpoints()[0].id)
        await settle(app, pilot)
        assert "tree — PAST" in tree.border_title and "state — PAST" in state.border_title
        assert "TreePane" in repainted
        app.main.action_live()
        await settle(app, pilot)
        assert (tree.border_title, state.border_title) == ("tree", "state")


async def test_past_titles_are_drawn_in_warning_without_repainting_the_tree_s_lines(tmp_path, monkeypatch):
    """The past's titles carry their colour in their text: a pane's border_title_color repainted every
    widget inside it (the tree's lines, the search box) at each enter and esc. Both titles are still
    drawn in the theme's warning colour in the past, and in the pane's own colour live."""
    repainted: list[str] = []
    original = Widget.refresh

    def counting(widget, *regions, **kwargs):
        if type(widget).__name__ in ("NodeLines", "SearchBox") and not regions:
            repainted.append(type(widget).__name__)
        return original(widget, *regions, **kwargs)

    def title_colours(app) -> list[set[str]]:  # of the tree and state panes' titles, as drawn on their top borders
        strips = app.screen._compositor.render_strips()
        return [{segment.style.color.triplet.hex.upper() for segment in strips[app.main.query_one(pane).region.y]
                 if segment.text.strip().startswith(("tree", "state"))} for pane in (TreePane, StatePane)]

    async with studio_on("local", REACT_CALCULATOR, tmp_path) as (session, app, pilot):
        for _ in range(2):
            await pilot.press("n")
            await settle(app, pilot)
        warning = app.theme_variables["warning"].upper()
        live = title_colours(app)  # the tree's focused (accent), the state's not
        assert warning not in live[1]
        monkeypatch.setattr(Widget, "refresh", counting)
        app.main.view_checkpoint(session.checkpoints()[0].id)
        await settle(app, pilot)
        assert title_colours(app) == [{warning}, {warning}]
        app.main.action_live()
        await settle(app, pilot)
        assert title_colours(app) == live
        assert repainted == []


class _Recorded:
    """A value `preview` writes with repr (its fallback): recorded when written."""

    written: list[int] = []

    def __init__(self, n: int) -> None:
        self.n = n

    def __repr__(self) -> str:
        _Recorded.written.append(self.n)
        return f"R{self.n}"


def test_an_event_s_payload_shows_as_preview_writes_it_without_writing_what_the_line_cuts():
    """A tick's payload at 10,000 nodes is ~65 KB of JSON; its row shows 200 characters."""
    rng = random.Random(14)

    def value(depth: int = 0):
        kinds = [lambda: rng.randrange(-5, 10**9), lambda: rng.random() * 1e6, lambda: None, lambda: True,
                 lambda: float("nan"), lambda: "é \n \\n \"q\t" * rng.randrange(4), lambda: b"b\n", lambda: (1, "t"),
                 lambda: {1: "int key", "s": 2}, lambda: Lineage("r", "main", 3, {"main": None}), lambda: RunState.FINISHED]
        if depth < 3:
            kinds += [lambda: {f"k{i}\n": value(depth + 1) for i in range(rng.randrange(12))},
                      lambda: [value(depth + 1) for _ in range(rng.randrange(12))]]
        return rng.choice(kinds)()

    for _ in range(500):
        payload = value()
        for limit in (1, 40, 200, 5000):
            assert events_pane.payload_preview(payload, limit) == preview(payload, limit)
    changed = {"changed": {f"LargeTree/n{i}": ["RUNNING", "SUCCESS", _Recorded(i)] for i in range(10_000)}}
    expected = preview(changed, 200)  # writes all 10,000
    _Recorded.written.clear()
    assert events_pane.payload_preview(changed) == expected
    assert _Recorded.written == [0, 1, 2, 3]
