"""The tree pane draws each line from its label's kept segments (studio/widgets/node_tree.py, issue
#14: Textual's Tree drew every line afresh, ~0.2 ms a line). What it draws must be what Textual's
Tree draws, segment for segment (text, colours, and the click targets in the styles' meta), in
every state a line can be in: ticked, with a breakpoint, under the cursor or the mouse, focused or
not, expanded or not, deep in the tree."""

from __future__ import annotations

from textual.widgets import Tree
from tui_fixtures import REACT_CALCULATOR, ROOT, settle, studio_on

from studio.widgets.tree_pane import TreePane

LARGE_TREE = ROOT / "sample_trees" / "large_tree.py"


def _differing_lines(tree) -> list[int]:
    """Screen lines where the pane's drawing and Textual's Tree's differ, each drawn afresh."""
    tree._pseudo_class_state = tree.get_pseudo_class_state()
    tree._pass = None
    x, top = tree.scroll_offset
    lines = range(top, top + tree.size.height)
    tree._line_cache.clear()
    ours = [list(tree._render_line(y, x, x + tree.size.width, tree.rich_style)) for y in lines]
    tree._line_cache.clear()
    textuals = [list(Tree._render_line(tree, y, x, x + tree.size.width, tree.rich_style)) for y in lines]
    tree._line_cache.clear()
    assert any(line for line in textuals)
    return [y for y in range(tree.size.height) if ours[y] != textuals[y]]


async def test_lines_are_drawn_as_textuals_tree_draws_them(tmp_path):
    async with studio_on("local", REACT_CALCULATOR, tmp_path) as (session, app, pilot):
        for _ in range(3):
            await session.step()
        await settle(app, pilot)
        pane = app.main.query_one(TreePane)
        tree = pane.tree
        assert pane._ticked  # highlighted lines, loop counters and namespaces are on screen
        await pilot.press("down", "down", "b")  # a breakpoint on the third line, the cursor on it
        await settle(app, pilot)
        assert _differing_lines(tree) == []
        tree.hover_line = 1
        assert _differing_lines(tree) == []
        tree.cursor_node.collapse()
        await settle(app, pilot)
        assert _differing_lines(tree) == []
        pane.query_one("#tree-search").focus()  # the tree unfocused: its cursor drawn otherwise
        await settle(app, pilot)
        assert _differing_lines(tree) == []


async def test_deep_lines_are_drawn_as_textuals_tree_draws_them(tmp_path):
    async with studio_on("local", LARGE_TREE, tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        pane = app.main.query_one(TreePane)
        assert pane.jump("LargeTree/Stage9/Fan9/s9.b87/s9.b87.l3")
        await settle(app, pilot)
        assert pane.tree.cursor_line >= pane.tree.scroll_y > 0
        assert _differing_lines(pane.tree) == []
