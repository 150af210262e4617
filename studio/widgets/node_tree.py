"""Textual's Tree, made to take a large tree and to draw its lines cheaply.

Nodes added together re-index the tree once, not once per node; a style change (focus) does not
re-index it; a line is measured by its label's length instead of rendering it; a node's children
are built by `grow` when it is expanded, not before; and a line is drawn from its label's segments,
kept per node, with the pass's styles worked out once. Textual's Tree rendered and re-indexed
10,000 lines many times over for the first screen and on every Tab, and drew each line afresh
(~0.2 ms a line: a search key that scrolls draws every line on screen).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import NULL_STYLE, Style
from rich.text import Text
from textual._segment_tools import line_pad
from textual.cache import LRUCache
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from .extent import FixedExtent

LABELS_KEPT = 1_024  # nodes whose drawn label is kept: many screens of lines


class _Line(TreeNode[str]):
    """A tree line whose children are built when it is first expanded (`NodeTree.grow`)."""

    def _expand(self, expand_all: bool) -> None:
        self._tree.grow(self)
        super()._expand(expand_all)


@dataclass(frozen=True)
class _PassStyles:
    """What every line of one drawing pass shares: Textual's Tree asks the CSS for each on every line."""

    width: int
    base: Style
    highlight_line: Style
    guides: Style
    guides_hover: Style
    guides_selected: Style
    guides_hidden: bool
    hover_hidden: bool
    selected_hidden: bool
    label: Style
    highlight: Style
    cursor: Style


