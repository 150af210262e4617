"""The tree pane's lines on Textual's Line API: only the lines on screen are drawn, straight from the rows.

Textual's Tree keeps a `TreeNode` per line and an index of lines rebuilt on every change; at 100,000
nodes that was thousands of objects built before the first frame and a re-index on every expand.
Here the lines shown are an array of row numbers (`TreeRows`), with each line's depth beside it, and
which rows are expanded is a byte per row. `render_line` draws one line from its row: the guides from
its ancestors' rows, the label from the pane (`label`), kept per row while the pane's `key` for it is
unchanged. It looks as Textual's Tree does (its component classes and stylesheet), so a user and a
snapshot see the same tree, and answers its keys but two: shift+right and shift+space (to a parent's
next sibling; fold all siblings) are not bound, and a line is not highlighted under the mouse.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual._segment_tools import line_pad
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.reactive import var
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..node_views import NodeColumns
from .extent import set_extent
from .tree_rows import NONE, TreeRows

LABELS_KEPT = 1_024  # rows whose drawn label is kept: many screens of lines
GUIDE_DEPTH = 3  # cells a level indents
GUIDES = ("   ", "│  ", "└─ ", "├─ ")  # Textual's Tree's default guides at this depth: space, vertical, last, cross
ICON_COLLAPSED, ICON_EXPANDED = "▶ ", "▼ "
TOGGLE = Style.from_meta({"toggle": True})  # a click on the icon folds or unfolds the line (Textual's)


class NodeLines(ScrollView, can_focus=True):
    """The lines of a tree of rows, one per node shown, drawn as they come on screen."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("shift+left", "cursor_parent", "Cursor to parent", show=False),
        Binding("shift+up", "cursor_previous_sibling", "Cursor to previous sibling", show=False),
        Binding("shift+down", "cursor_next_sibling", "Cursor to next sibling", show=False),
        Binding("enter", "toggle_node", "Toggle", show=False),
        Binding("space", "toggle_node", "Toggle", show=False),
        Binding("up", "cursor_up", "Cursor Up", show=False),
        Binding("down", "cursor_down", "Cursor Down", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {"tree--cursor", "tree--guides", "tree--guides-selected", "tree--label"}
    DEFAULT_CSS = """
    NodeLines {
        background: $surface;
        color: $foreground;
        & > .tree--label {}
        & > .tree--guides { color: $surface-lighten-2; }
        & > .tree--guides-selected { color: $block-cursor-blurred-background; }
        & > .tree--cursor {
            text-style: $block-cursor-blurred-text-style;
            background: $block-cursor-blurred-background;
        }
        &:focus {
            background-tint: $foreground 5%;
            & > .tree--cursor {
                color: $block-cursor-foreground;
                background: $block-cursor-background;
                text-style: $block-cursor-text-style;
            }
            & > .tree--guides { color: $surface-lighten-3; }
            & > .tree--guides-selected { color: $block-cursor-background; }
        }
        &:light {
            & > .tree--guides { color: $surface-darken-1; }
            & > .tree--guides-selected { color: $block-cursor-background; }
        }
    }
    """

    cursor_line = var(-1, always_update=True)

    def __init__(self, label: Callable[[int], Text], key: Callable[[int], tuple], width: Callable[[int], int],
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.label = label  # a row's label, as the pane says it
        self.key = key  # what a row's label is drawn from: equal, the label is the same
        self.width_of = width  # a row's label's width in cells, measured without drawing it
        self.rows = TreeRows(NodeColumns.of(()))
        self.expanded = bytearray()  # 1: the row's children are shown (when it is shown)
        self.lines = array("i")  # the rows shown, in line order
        self.depths = array("i")  # each line's depth (the root's is 0)
        self._labels: LRUCache[int, tuple] = LRUCache(LABELS_KEPT)  # row -> (its key, label pieces)
        self._pass: tuple[Style, Style, Style, Style, Style] | None = None  # the styles of the drawing pass

    # -- the model -----------------------------------------------------------------
    @property
    def line_count(self) -> int:
        return len(self.lines)

    @property
    def cursor_row(self) -> int:
        return self.lines[self.cursor_line] if 0 <= self.cursor_line < len(self.lines) else NONE

    def show(self, rows: TreeRows, expanded: bytearray) -> None:
        """Another set of rows (`expanded`: which of them are), the cursor kept on its node if it is still there."""
        cursor = self.rows.paths[self.cursor_row] if self.cursor_row != NONE else None
        self.rows, self.expanded = rows, expanded
        self._labels.clear()
        self.lines, self.depths = array("i"), array("i")
        if len(rows):
            self.lines.append(0)
            self.depths.append(0)
            if expanded[0]:
                self._insert(0, 0)
        self._relaid(rows.index.get(cursor, 0) if cursor is not None else 0)

    def _subtree(self, row: int, depth: int) -> Iterator[tuple[int, int]]:
        """(row, depth) of every line under an expanded `row`, in line order."""
        rows, expanded = self.rows, self.expanded
        stack = [(kid, depth + 1) for kid in reversed(list(rows.kids(row)))]
        while stack:
            kid, at = stack.pop()
            yield kid, at
            if expanded[kid]:
                stack.extend((grandkid, at + 1) for grandkid in reversed(list(rows.kids(kid))))

    def _insert(self, line: int, row: int) -> None:
        """The lines under the expanded `row` (at `line`) put below it."""
        below = list(self._subtree(row, self.depths[line]))
        self.lines[line + 1:line + 1] = array("i", [kid for kid, _ in below])
        self.depths[line + 1:line + 1] = array("i", [depth for _, depth in below])

    def _end_of(self, line: int, limit: int | None = None) -> int:
        """The line after the last one under `line` (or `limit`, if that comes first)."""
        depth, depths, end = self.depths[line], self.depths, line + 1
        last = len(depths) if limit is None else min(limit, len(depths))
        while end < last and depths[end] > depth:
            end += 1
        return end

    def set_expanded(self, row: int, expand: bool) -> None:
        """Fold or unfold a row; its lines (if it is shown) follow."""
        if self.expanded[row] == expand or not self.rows.has_kids(row):
            return
        self.expanded[row] = expand
        line = self.line_of(row)
        if line is None:  # under a folded line: it shows when that one unfolds
            return
        cursor = self.cursor_row
        if expand:
            self._insert(line, row)
        else:
            end = self._end_of(line)
            del self.lines[line + 1:end]
            del self.depths[line + 1:end]
        self._relaid(cursor if self.line_of(cursor) is not None else row)

    def collapse_all(self) -> None:
        """Every row folded but the root: its children alone shown."""
        expanded = bytearray(len(self.rows))
        expanded[:1] = b"\x01"[:len(expanded)]
        self.show(self.rows, expanded)

    def line_of(self, row: int) -> int | None:
        try:
            return self.lines.index(row)
        except ValueError:
            return None

    def reveal(self, row: int) -> int:
        """Expand `row`'s ancestors; its line."""
        chain, up = [], self.rows.parent[row]
        while up != NONE:
            chain.append(up)
            up = self.rows.parent[up]
        for ancestor in reversed(chain):  # from the root down: each expanded one shows the next
            self.set_expanded(ancestor, True)
        line = self.line_of(row)
        assert line is not None
        return line

    def _relaid(self, cursor_row: int) -> None:
        """The extent for the lines now shown, the cursor on `cursor_row` (or the nearest line)."""
        rows, width_of = self.rows, self.width_of
        widths = (depth * GUIDE_DEPTH + (len(ICON_EXPANDED) if rows.has_kids(row) else 0) + width_of(row)
                  for row, depth in zip(self.lines, self.depths, strict=True))
        set_extent(self, Size(max(widths, default=0), len(self.lines)))
        line = self.line_of(cursor_row) if cursor_row != NONE else None
        self.cursor_line = min(max(self.cursor_line, 0), len(self.lines) - 1) if line is None else line
        self.refresh()

    # -- the cursor ----------------------------------------------------------------
    def validate_cursor_line(self, value: int) -> int:
        return min(max(value, 0), len(self.lines) - 1) if self.lines else -1

    def watch_cursor_line(self, previous: int, line: int) -> None:
        if previous != line:
            for at in (previous, line):
                if 0 <= at < len(self.lines):
                    self._refresh_lines_under(at)

    def _refresh_lines_under(self, line: int) -> None:
        """The line and those under it (their guides show which node the cursor is on)."""
        top, height = self.scroll_offset.y, self.size.height
        end = self._end_of(line, top + height)  # the screen's lines at most: the root has every line under it
        if end > line and line < top + height:
            self.refresh_lines(line, end - line)

    def move_to(self, line: int, animate: bool = False) -> None:
        self.cursor_line = line
        self.scroll_to_line(self.cursor_line, animate)

    def scroll_to_line(self, line: int, animate: bool = False) -> None:
        self.scroll_to_region(Region(0, line, self.size.width, 1), animate=animate, force=True,
                              origin_visible=False, x_axis=False)

    def action_cursor_up(self) -> None:
        self.move_to(self.cursor_line - 1)

    def action_cursor_down(self) -> None:
        self.move_to(self.cursor_line + 1)

    def action_page_down(self) -> None:
        self.move_to(self.cursor_line + self.scrollable_content_region.height - 1)

    def action_page_up(self) -> None:
        self.move_to(self.cursor_line - self.scrollable_content_region.height + 1)

    def action_scroll_home(self) -> None:
        self.move_to(0)

    def action_scroll_end(self) -> None:
        self.move_to(len(self.lines) - 1)

    def action_toggle_node(self) -> None:
        row = self.cursor_row
        if row != NONE:
            self.set_expanded(row, not self.expanded[row])

    def action_cursor_parent(self) -> None:
        row = self.cursor_row
        if row != NONE and self.rows.parent[row] != NONE:
            self.move_to(self.line_of(self.rows.parent[row]), animate=True)

    def action_cursor_next_sibling(self) -> None:
        row = self.cursor_row
        if row != NONE:
            kid = self.rows.next_kid[row]
            up = self.rows.parent[row]
            if kid == NONE and up != NONE:
                kid = self.rows.next_kid[up]
            if kid != NONE:
                self.move_to(self.line_of(kid), animate=True)

    def action_cursor_previous_sibling(self) -> None:
        row = self.cursor_row
        up = self.rows.parent[row] if row != NONE else NONE
        if up != NONE:
            kids = list(self.rows.kids(up))
            at = kids.index(row)
            self.move_to(self.line_of(kids[at - 1] if at else up), animate=True)

    async def _on_click(self, event: events.Click) -> None:
        line = event.y + self.scroll_offset.y
        if 0 <= line < len(self.lines):
            if event.style.meta.get("toggle", False):
                row = self.lines[line]
                self.set_expanded(row, not self.expanded[row])
            else:
                self.cursor_line = line

    # -- drawing -------------------------------------------------------------------
    def notify_style_update(self) -> None:
        """A new style (focus moving in or out, a theme) changes how lines look: their labels drawn again."""
        super().notify_style_update()
        self._labels.clear()

    def on_resize(self) -> None:
        """Drawn whole again at its new size (as Textual's Tree is): the first layout paints it outside
        the update a refresh asked for before, and that refresh stays pending until the next one."""
        self.refresh()

    def relabel(self, row: int, line: int) -> None:
        """The row's label drawn again, on its line."""
        self._labels.discard(row)
        self.refresh_line(line)

    def refresh_changed(self) -> None:
        """Draw again the lines on screen whose label is no longer what their row holds."""
        top = self.scroll_offset.y
        lines, labels, key = self.lines, self._labels, self.key
        for line in range(top, min(top + self.size.height, len(lines))):
            row = lines[line]
            kept = labels.get(row)  # None: not drawn since it was last asked for
            if kept is not None and kept[0][0] != key(row):
                self.relabel(row, line)

    def render_lines(self, crop: Region) -> list[Strip]:
        self._pass = self._pass_styles()  # worked out once a pass, not once a line
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        line = y + scroll_y
        if line >= len(self.lines):
            return Strip.blank(width, self.rich_style)
        return self._draw_line(line).crop(scroll_x, scroll_x + width)

    def _pass_styles(self) -> tuple[Style, Style, Style, Style, Style]:
        style = self.get_component_rich_style
        guides = style("tree--guides", partial=True)
        return (self.rich_style, guides, guides + style("tree--guides-selected", partial=True),
                style("tree--label", partial=True), style("tree--cursor", partial=False))

    def _draw_line(self, line: int) -> Strip:
        """A line as Textual's Tree draws it: its guides, then its label, padded to the tree's width."""
        base, guides, guides_selected, label_style, cursor_style = self._pass or self._pass_styles()
        rows, row = self.rows, self.lines[line]
        line_style = base + Style(meta={"line": line})
        chain = [row]  # the row and its ancestors, from the row up
        while (up := rows.parent[chain[-1]]) != NONE:
            chain.append(up)
        chain.reverse()
        cursor = self.cursor_row if self.has_focus else NONE
        selected, segments = chain[0] == cursor, []
        for at, node in enumerate(chain[1:], 1):
            style = line_style + (guides_selected if selected else guides)
            if at < len(chain) - 1:
                segments.append(Segment(GUIDES[0 if rows.next_kid[node] == NONE else 1], style))
            else:
                segments.append(Segment(GUIDES[2 if rows.next_kid[node] == NONE else 3], style))
            selected = selected or node == cursor
        if line == self.cursor_line:
            label_style = label_style + cursor_style
        segments += [Segment(text, line_style + style) for text, style in self._label_pieces(row, label_style)]
        drawn = sum(segment.cell_length for segment in segments)
        return Strip(line_pad(segments, 0, max(self.virtual_size.width, self.size.width) - drawn, line_style))

    def _label_pieces(self, row: int, label_style: Style) -> list[tuple[str, Style]]:
        """The row's toggle icon and label under `label_style` as (text, style) pieces, kept per row."""
        key = (self.key(row), self.expanded[row] if self.rows.has_kids(row) else None, label_style)
        kept = self._labels.get(row)
        if kept is not None and kept[0] == key:
            return kept[1]
        label = self.label(row).copy()
        label.stylize(label_style)
        if self.rows.has_kids(row):
            label = Text.assemble((ICON_EXPANDED if self.expanded[row] else ICON_COLLAPSED, TOGGLE), label)
        pieces = [(segment.text, segment.style or Style()) for segment in label.render(self.app.console)]
        self._labels.discard(row)  # (Textual's LRUCache keeps a key's first value: what the line shows now goes in)
        self._labels[row] = (key, pieces)
        return pieces


__all__ = ["NodeLines"]
