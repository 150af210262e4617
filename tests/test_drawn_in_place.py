"""enter and esc (issue #14 point 5) draw the panes in place: no pane asks for a layout of the screen
(Textual then arranges every widget and draws every scrollbar again), and each pane still shows
exactly what the frame holds. Only the keys line is laid out, when a key comes or goes."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widget import Widget
from textual.widgets._footer import FooterKey
from tui_fixtures import REACT_CALCULATOR, ROOT, TEXT_PIPELINE, settle, steady_terminal, studio_on, until  # noqa: F401

from runtime.engine.events import EventType, RuntimeEvent
from studio.app import StudioApp
from studio.event_log import StampedEvent
from studio.session import RunState
from studio.widgets import events_pane
from studio.widgets.events_pane import EventsPane, format_event
from studio.widgets.footer import KeysFooter
from studio.widgets.node_detail import NodeDetailPane, render_detail
from studio.widgets.state_pane import StatePane, qualified
from studio.widgets.status_line import StatusLine
from studio.widgets.timeline import Timeline
from studio.widgets.tree_pane import TreePane
from studio.widgets.values import preview, summary

LARGE_TREE = ROOT / "sample_trees" / "large_tree.py"  # 10,000 nodes


@pytest.fixture
def layouts(monkeypatch) -> list[Widget]:
    """The widgets that ask for a layout (`refresh(layout=True)`), from when the test starts counting."""
    asked: list[Widget] = []
    original = Widget.refresh

    def counting(widget, *regions, **kwargs):
        if kwargs.get("layout"):
            asked.append(widget)
        return original(widget, *regions, **kwargs)

    monkeypatch.setattr(Widget, "refresh", counting)
    return asked


def _outside_the_footer(widgets: list[Widget]) -> list[str]:
    return [f"{type(w).__name__}#{w.id}" for w in widgets if not isinstance(w, KeysFooter | FooterKey)]


def _shows_the_frame(app) -> None:
    """Every pane as the frame the session shows holds it."""
    session, screen = app.session, app.main
    events = screen.query_one(EventsPane)
    frame_events = session.frame_events()
    assert events.lines == [format_event(e, events.show_branch) for e in frame_events][-len(events.lines):]
    assert events.lines[-1] == format_event(frame_events[-1], events.show_branch)
    assert events.virtual_size.height == len(frame_events)
    assert events.scroll_y == events.max_scroll_y  # following the newest
    assert events.vertical_scrollbar.window_virtual_size == len(frame_events)
    state, marks = screen.query_one(StatePane), session.marks()
    snapshot = session.state_snapshot()
    assert set(state._key_nodes) == {(ns, key) for ns, values in snapshot.items() for key in values}
    for ns, values in snapshot.items():
        for key, value in values.items():
            label = state._key_nodes[(ns, key)].label.plain
            long = isinstance(value, dict | list) and bool(value)
            assert f"{key}{f'  {summary(value)}' if long else f' = {preview(value)}'}" in label
            assert label.startswith("●") == (qualified(ns, key) in marks)
    lines = state._tree_lines
    assert state.virtual_size.width == max(state.get_label_width(line.node) + line._get_guide_width(
        state.guide_depth, state.show_root) for line in lines)  # as wide as its widest line
    detail = screen.query_one(NodeDetailPane)
    path = screen.query_one(TreePane).selected_path
    assert detail.detail == session.node_detail(path)
    body = detail.query_one("#node-detail-body")
    rendered = app.console.render_lines(render_detail(detail.detail), app.console_options.update_width(body.size.width))
    assert body.size.height == max(len(rendered), detail.scrollable_content_region.height)  # all of it, no more


async def _past_and_back(tree, tmp_path):
    """The studio on `tree` run to its end, then (enter on its timeline row) at a middle checkpoint,
    live (esc), other checkpoints and live again: yields (app, the row moved to or None for live,
    whether drawn yet) just before each key and once its panes are drawn."""
    async with studio_on("local", tree, tmp_path) as (session, app, pilot):
        await pilot.press("c")
        await until(lambda: session.run_state == RunState.FINISHED)
        await settle(app, pilot)
        screen, rows = app.main, session.checkpoints()
        timeline = screen.query_one(Timeline)
        timeline.focus()
        for row in [rows[len(rows) // 2], None, rows[1], rows[-1], rows[0], None]:
            if row is not None:
                timeline.move_cursor(row=rows.index(row))
                await settle(app, pilot)
            yield app, row, False
            await pilot.press("enter" if row is not None else "escape")
            await settle(app, pilot)
            assert session.viewing == row
            await until(lambda: not screen.query_one(EventsPane).backlog)  # a long history is taken in slices
            await pilot.pause()
            yield app, row, True


@pytest.mark.parametrize("tree", [REACT_CALCULATOR, LARGE_TREE])
async def test_enter_and_esc_lay_out_only_the_keys_line(tree, tmp_path, layouts):
    """On trees whose state keys stay (only their values and marks change)."""
    async for _, row, drawn in _past_and_back(tree, tmp_path):
        if not drawn:
            layouts.clear()
        else:
            assert _outside_the_footer(layouts) == [], row


@pytest.mark.parametrize("tree", [REACT_CALCULATOR, LARGE_TREE, TEXT_PIPELINE])
async def test_after_enter_and_esc_every_pane_shows_its_frame(tree, tmp_path):
    """The text pipeline's keys come and go, and some are wider than the pane."""
    async for app, _, drawn in _past_and_back(tree, tmp_path):
        if drawn:
            _shows_the_frame(app)


