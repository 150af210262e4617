"""Pane behaviour that needs no run: streamed text, bursts of events, a 10,000-node tree."""

from __future__ import annotations

import contextlib

from py_trees.common import Status
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widgets import Input
from textual.widgets._footer import FooterKey
from tui_fixtures import ROOT, SIZE, TEXT_PIPELINE, settle, steady_terminal  # noqa: F401

from runtime.engine.events import RuntimeEvent
from studio.app import StudioApp
from studio.event_log import StampedEvent
from studio.session import DebugSession
from studio.widgets import events_pane
from studio.widgets.events_pane import MAX_ROWS, EventsPane, format_event
from studio.widgets.node_lines import GUIDE_DEPTH, ICON_EXPANDED, NodeLines
from studio.widgets.tree_pane import TreePane, label_width, node_label


class EventsApp(App):
    def compose(self) -> ComposeResult:
        yield EventsPane()


def event(seq: int, type_: str, node: str | None = None, branch: str = "main", **payload) -> StampedEvent:
    return StampedEvent(branch, RuntimeEvent(seq=seq, type=type_, time=0.0, tick=1, node=node, run_id="r",
                                             payload=payload))


async def test_text_deltas_extend_one_line_as_they_arrive():
    app = EventsApp()
    async with app.run_test() as pilot:
        pane = app.query_one(EventsPane)
        pane.add([event(1, "model.call.started", "A/llm"), event(2, "text.delta", "A/llm", delta="Hel")])
        pane.add([event(3, "text.delta", "A/llm", delta="lo, ")])  # a later batch continues the line
        pane.add([event(4, "text.delta", "A/llm", delta="world\nbye"), event(5, "model.call.completed", "A/llm")])
        await pilot.pause()
        assert len(pane.lines) == 3
        assert pane.lines[1].endswith("Hello, world ⏎ bye")
        assert "model.call.completed" in pane.lines[2]


def shown(pane: EventsPane) -> list[str]:
    """The pane's lines as drawn on screen now."""
    return [pane.render_line(y).text.rstrip() for y in range(pane.scrollable_content_region.height)]


async def caught_up(pilot, pane: EventsPane) -> None:
    while pane.backlog:
        await pilot.pause()
    await pilot.pause()


def burst(count: int) -> list[StampedEvent]:
    return [event(i, "log", "A", message=f"line {i}") for i in range(count)]


async def test_a_burst_shows_the_newest_last_and_formats_only_what_is_on_screen(monkeypatch):
    formatted = []
    monkeypatch.setattr(events_pane, "format_event", lambda e, *a: formatted.append(e) or format_event(e, *a))
    app = EventsApp()
    async with app.run_test() as pilot:
        pane = app.query_one(EventsPane)
        pane.add(burst(MAX_ROWS + 5))
        await caught_up(pilot, pane)
        assert pane.line_count == MAX_ROWS  # the oldest five dropped off
        lines = [line for line in shown(pane) if line]
        assert lines[-1].endswith('{"message": "line 20004"}')
        assert len(lines) == pane.scrollable_content_region.height  # the bottom of the buffer
        # Each redraw formats only the rows on screen; how many redraws a burst takes depends on the
        # machine's load, so bound it far below the burst rather than by the screen height.
        assert len(formatted) < MAX_ROWS // 20  # the 20,000 others were never formatted


async def test_a_key_press_goes_first_while_a_big_refilter_runs():
    """A text filter formats every event; that work is sliced, so keys are not held behind it."""

    class KeyApp(EventsApp):
        BINDINGS = [("x", "note", "note")]
        seen_at_key: int | None = None

        def action_note(self) -> None:
            self.seen_at_key = self.query_one(EventsPane).line_count

    app = KeyApp()
    async with app.run_test() as pilot:
        pane = app.query_one(EventsPane)
        pane.refilter("line", burst(MAX_ROWS))
        await pilot.press("x")
        assert app.seen_at_key is not None and app.seen_at_key < MAX_ROWS
        await caught_up(pilot, pane)
        assert pane.line_count == MAX_ROWS


async def test_filters_by_type_node_and_text_without_losing_the_stream_order():
    app = EventsApp()
    history = [event(1, "tool.call.started", "A/tools", tool="calculator"), event(2, "log", "A/x", message="noise"),
               event(3, "tool.call.completed", "A/tools", observation="110"), event(4, "node.status", "B", new="OK"),
               event(5, "tool.call.failed", "B/tools", error="boom")]
    async with app.run_test() as pilot:
        pane = app.query_one(EventsPane)
        pane.refilter("type:tool. -node:B 110", history)
        await caught_up(pilot, pane)
        assert [line.split()[0] for line in shown(pane) if line] == ["3"]
        assert pane.border_subtitle == "filter: type:tool. -node:B 110"
        pane.refilter("-type:tool.call.started -noise", history)
        await caught_up(pilot, pane)
        assert [line.split()[0] for line in shown(pane) if line] == ["3", "4", "5"]


async def test_scrolling_up_stops_following_and_the_end_key_follows_again():
    app = EventsApp()
    async with app.run_test() as pilot:
        pane = app.query_one(EventsPane)
        pane.focus()
        pane.add(burst(100))
        await caught_up(pilot, pane)
        await pilot.press("home")
        pane.add([event(100, "log", "A", message="newer")])
        await caught_up(pilot, pane)
        assert shown(pane)[0].split()[0] == "0"  # still reading the oldest
        await pilot.press("end")
        pane.add([event(101, "log", "A", message="newest")])
        await caught_up(pilot, pane)
        assert [line for line in shown(pane) if line][-1].endswith('{"message": "newest"}')