class NodeTree(FixedExtent, Tree[str]):
    """Textual's Tree for a large tree (the module's docstring says what differs). Its size is the
    pane's: a new extent (a node expanded, a search's match shown) sets its scroll range alone, not a
    layout of the whole screen (~13 ms, one search key in three)."""

    _adding = 0

    def __init__(self, grow: Callable[[TreeNode[str]], None], **kwargs) -> None:
        self.grow = grow  # builds a node's children, called before it expands
        super().__init__("", **kwargs)
        self._pass: _PassStyles | None = None
        self._guide_strings: dict[tuple[Style, bool], tuple[str, str, str, str]] = {}
        self._labels: LRUCache[int, tuple] = LRUCache(LABELS_KEPT)  # node id -> (its key, label segments)

    @contextmanager
    def adding(self) -> Iterator[None]:
        self._adding += 1
        try:
            yield
        finally:
            self._adding -= 1
            self._invalidate()

    def _invalidate(self) -> None:
        """Textual's (the line index and caches cleared), without its layout of the screen: the new
        extent is set when the lines are next built (`watch_virtual_size`)."""
        if not self._adding:
            self._clear_line_cache()
            self._updates += 1
            self.root._reset()
            self.refresh()

    def _add_node(self, parent: TreeNode[str] | None, label: Text, data: str | None,
                  expand: bool = False) -> TreeNode[str]:
        """Textual's, making a `_Line`."""
        node = _Line(self, parent, self._new_id(), label, data, expanded=expand)
        self._tree_nodes[node._id] = node
        self._updates += 1
        return node

    def notify_style_update(self) -> None:
        """A new style (focus moving in or out, a theme) changes how lines look, not which lines
        there are or how wide: drop the drawn lines only, where Textual's Tree re-indexes them all."""
        super(Tree, self).notify_style_update()
        self._line_cache.clear()
        self.refresh()

    def relabel(self, node: TreeNode[str], line: int, label: Text) -> None:
        """A new label for the node drawn at `line`, that line alone drawn again. Textual's
        `set_label` counts an update of the node, which is in the cached render of every line
        below it: a root whose status changed (enter, esc) drew the whole tree again."""
        node._label = self.process_label(label)
        for cached in [cached for cached in self._line_cache.keys() if cached[0] == line]:  # noqa: SIM118 (no __iter__)
            self._line_cache.discard(cached)
        self._refresh_line(line)

    def get_label_width(self, node: TreeNode[str]) -> int:
        icon = (self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE) if node.allow_expand else ""
        return cell_len(icon) + node.label.cell_len

    # -- drawing -------------------------------------------------------------------
    def render_lines(self, crop: Region) -> list[Strip]:
        self._pass = None  # worked out again by the pass's first line
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        styles = self._pass or self._pass_styles()
        scroll_x, scroll_y = self.scroll_offset
        return self._render_line(y + scroll_y, scroll_x, scroll_x + styles.width, styles.base)

    def _pass_styles(self) -> _PassStyles:
        style = self.get_component_rich_style
        guides = style("tree--guides", partial=True)

        def hidden(component: str) -> bool:  # a transparent colour hides the guides (Textual's rule)
            return self.get_component_styles(component).color.a == 0

        self._pass = _PassStyles(
            width=self.size.width, base=self.rich_style, highlight_line=style("tree--highlight-line"),
            guides=guides, guides_hover=guides + style("tree--guides-hover", partial=True),
            guides_selected=guides + style("tree--guides-selected", partial=True),
            guides_hidden=hidden("tree--guides"), hover_hidden=hidden("tree--guides-hover"),
            selected_hidden=hidden("tree--guides-selected"), label=style("tree--label", partial=True),
            highlight=style("tree--highlight", partial=True), cursor=style("tree--cursor", partial=False))
        self._guide_strings.clear()
        return self._pass

    def _render_line(self, y: int, x1: int, x2: int, base_style: Style) -> Strip:
        """Textual's, with the line drawn by `_draw_line` where it is not cached."""
        tree_lines = self._tree_lines
        width = self.size.width
        if y >= len(tree_lines):
            return Strip.blank(width, base_style)
        line = tree_lines[y]
        is_hover = self.hover_line >= 0 and any(node._hover for node in line.path)
        cache_key = (y, is_hover, width, self._updates, self._pseudo_class_state,
                     tuple(node._updates for node in line.path))
        strip = self._line_cache.get(cache_key)
        if strip is None:
            strip = self._line_cache[cache_key] = self._draw_line(line, y, is_hover, base_style)
        return strip.crop(x1, x2)

    def _draw_line(self, line, y: int, is_hover: bool, base_style: Style) -> Strip:
        """The segments Textual's Tree draws for `line` (its guides, its label, the padding), the
        label's taken from `_label_segments`: each segment's style is the line's plus its own."""
        styles = self._pass or self._pass_styles()
        line_style = (styles.highlight_line if is_hover else base_style) + Style(meta={"line": y})
        path, has_focus = line.path, self.has_focus
        hover, selected = path[0]._hover, path[0]._selected and has_focus
        guide_style, hidden, segments = styles.guides, True, []
        for node in path[1:]:
            hidden = styles.guides_hidden
            if hover:
                guide_style, hidden = styles.guides_hover, styles.hover_hidden
            if selected:
                guide_style, hidden = styles.guides_selected, styles.selected_hidden
            if node is not path[-1]:
                space, vertical, _, _ = self._guides(guide_style, hidden)
                segments.append(Segment(space if node.is_last else vertical, line_style + guide_style))
            hover = hover or node._hover
            selected = (selected or node._selected) and has_focus
        if len(path) > 1:
            _, _, terminator, cross = self._guides(guide_style, hidden)
            segments.append(Segment(terminator if line.last else cross, line_style + guide_style))
        label_style = styles.label
        if self.hover_line == y:
            label_style += styles.highlight
        if self.cursor_line == y:
            label_style += styles.cursor
        segments += [Segment(text, line_style + style) for text, style in self._label_segments(path[-1], label_style)]
        drawn = sum(segment.cell_length for segment in segments)
        return Strip(line_pad(segments, 0, max(self.virtual_size.width, styles.width) - drawn, line_style))

    def _guides(self, style: Style, hidden: bool) -> tuple[str, str, str, str]:
        """Textual's guide strings (space, vertical, terminator, cross) for a guide style, once a pass."""
        strings = self._guide_strings.get((style, hidden))
        if strings is None:
            lines = ("  ", "  ", "  ", "  ")
            if self.show_guides and not hidden:
                lines = self.LINES["bold" if style.bold else "double" if style.underline2 else "default"]
            depth = max(0, self.guide_depth - 2)
            strings = self._guide_strings[(style, hidden)] = tuple(f"{c[0]}{c[1] * depth} " for c in lines)
        return strings

    def _label_segments(self, node: TreeNode[str], label_style: Style) -> list[tuple[str, Style]]:
        """The node's label (its toggle icon, its text under `label_style`) as drawn on no line:
        (text, style) pieces, kept until the label, its expansion or the style changes."""
        key = (node._label, node.is_expanded, node.allow_expand, label_style)
        kept = self._labels.get(node._id)
        if kept is not None and kept[0][0] is key[0] and kept[0][1:] == key[1:]:
            return kept[1]
        label = self.render_label(node, NULL_STYLE, label_style)
        label.stylize(Style(meta={"node": node._id}))
        pieces = [(segment.text, segment.style) for segment in label.render(self.app.console)]
        self._labels[node._id] = (key, pieces)
        return pieces