@pytest.mark.parametrize("tree", [REACT_CALCULATOR, LARGE_TREE])
async def test_the_keys_line_changes_in_one_layout_after_the_panes_are_drawn(tree, tmp_path, monkeypatch):
    """The live key comes with enter and goes with esc: one layout of the screen for it (not a second
    for the footer's new extent), and not in the frame that first shows the panes."""
    seen: list[str] = []  # "layout", or a frame: "new" once the status line shows the frame moved to
    moved_to_past = [False]
    display = StudioApp._display

    def frame(app, screen, renderable) -> None:
        display(app, screen, renderable)
        if renderable is not None:
            shows = "PAST" in app.main.query_one(StatusLine).content.plain
            seen.append("new" if shows == moved_to_past[0] else "old")

    monkeypatch.setattr(StudioApp, "_display", frame)
    shown, subscribed = None, False  # the row shown, None live
    async for app, row, drawn in _past_and_back(tree, tmp_path):
        if not drawn:
            if not subscribed:
                subscribed = app.main.screen_layout_refresh_signal.subscribe(
                    app.main, lambda _: seen.append("layout"), immediate=True) or True
            seen.clear()
            moved_to_past[0] = row is not None
            continue
        laid_out = seen.count("layout")
        if (shown is None) == (row is None):  # past to past: the same keys
            assert laid_out == 0, (row, seen)
        else:
            first = seen.index("new")
            assert laid_out == 1 and seen[first + 1:first + 2] != ["layout"], (row, seen)
        shown = row


class EventsApp(App):
    def compose(self) -> ComposeResult:
        yield EventsPane()


async def test_a_refill_with_nothing_to_filter_or_join_is_drawn_at_once(monkeypatch):
    """enter and esc refill the events pane with the frame's history (~10,000 events at 10,000
    nodes): with no filter and no text stream every event is a row as it is, so all are rows in the
    first frame, however short the slice; a filter or a stream still takes them a slice at a time."""
    monkeypatch.setattr(events_pane, "SLICE", 0.0)
    app = EventsApp()
    async with app.run_test() as pilot:
        pane = app.query_one(EventsPane)
        await pilot.pause()
        history = [StampedEvent("main", RuntimeEvent(seq, "log", 0.0, 1, "A", "r", {"n": seq})) for seq in range(3000)]
        pane.refilter("", history)
        assert not pane.backlog and pane.lines[-1] == format_event(history[-1])
        for text, events in (("type:log", history), ("", [*history, StampedEvent("main", RuntimeEvent(
                3000, EventType.TEXT_DELTA, 0.0, 1, "A", "r", {"delta": "x"}))])):
            pane.refilter(text, events)
            assert pane.backlog == len(events)  # none taken in a slice of no time


