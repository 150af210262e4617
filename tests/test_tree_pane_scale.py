"""The tree pane on a 20,000-node tree (#34): its model is rows of arrays and only the lines opened are
Textual's, so what a user does with the keys must still land on the screen as on a small tree —
search reaches a node in a branch never opened, space folds and unfolds, a step relabels the lines
on screen, and a line scrolled into view after a step shows the status the step left."""

from __future__ import annotations

import pytest
from py_trees.common import Status
from textual.geometry import Region
from textual.widgets import Input
from tui_fixtures import SIZE, settle, steady_terminal  # noqa: F401

from runtime import Agent
from runtime.engine.runner import TickReport
from sample_trees import large_tree
from studio.app import StudioApp
from studio.loader import LoadedTree
from studio.session import DebugSession
from studio.widgets.tree_pane import OPEN_LINES, TreePane

NODES = 20_000
DEEP = "LargeTree/Stage9/Fan9/s9.b150/s9.b150.l7"  # a leaf in the last stage: its Fan opens collapsed


@pytest.fixture
async def studio(tmp_path):
    root = large_tree.build_root(NODES)
    session = DebugSession(LoadedTree(Agent(root, state_schema=large_tree.LargeState), tmp_path / "large.py",
                                      "build", {}))
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        yield session, app, pilot


def on_screen(pane: TreePane) -> list[str]:
    """The tree's lines as the widget draws them now."""
    tree = pane.tree
    return [strip.text.rstrip() for strip in tree.render_lines(Region(0, 0, *tree.size))]


def line_of(pane: TreePane, name: str) -> str:
    lines = [line for line in on_screen(pane) if f" {name}  " in line]
    assert len(lines) == 1, on_screen(pane)
    return lines[0]


async def test_a_large_tree_opens_with_only_a_few_thousand_lines_built(studio):
    _, app, _ = studio
    pane = app.main.query_one(TreePane)
    assert pane.node_count == NODES
    assert pane.tree.line_count <= OPEN_LINES
    assert "LargeTree" in on_screen(pane)[0]


async def test_the_search_index_is_made_once_the_tree_is_drawn_not_by_the_first_key(studio, monkeypatch):
    """The first key typed finds the index made, with the collection the app pays once the tree is drawn."""
    _, app, pilot = studio
    pane = app.main.query_one(TreePane)
    assert pane._names is not None and len(pane._names.paths) == NODES
    monkeypatch.setattr("studio.widgets.tree_pane.NameIndex", None)  # typing makes none
    app.main.query_one("#tree-search", Input).focus()
    await pilot.press(*"s9.b150")
    await pilot.pause()
    assert pane.selected_path == "LargeTree/Stage9/Fan9/s9.b150"


async def test_search_finds_a_deep_node_in_a_branch_never_opened_and_scrolls_to_it(studio):
    _, app, pilot = studio
    pane = app.main.query_one(TreePane)
    assert not pane.shown(DEEP)  # its branch was never opened
    app.main.query_one("#tree-search", Input).focus()
    await pilot.press(*"s9.b150.l7", "enter")
    await pilot.pause()
    await pilot.pause()
    assert pane.selected_path == DEEP
    assert "s9.b150.l7" in line_of(pane, "s9.b150.l7") and pane.tree.has_focus
    cursor = pane.tree.cursor_line - pane.tree.scroll_offset.y
    assert "s9.b150.l7" in on_screen(pane)[cursor]  # the highlighted line on screen is the match


async def test_space_folds_and_unfolds_a_branch_of_a_large_tree(studio):
    _, app, pilot = studio
    pane = app.main.query_one(TreePane)
    assert pane.jump("LargeTree/Stage0/Fan0")
    await pilot.pause()
    assert not any("s0.b0 " in line for line in on_screen(pane))  # too many lines to open it at first
    await pilot.press("space")
    await pilot.pause()
    assert "s0.b0" in on_screen(pane)[pane.tree.cursor_line - pane.tree.scroll_offset.y + 1]
    await pilot.press("space")
    await pilot.pause()
    assert not any("s0.b0 " in line for line in on_screen(pane))


async def test_a_step_relabels_the_lines_on_screen(studio):
    _, app, pilot = studio
    pane = app.main.query_one(TreePane)
    assert "○ LargeTree" in line_of(pane, "LargeTree")
    await pilot.press("n")
    await settle(app, pilot)
    assert "● LargeTree" in line_of(pane, "LargeTree")  # the run goes on: stage 0 waits on its pause
    assert "✔ Fan0" in line_of(pane, "Fan0")


async def test_a_line_scrolled_into_view_after_a_step_shows_the_status_the_step_left(studio):
    _, app, pilot = studio
    pane = app.main.query_one(TreePane)
    pane.jump("LargeTree/Stage0/Fan0/s0.b100")  # built, then scrolled away from before the step
    await pilot.pause()
    pane.tree.scroll_home(animate=False)
    await pilot.pause()
    assert not any("s0.b100 " in line for line in on_screen(pane))
    await pilot.press("n")
    await settle(app, pilot)
    app.main.query_one("#tree-search", Input).focus()
    await pilot.press(*"s0.b100", "enter")
    await pilot.pause()
    assert "✔ s0.b100" in line_of(pane, "s0.b100")
    assert "✔ s0.b99" in line_of(pane, "s0.b99")  # the lines above it, drawn as they came into view


async def test_a_line_whose_status_goes_back_to_what_it_first_showed_is_drawn_again(studio, monkeypatch):
    """Changed while scrolled away, drawn as it came back into view, then changed back: the line is drawn
    again (what a line shows is what it was last drawn with, not what it was first drawn with)."""
    _, app, pilot = studio
    pane = app.main.query_one(TreePane)
    tree, fetch, first = pane.tree, app.session.node_view, pane.statuses()
    line = 5
    path = pane._rows.paths[tree.lines[line]]
    assert first[path] is Status.INVALID
    tree.scroll_to(y=200, animate=False)
    await pilot.pause()
    pane.restate({**first, path: Status.SUCCESS}, set(), set(), fetch)
    await pilot.pause()
    tree.scroll_to(y=0, animate=False)
    await pilot.pause()
    assert "✔" in on_screen(pane)[line]
    redrawn, refresh_line = [], type(tree).refresh_line
    monkeypatch.setattr(type(tree), "refresh_line", lambda self, at: (redrawn.append(at), refresh_line(self, at)))
    pane.restate(first, set(), set(), fetch)
    await pilot.pause()
    assert line in redrawn
    assert "○" in on_screen(pane)[line]


async def test_a_report_of_a_node_without_a_row_asks_for_the_whole_tree(studio):
    """A step's changes go to the rows by path, looked up in C with no set of the tick's paths made first:
    a node the rows lack (the tree grew under it) is answered False, for the app to sync the whole tree."""
    _, app, _ = studio
    pane = app.main.query_one(TreePane)
    fetch = app.session.node_view
    done = TickReport(1, Status.RUNNING, changed={DEEP: (Status.INVALID, Status.SUCCESS)}, ticked=[DEEP])
    assert pane.apply([done], set(), fetch)
    assert pane.statuses()[DEEP] is Status.SUCCESS
    grown = TickReport(2, Status.RUNNING, changed={f"{DEEP}/new": (Status.INVALID, Status.SUCCESS)})
    assert not pane.apply([grown], set(), fetch)