async def test_a_large_tree_relabels_only_what_is_on_screen(monkeypatch):
    relabelled: list[str] = []
    original = NodeLines.relabel

    def counting(tree, row, line):
        relabelled.append(tree.rows.paths[row])
        original(tree, row, line)

    session = DebugSession.load(str(ROOT / "sample_trees" / "large_tree.py"))
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        monkeypatch.setattr(NodeLines, "relabel", counting)
        await pilot.press("n")
        await settle(app, pilot)
        assert len(session.last_report.changed) > 500
        assert 0 < len(relabelled) <= SIZE[1]  # one screenful at most, not every changed node
        pane = app.main.query_one(TreePane)
        deep = list(session.last_report.changed)[-1]  # last in tree order: far off screen
        assert pane.jump(deep)
        await pilot.pause()
        tree = pane.tree  # drawn as it scrolled into view, as the step left it
        drawn = tree.render_lines(Region(0, tree.cursor_line - tree.scroll_offset.y, tree.size.width, 1))[0].text
        assert node_label(session.node_view(deep), False).plain in drawn


async def test_the_tree_measures_its_lines_as_it_draws_them():
    """The tree pane's own line measure (no label rendered) must give the width each line is drawn
    with, expanded or not: the tree's extent is the widest."""
    app = StudioApp(DebugSession.load(str(ROOT / "sample_trees" / "text_pipeline.py")))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        pane = app.main.query_one(TreePane)
        tree = pane.tree
        tree.set_expanded(list(tree.rows.kids(0))[1], False)  # Count: one collapsed node among expanded ones
        await pilot.pause()
        views = [tree.rows.view(row) for row in tree.lines]
        assert [label_width(view) for view in views] == [node_label(view, False).cell_len for view in views]
        assert tree.virtual_size.width == max(
            depth * GUIDE_DEPTH + (len(ICON_EXPANDED) if tree.rows.has_kids(row) else 0) + pane.label(row).cell_len
            for row, depth in zip(tree.lines, tree.depths, strict=True))


LARGE_TREE = ROOT / "sample_trees" / "large_tree.py"


def shows_the_session(pane: TreePane, session: DebugSession, path: str) -> bool:
    """The node's line holds what the session holds now (status, counter, mark, ticked highlight)."""
    ticked = set(session.last_report.ticked) if session.last_report is not None else set()
    expected = node_label(session.node_view(path), path in ticked)
    label = pane.label_of(path)
    return label.plain == expected.plain and label.spans == expected.spans


@contextlib.asynccontextmanager
async def large_studio():
    """The studio on large_tree.py, settled: (session, app, pilot, tree pane)."""
    session = DebugSession.load(str(LARGE_TREE))
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        yield session, app, pilot, app.main.query_one(TreePane)


async def test_a_branch_built_when_first_opened_shows_the_statuses_of_the_steps_before():
    async with large_studio() as (session, app, pilot, pane):
        assert pane.tree.line_count < len(session.runner.nodes) // 5  # the branches' leaves are not shown
        for _ in range(3):  # the first step re-reads the whole tree; the later ones change it line by line
            await pilot.press("n")
            await settle(app, pilot)
        leaf = next(path for path in session.last_report.changed if path.count("/") == 4)  # changed in step 3
        branch = leaf.rpartition("/")[0]
        leaves = [path for path in session.runner.nodes if path.startswith(branch + "/")]
        assert not pane.tree.expanded[pane._rows.index[branch]] and not any(pane.shown(path) for path in leaves)
        assert pane.jump(branch)
        await pilot.press("space")  # Textual's Tree: space opens the node under the cursor
        await settle(app, pilot)
        assert all(session.node_view(leaf).status != Status.INVALID for leaf in leaves)  # they ran
        assert all(shows_the_session(pane, session, path) for path in [branch, *leaves])


async def test_search_finds_a_node_in_a_branch_never_built_and_puts_the_cursor_on_it():
    async with large_studio() as (session, app, pilot, pane):
        match = "LargeTree/Stage9/Fan9/s9.b87/s9.b87.l3"
        assert not pane.shown(match)
        app.main.query_one("#tree-search", Input).focus()
        await pilot.press(*"s9.b87.l3")
        await pilot.pause()
        assert pane.selected_path == match and pane._rows.paths[pane.tree.cursor_row] == match
        top = pane.tree.scroll_offset.y
        assert top <= pane.tree.cursor_line < top + pane.tree.size.height  # its line is on screen
        assert shows_the_session(pane, session, match)


def footer_actions(app: StudioApp) -> set[str]:
    return {key.action for key in app.screen.query(FooterKey) if not key.has_class("-disabled")}


async def test_the_footer_shows_the_keys_that_apply_as_the_run_moves_to_the_past_and_back():
    """The Footer is rebuilt only when a key comes or goes: it must still follow every change."""
    session = DebugSession.load(str(TEXT_PIPELINE))
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("n")
        await settle(app, pilot)
        assert "live" not in footer_actions(app) and "restart" in footer_actions(app)
        app.main.view_checkpoint(session.checkpoints()[0].id)
        await settle(app, pilot)
        assert "live" in footer_actions(app) and "restart" not in footer_actions(app)
        await pilot.press("escape")
        await settle(app, pilot)
        assert "live" not in footer_actions(app) and "restart" in footer_actions(app)
