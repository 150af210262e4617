"""The behaviour tree, live: one line per node, redrawn only where something changed.

The pane keeps a path → `TreeNode` map and, per path, what its line should show. A tick
report updates those records (status from `report.changed`, the highlight from
`report.ticked`) and marks them stale; only the stale nodes on screen are relabelled,
the rest when they scroll into view. So a tick costs the same in a 10,000-node tree as
in a small one. Nodes that appear or vanish (a subtree compiled on its first tick) are
added or removed in place: the cursor, scroll position and expansion survive.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from py_trees.common import Status
from rich.cells import cell_len
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, OptionList, Tree
from textual.widgets.option_list import Option
from textual.widgets.tree import TreeNode

from runtime.engine.runner import TickReport

from ..session import NodeView
from .marks import BREAKPOINT, status_mark, status_name

TICKED = "on #3b3f1f"  # nodes visited by the last tick


def node_label(view: NodeView, ticked: bool) -> Text:
    """`◆ ✔ Name  Class  ⟨ns⟩  iter 2/10`, highlighted when the last tick visited it."""
    label = Text.assemble(
        (BREAKPOINT[0] if view.breakpoint else " ", BREAKPOINT[1]), " ",
        status_mark(view.status), " ",
        (view.name, "bold"), "  ",
        (view.class_name, "dim"),
    )
    if view.namespace:
        label.append(f"  ⟨{view.namespace}⟩", "magenta")
    if view.counter:
        label.append(f"  {view.counter}", "cyan")
    if ticked:
        label.stylize(TICKED)
    return label


class NodeTree(Tree[str]):
    """Textual's Tree, made to take a large tree at once: nodes added together re-index the
    tree once, not once per node; a style change (focus) does not re-index it; and a line is
    measured by its label's length instead of rendering it. Textual's Tree rendered and
    re-indexed 10,000 lines many times over for the first screen and on every Tab."""

    _adding = False

    @contextmanager
    def adding(self) -> Iterator[None]:
        self._adding = True
        try:
            yield
        finally:
            self._adding = False
            self._invalidate()

    def _invalidate(self) -> None:  # Textual's: clears the line index and caches, lays out again
        if not self._adding:
            super()._invalidate()

    def notify_style_update(self) -> None:
        """A new style (focus moving in or out, a theme) changes how lines look, not which lines
        there are or how wide: drop the drawn lines only, where Textual's Tree re-indexes them all."""
        super(Tree, self).notify_style_update()
        self._line_cache.clear()
        self.refresh()

    def get_label_width(self, node: TreeNode[str]) -> int:
        icon = (self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE) if node.allow_expand else ""
        return cell_len(icon) + node.label.cell_len