async def test_a_search_that_expands_branches_lays_nothing_out(tmp_path, layouts):
    """Typing a name whose match is in collapsed branches expands them: the tree's extent grows, and
    only its scroll range follows (Textual's Tree laid the whole screen out at each expand, ~13 ms,
    a search key in three); the match is under the cursor and on screen, the range fits the lines."""
    async with studio_on("local", LARGE_TREE, tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        pane = app.main.query_one(TreePane)
        tree = pane.tree
        tree.collapse_all()
        assert pane.jump("LargeTree/Stage0/Fan0/s0.b0")  # one fan open: the tree scrolls, the others are shut
        pane.query_one("#tree-search").focus()
        await settle(app, pilot)
        assert tree.vertical_scrollbar.display  # already scrolling: no scrollbar comes with the search
        layouts.clear()
        await pilot.press(*"s9.b87")
        await settle(app, pilot)
        assert _outside_the_footer(layouts) == []
        assert session.node_view(pane.selected_path).name.startswith("s9.b87")
        assert pane.selected_path == pane._rows.paths[tree.cursor_row]
        assert tree.scroll_y <= tree.cursor_line < tree.scroll_y + tree.scrollable_content_region.height
        assert tree.virtual_size.height == tree.line_count
        assert tree.vertical_scrollbar.window_virtual_size == tree.virtual_size.height


async def test_a_search_key_is_drawn_in_one_frame(tmp_path, monkeypatch):
    """Each key typed in the tree search reaches the screen in one frame: the box's new text, the
    cursor on the match and the node pane on it. The node pane followed the cursor by a message, and
    the tree searched on the box's Changed message, so the first frame held the new text beside the
    old node (and the match a frame, ~17 ms or more, later)."""
    async with studio_on("local", LARGE_TREE, tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        pane, detail = app.main.query_one(TreePane), app.main.query_one(NodeDetailPane)
        tree, box, body = pane.tree, pane.query_one("#tree-search"), detail.query_one("#node-detail-body")
        pane.tree.collapse_all()
        box.focus()
        await settle(app, pilot)
        frames: list[tuple] = []
        display = app._display

        def recording(screen, renderable) -> None:
            display(screen, renderable)
            if renderable is not None and not app._batch_count:
                pending = [w for w in (tree, box, body)
                           if w._repaint_required or w._repaint_regions or w._layout_required]
                frames.append((box.value, pane.selected_path, detail.detail, pending))

        monkeypatch.setattr(app, "_display", recording)
        for text in ("s", "s9", "s9.", "s9.b", "s9.b8", "s9.b87"):
            frames.clear()
            await pilot.press(text[-1])
            await settle(app, pilot)
            match = pane.search(text)
            first = next(frame for frame in frames if frame[0] == text)
            assert first[1:] == (match, session.node_detail(match), []), text


async def test_running_now_takes_new_nodes_without_a_layout(tmp_path, layouts):
    """The "running now" list is one height (studio.tcss): new options set its scroll range alone.
    OptionList's extent is a layout reactive: every step that changed what runs laid the whole screen
    out (~6 ms of a step at 10,000 nodes). A list longer than the pane still scrolls to its end."""
    async with studio_on("local", TEXT_PIPELINE, tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        pane = app.main.query_one(TreePane)
        running = pane.query_one("#running-now")
        paths = [view.path for view in session.node_views()]
        many = [f"{paths[0]}/extra{i}" for i in range(3 * running.size.height)]
        layouts.clear()
        pane.set_running(paths[:2])
        await settle(app, pilot)
        assert _outside_the_footer(layouts) == []
        assert running.option_count == 2 and running.virtual_size.height == 2
        pane.set_running(many[:-5])  # its scrollbar comes (that lays out)
        await settle(app, pilot)
        layouts.clear()
        pane.set_running(many)
        await settle(app, pilot)
        assert _outside_the_footer(layouts) == []
        assert running.virtual_size.height == len(many)
        assert running.vertical_scrollbar.window_virtual_size == len(many)
        running.scroll_end(animate=False)
        await settle(app, pilot)
        assert running.scroll_y == running.max_scroll_y == len(many) - running.scrollable_content_region.height
