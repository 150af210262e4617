"""The tree pane draws its lines itself, straight from its rows (studio/widgets/node_lines.py, issue
#34): what it draws must read as Textual's Tree draws the same nodes (guides, fold icons, labels),
folded or not, deep in the tree; the snapshots pin the colours."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widgets import Tree
from tui_fixtures import REACT_CALCULATOR, ROOT, settle, studio_on

from studio.widgets.tree_pane import TreePane

LARGE_TREE = ROOT / "sample_trees" / "large_tree.py"


class _TextualTree(App):
    """Textual's Tree of the pane's nodes, expanded as the pane's are, the same size."""

    def __init__(self, pane: TreePane) -> None:
        super().__init__()
        self.pane = pane

    def compose(self) -> ComposeResult:
        pane, lines = self.pane, self.pane.tree
        tree: Tree[int] = Tree(pane.label(0), data=0)
        tree.guide_depth = 3
        tree.root.expand()
        todo = [tree.root]
        while todo:
            node = todo.pop()
            for kid in lines.rows.kids(node.data):
                shown = node.add(pane.label(kid), data=kid, allow_expand=lines.rows.has_kids(kid),
                                 expand=bool(lines.expanded[kid]) or not lines.rows.has_kids(kid))
                if lines.line_of(kid) is not None:
                    todo.append(shown)
        yield tree


async def _textuals(pane: TreePane) -> list[str]:
    """The lines Textual's Tree draws where the pane's tree is scrolled to."""
    lines = pane.tree
    app = _TextualTree(pane)
    async with app.run_test(size=(lines.size.width, lines.size.height)) as pilot:
        await pilot.pause()
        tree = app.query_one(Tree)
        tree.scroll_to(y=lines.scroll_offset.y, animate=False, immediate=True)
        await pilot.pause()
        return [strip.text.rstrip() for strip in tree.render_lines(Region(0, 0, *tree.size))]


def _ours(pane: TreePane) -> list[str]:
    tree = pane.tree
    return [strip.text.rstrip() for strip in tree.render_lines(Region(0, 0, *tree.size))]


async def test_lines_read_as_textuals_tree_draws_them(tmp_path):
    async with studio_on("local", REACT_CALCULATOR, tmp_path) as (session, app, pilot):
        for _ in range(3):
            await session.step()
        await settle(app, pilot)
        pane = app.main.query_one(TreePane)
        assert pane._ticked  # highlighted lines, loop counters and namespaces are on screen
        await pilot.press("down", "down", "b")  # a breakpoint on the third line, the cursor on it
        await settle(app, pilot)
        assert _ours(pane) == await _textuals(pane)
        await pilot.press("up", "space")  # the loop above it folded
        await settle(app, pilot)
        assert "▶" in _ours(pane)[pane.tree.cursor_line]
        assert _ours(pane) == await _textuals(pane)


async def test_deep_lines_read_as_textuals_tree_draws_them(tmp_path):
    async with studio_on("local", LARGE_TREE, tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        pane = app.main.query_one(TreePane)
        assert pane.jump("LargeTree/Stage9/Fan9/s9.b87/s9.b87.l3")
        await settle(app, pilot)
        assert pane.tree.cursor_line >= pane.tree.scroll_y > 0
        assert _ours(pane) == await _textuals(pane)