class TreePane(Vertical):
    """The tree (`#tree-view`), a name search above it and the "running now" list below."""

    class Selected(Message):
        """The cursor is on another node: the detail pane follows it."""

        def __init__(self, path: str) -> None:
            self.path = path
            super().__init__()

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._tree_nodes: dict[str, TreeNode[str]] = {}
        self._views: dict[str, NodeView] = {}  # what each line should show
        self._ticked: set[str] = set()
        self._stale: set[str] = set()  # lines whose label may be out of date
        self._drawn: dict[str, tuple] = {}
        self._running: list[str] | None = None  # None: not filled yet
        self._names: list[tuple[str, str]] | None = None  # (path, lower-case name) in line order, for search

    def compose(self) -> ComposeResult:
        yield Input(placeholder="search nodes by name (enter: next match)", id="tree-search")
        tree = NodeTree("", id="tree-view")
        tree.guide_depth = 3
        yield tree
        yield OptionList(id="running-now")

    def on_mount(self) -> None:
        self.query_one("#running-now", OptionList).border_title = "running now"
        self.watch(self.tree, "scroll_y", self.flush, init=False)

    @property
    def tree(self) -> NodeTree:
        return self.query_one("#tree-view", NodeTree)

    @property
    def selected_path(self) -> str | None:
        node = self.tree.cursor_node
        return node.data if node is not None else None

    @property
    def node_count(self) -> int:
        return len(self._tree_nodes)

    def knows(self, paths: Iterable[str]) -> bool:
        return all(path in self._tree_nodes for path in paths)

    # -- drawing -------------------------------------------------------------------
    def sync(self, views: list[NodeView], ticked: set[str]) -> None:
        """Match the whole tree: add new nodes, drop vanished ones, restate every line."""
        present = {view.path for view in views}
        with self.tree.adding():
            for path in [p for p in self._tree_nodes if p not in present]:
                node = self._tree_nodes.pop(path)
                self._views.pop(path, None)
                self._drawn.pop(path, None)
                if node.parent is not None and node.parent.data in self._tree_nodes:
                    node.remove()
            self._views = {view.path: view for view in views}
            for view in views:
                if view.path not in self._tree_nodes:
                    self._add(view)
        self._ticked = ticked
        self._stale = set(present)
        self._names = None
        self.call_after_refresh(self.flush)

    def _add(self, view: NodeView) -> None:
        parent = self._tree_nodes.get(view.parent) if view.parent else None
        if parent is None:
            node = self.tree.root
            node.data = view.path
            node.expand()
        else:
            siblings = self._views[view.parent].children
            index = siblings.index(view.path) if view.path in siblings else None
            node = parent.add(Text(view.name), data=view.path, expand=True, allow_expand=bool(view.children),
                              before=min(index, len(parent.children)) if index is not None else None)
        self._tree_nodes[view.path] = node

    def apply(self, reports: list[TickReport], breakpoints: set[str], fetch: Callable[[str], NodeView]) -> None:
        """Take in tick reports and the breakpoint set; `fetch` re-reads loops whose counter moves."""
        for report in reports:
            for path, (_, new) in report.changed.items():
                self._views[path].status = new
            self._stale.update(report.changed)
        if reports:
            ticked = set(reports[-1].ticked)
            self._stale |= ticked ^ self._ticked
            self._ticked = ticked
            for path in {path for report in reports for path in report.ticked}:  # every tick of the batch
                if self._views[path].counter is not None:
                    self._views[path] = fetch(path)
                    self._stale.add(path)
        for path, view in self._views.items():
            if view.breakpoint != (path in breakpoints):
                view.breakpoint = not view.breakpoint
                self._stale.add(path)
        self.flush()

    def restate(self, status_of: Callable[[str], Status], ticked: set[str], breakpoints: set[str],
                fetch: Callable[[str], NodeView]) -> None:
        """The same nodes at another moment (a past checkpoint, or back live): each line's status
        from `status_of`, loops' counters re-read; only the lines that differ are relabelled."""
        views = self._views
        for path, view in views.items():
            status = status_of(path)
            if view.counter is not None:
                views[path] = fetch(path)
                self._stale.add(path)
            elif status != view.status:
                view.status = status
                self._stale.add(path)
        self._stale |= ticked ^ self._ticked
        self._ticked = ticked
        self.apply([], breakpoints, fetch)

    def flush(self, *_) -> None:
        """Relabel the stale nodes that are on screen (the others wait until they are)."""
        tree = self.tree
        top = tree.scroll_offset.y
        for line in range(top, top + tree.size.height):
            node = tree.get_node_at_line(line)
            if node is None:
                break
            path = node.data
            if path not in self._stale:
                continue
            self._stale.discard(path)
            view, ticked = self._views[path], path in self._ticked
            drawn = (status_name(view.status), view.counter, view.breakpoint, ticked)
            if self._drawn.get(path) != drawn:
                self._drawn[path] = drawn
                node.set_label(node_label(view, ticked))

    @on(Tree.NodeExpanded, "#tree-view")
    def _expanded(self) -> None:
        self.call_after_refresh(self.flush)

    def on_resize(self) -> None:
        self.call_after_refresh(self.flush)

    def set_running(self, paths: list[str]) -> None:
        if paths == self._running:
            return
        self._running = paths
        running = self.query_one("#running-now", OptionList)
        running.clear_options()
        running.add_options([Option(Text.assemble(path.rpartition("/")[2], "  ", (path, "dim")), id=path)
                             for path in paths] or [Option(Text("nothing", "dim"), disabled=True)])
        running.can_focus = bool(paths)  # no tab stop on an empty list

    # -- moving around -------------------------------------------------------------
    def jump(self, path: str) -> bool:
        """Put the cursor on a node (expanding its ancestors); False if there is none."""
        node = self._tree_nodes.get(path)
        if node is None:
            return False
        tree, parent, expanded = self.tree, node.parent, False
        while parent is not None:
            if not parent.is_expanded:
                parent.expand()
                expanded = True
            parent = parent.parent
        if expanded:  # move_cursor reads the node's line from the line index, which expanding made stale
            tree.get_node_at_line(0)  # ... and reading a line rebuilds it
        tree.move_cursor(node)  # scrolls to it too, within the tree's size as last laid out
        if expanded:  # the tree grew: scroll again once the layout has the new size
            tree.call_after_refresh(tree.scroll_to_node, node)
        return True

    def search(self, text: str, after: str | None = None) -> str | None:
        """The first node (after `after`, wrapping) whose name contains `text`."""
        text = text.strip().lower()
        if not text:
            return None
        if self._names is None:  # walked once per tree shape, not per keystroke
            self._names = [(node.data, self._views[node.data].name.lower()) for node in self._walk()]
        names = self._names
        start = next((i + 1 for i, (path, _) in enumerate(names) if path == after), 0) if after else 0
        return next((path for path, name in names[start:] + names[:start] if text in name), None)

    def _walk(self):
        stack = [self.tree.root]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    @on(Input.Changed, "#tree-search")
    def _search_changed(self, event: Input.Changed) -> None:
        path = self.search(event.value)
        if path is not None:
            self.jump(path)

    @on(Input.Submitted, "#tree-search")
    def _search_next(self, event: Input.Submitted) -> None:
        path = self.search(event.value, after=self.selected_path)
        if path is not None:
            self.jump(path)
        else:
            self.notify(f"no node named like {event.value!r}", severity="warning")

    @on(OptionList.OptionSelected, "#running-now")
    def _jump_to_running(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is not None and self.jump(event.option.id):
            self.tree.focus()

    @on(Tree.NodeHighlighted, "#tree-view")
    def _highlighted(self, event: Tree.NodeHighlighted) -> None:
        if event.node.data is not None:
            self.post_message(self.Selected(event.node.data))
