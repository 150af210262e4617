"""The behaviour tree, live: one line per node, redrawn only where something changed.

The pane keeps what every node's line should show as rows of arrays (`TreeRows`: no object per
node), and a path → `TreeNode` map of the lines built so far. A tick report updates those rows
(status from `report.changed`, the highlight from `report.ticked`) and marks them stale;
paused inside a tick, every line is restated from the frame (what returned so far shows what
it returned, highlighted; a node not reached yet shows `◌`, not yet ticked);
only the stale lines on screen are relabelled, the rest when they scroll into view. A
branch's lines are built when it is first expanded: a tree opens expanded level by level
while it shows at most `OPEN_LINES` lines, so a 100,000-node tree builds a few thousand
Textual nodes, not 100,000, and a tick costs the same as in a small one. Search and
`jump()` read the rows, so they find a node in a branch never opened (and open it).
Nodes that appear or vanish (a subtree compiled on its first tick) are added or removed in
place: the cursor, scroll position and expansion survive.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from py_trees.common import Status
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Size
from textual.reactive import Reactive, var
from textual.widgets import Input, OptionList, Tree
from textual.widgets.option_list import Option
from textual.widgets.tree import TreeNode

from runtime.engine.record import Returns, TickReport

from ..session import NodeView
from .extent import FixedExtent
from .marks import BREAKPOINT, NOT_YET, REBOUND, status_mark, status_name
from .node_tree import NodeTree
from .tree_rows import NONE, TreeRows

TICKED = "on #3b3f1f"  # nodes visited by the last tick
OPEN_LINES = 2_000  # a tree opens expanded, a level at a time, while it shows at most this many lines


def ticked_paths(returns: Returns | None, last: TickReport | None, live: bool) -> set[str]:
    """The lines highlighted as ticked: the frame's record (`returns`: a past tick's, or a held tick's
    so far), else, live, the last tick's."""
    if returns is not None:
        return set(returns.paths)
    return set(last.ticked) if last is not None and live else set()


def node_label(view: NodeView, ticked: bool) -> Text:
    """`◆ ✔ Name  Class  ⟨ns⟩  iter 2/10  ⇄ rebound`, highlighted when the last tick visited it; `◌` in place of
    the status while a tick is held inside and the node has not returned in it yet."""
    label = Text.assemble(
        (BREAKPOINT[0] if view.breakpoint else " ", BREAKPOINT[1]), " ",
        Text(*NOT_YET) if view.pending else status_mark(view.status), " ",
        (view.name, "bold"), "  ",
        (view.class_name, "dim"),
    )
    if view.namespace:
        label.append(f"  ⟨{view.namespace}⟩", "magenta")
    if view.counter:
        label.append(f"  {view.counter}", "cyan")
    if view.rebound:
        label.append(f"  {REBOUND[0]}", REBOUND[1])
    if ticked:
        label.stylize(TICKED)
    return label


def _drawn(view: NodeView, ticked: bool) -> tuple:
    """What a line's label is drawn from: equal, the label is the same."""
    return status_name(view.status), view.counter, view.breakpoint, ticked, view.pending, view.rebound


class NameIndex:
    """Nodes' names in line order, lower-cased and joined into one text: a search key is a `str.find`
    over it, not a loop over 10,000 names in Python (~1.7 ms a key)."""

    SEPARATOR = "\n"  # no search holds it: the box is one line

    def __init__(self, names: Iterable[tuple[str, str]]) -> None:
        self.paths: list[str] = []
        self.starts = array("q")  # where each name begins in the text (8 bytes each, not an int object)
        parts, at = [], 0
        for path, name in names:
            self.paths.append(path)
            self.starts.append(at)
            parts.append(name.lower())
            at += len(parts[-1]) + len(self.SEPARATOR)
        self.index = {path: i for i, path in enumerate(self.paths)}
        self.text = self.SEPARATOR.join(parts)

    def find(self, text: str, after: str | None = None) -> str | None:
        """The first path whose name holds `text`, after `after` (wrapping round), or None."""
        if self.SEPARATOR in text:
            return None
        start = self.index[after] + 1 if after in self.index else 0
        split = self.starts[start] if start < len(self.starts) else len(self.text)
        found = self.text.find(text, split)
        if found < 0:
            found = self.text.find(text, 0, split)
        return self.paths[bisect_right(self.starts, found) - 1] if found >= 0 else None


class SearchBox(Input):
    """The name search. Enter and esc hand the focus back to the tree, so the next key is a command
    again (`n` steps, it does not type an n). Its size is fixed (studio.tcss), so what it holds
    never moves another widget: Textual's Input sets its virtual size on every key, a reactive that
    lays the whole screen out again, a second layout and render per key beside the tree's own."""

    BINDINGS = [Binding("escape", "leave", "Back to the tree", show=False)]
    virtual_size = Reactive(Size(0, 0), layout=False)
    typed = False  # the text changed since the box took the focus: enter keeps the match typing found

    def _on_focus(self, event: events.Focus) -> None:
        self.typed = False
        super()._on_focus(event)

    def action_leave(self) -> None:
        self.query_ancestor(TreePane).tree.focus()


class RunningList(FixedExtent, OptionList):
    """The "running now" list. Its height is fixed (studio.tcss): new options set its scroll range
    alone, where OptionList's virtual size is a layout reactive (the whole screen laid out at every
    step that changes what runs, ~6 ms of a step at 10,000 nodes)."""


class TreePane(Vertical):
    """The tree (`#tree-view`), a name search above it and the "running now" list below."""

    # the path under the cursor, set as the cursor moves: a watcher runs at once, so the node pane
    # that follows it is drawn in the same frame as the cursor (a message would land a frame later)
    selected: var[str | None] = var(None)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._tree_nodes: dict[str, TreeNode[str]] = {}  # the lines built so far
        self._rows = TreeRows([])  # what each node's line should show, built or not
        self._ticked: set[str] = set()
        self._drawn: dict[str, tuple] = {}
        self._running_paths: list[str] | None = None  # None: not filled yet (not `_running`: Textual's flag)
        self._names: NameIndex | None = None  # the names in line order, for search

    def compose(self) -> ComposeResult:
        yield SearchBox(placeholder="search nodes by name (enter: go there, again: next)", id="tree-search")
        tree = NodeTree(self._grow, id="tree-view")
        tree.guide_depth = 3
        yield tree
        yield RunningList(id="running-now")

    def on_mount(self) -> None:
        self.query_one("#running-now", OptionList).border_title = "running now"
        self.watch(self.tree, "scroll_y", self.flush, init=False)
        self.watch(self.tree, "cursor_line", self._cursor_moved, init=False)
        # the search runs as the key changes the box, not on its Changed message: the box, the tree
        # and the node pane then all ask for their repaint before any of them is drawn, one frame
        self.watch(self.query_one("#tree-search", SearchBox), "value", self._search_changed, init=False)

    @property
    def tree(self) -> NodeTree:
        return self.query_one("#tree-view", NodeTree)

    @property
    def selected_path(self) -> str | None:
        node = self.tree.cursor_node
        return node.data if node is not None else None

    @property
    def node_count(self) -> int:
        return len(self._rows)

    def knows(self, paths: Iterable[str]) -> bool:
        index = self._rows.index
        return all(path in index for path in paths)

    def statuses(self) -> dict[str, Any]:
        """Every node's status as its line shows it, or will once it is on screen."""
        rows = self._rows
        return {path: rows.status_of(row) for row, path in enumerate(rows.paths)}

    # -- drawing -------------------------------------------------------------------
    def sync(self, views: list[NodeView], ticked: set[str]) -> None:
        """Match the whole tree: add new nodes, drop vanished ones, restate every line."""
        self._rows = rows = TreeRows(views)
        self._ticked = ticked
        root = views[0].path if views else None
        with self.tree.adding():
            if self.tree.root.data != root:  # another tree (or the first): nothing built is kept
                self.tree.root.remove_children()
                self._tree_nodes.clear()
                self._drawn.clear()
            for path in [p for p in self._tree_nodes if p not in rows.index]:
                node = self._tree_nodes.pop(path)
                self._drawn.pop(path, None)
                if node.parent is not None and node.parent.data in self._tree_nodes:
                    node.remove()
            self._open(root)
        rows.stale[:] = b"\x01" * len(rows)
        self._names = None
        self.call_after_refresh(self.flush)

    def _open(self, root: str | None) -> None:
        """Build the lines shown: under every expanded line, its children. A line new to the tree
        (or a leaf that now has children) opens expanded when its whole level fits in OPEN_LINES
        lines; otherwise it stays collapsed and its children unbuilt until it is expanded."""
        tree, rows = self.tree, self._rows
        if root is None:
            return
        fresh: set[str] = set()
        if root not in self._tree_nodes:
            tree.root.data = root
            tree.root.set_label(self._label(root))
            tree.root._expanded = True
            self._tree_nodes[root] = tree.root
        lines, level = 1, [tree.root]
        while level:
            for node in level:
                if node.allow_expand != rows.has_kids(rows.index[node.data]):
                    node.allow_expand = not node.allow_expand
                    fresh.add(node.data)
            opening = sum(len(rows.kid_paths(node.data)) for node in level
                          if node._expanded or node.data in fresh)
            fits = lines + opening <= OPEN_LINES
            below = []
            for node in level:
                if node.data in fresh and node is not tree.root:
                    node._expanded = fits or not node.allow_expand  # a leaf: expanded as Textual draws it
                if node._expanded:
                    fresh.update(self._grow(node))
                    lines += len(node.children)
                    below += node.children
            level = below

    def _grow(self, node: TreeNode[str]) -> list[str]:
        """Build the children of `node` not built yet, each in its place; the paths built."""
        built, rows = [], self._rows
        with self.tree.adding():
            for index, path in enumerate(rows.kid_paths(node.data)):
                if path not in self._tree_nodes:
                    leaf = not rows.has_kids(rows.index[path])
                    self._tree_nodes[path] = node.add(self._label(path), data=path, before=index, expand=leaf,
                                                      allow_expand=not leaf)
                    built.append(path)
        return built

    def _label(self, path: str) -> Text:
        """A line's label, recorded as drawn."""
        row = self._rows.index[path]
        view, ticked = self._rows.view(row), path in self._ticked
        self._rows.stale[row] = 0
        self._drawn[path] = _drawn(view, ticked)
        return node_label(view, ticked)

    def apply(self, reports: list[TickReport], breakpoints: set[str], fetch: Callable[[str], NodeView]) -> None:
        """Take in tick reports and the breakpoint set; `fetch` re-reads loops whose counter moves."""
        rows = self._rows
        index, status, stale, code = rows.index, rows.status, rows.stale, rows.code
        for report in reports:
            for path, (_, new) in report.changed.items():
                row = index[path]
                status[row] = code(new)
                stale[row] = 1
        if reports:
            ticked = set(reports[-1].ticked)
            rows.mark(ticked ^ self._ticked)
            self._ticked = ticked
            for path in {path for report in reports for path in report.ticked}:  # every tick of the batch
                if index[path] in rows.counters:
                    rows.refetch(index[path], fetch)
        rows.breakpoints = rows.marked(rows.breakpoints, breakpoints)
        self.flush()

    def restate(self, statuses: Mapping[str, Status], ticked: set[str], breakpoints: set[str],
                fetch: Callable[[str], NodeView], pending: frozenset[str] = frozenset()) -> None:
        """The same nodes at another moment (a past checkpoint, back live, a tick held further in):
        each line's status from `statuses` (every node's), `pending` those not returned yet in a tick
        held inside, loops' counters re-read; only the lines that differ are relabelled."""
        rows = self._rows
        rows.pending = rows.marked(rows.pending, pending)
        rows.restatus(statuses)
        for row in list(rows.counters):  # a loop's status and counter as the session reads them
            rows.refetch(row, fetch)
        rows.mark(ticked ^ self._ticked)
        self._ticked = ticked
        self.apply([], breakpoints, fetch)

    def mark_rebound(self, rebound: set[str]) -> None:
        """Say which nodes' ports are bound unlike the tree file says (the frame's); relabel those that
        changed."""
        self._rows.rebound = self._rows.marked(self._rows.rebound, rebound)
        self.flush()

    def flush(self, *_) -> None:
        """Relabel the stale nodes that are on screen (the others wait until they are)."""
        tree, rows = self.tree, self._rows
        top = tree.scroll_offset.y
        for line in range(top, top + tree.size.height):
            node = tree.get_node_at_line(line)
            if node is None:
                break
            path = node.data
            row = rows.index.get(path)
            if row is None or not rows.stale[row]:
                continue
            rows.stale[row] = 0
            if self._drawn.get(path) != _drawn(rows.view(row), path in self._ticked):
                tree.relabel(node, line, self._label(path))

    @on(Tree.NodeExpanded, "#tree-view")
    def _expanded(self) -> None:
        self.call_after_refresh(self.flush)

    def on_resize(self) -> None:
        self.call_after_refresh(self.flush)

    def set_running(self, paths: list[str]) -> None:
        if paths == self._running_paths:
            return
        self._running_paths = paths
        running = self.query_one("#running-now", OptionList)
        running.set_options([Option(Text.assemble(path.rpartition("/")[2], "  ", (path, "dim")), id=path)
                             for path in paths] or [Option(Text("nothing", "dim"), disabled=True)])
        running.can_focus = bool(paths)  # no tab stop on an empty list

    # -- moving around -------------------------------------------------------------
    def jump(self, path: str) -> bool:
        """Put the cursor on a node (expanding its ancestors, building their lines); False if there is none."""
        rows = self._rows
        chain, row = [], rows.index.get(path, NONE)  # the node and its ancestors, up to the root
        while row != NONE:
            chain.append(rows.paths[row])
            row = rows.parent[row]
        if not chain or chain[-1] != self.tree.root.data:
            return False
        tree, expanded = self.tree, False
        for ancestor in reversed(chain[1:]):  # from the root down: expanding one builds the next
            if not self._tree_nodes[ancestor].is_expanded:
                self._tree_nodes[ancestor].expand()
                expanded = True
        node = self._tree_nodes[path]
        if expanded:  # move_cursor reads the node's line from the line index, which expanding made stale
            tree.get_node_at_line(0)  # ... and reading a line rebuilds it
        tree.move_cursor(node)  # scrolls to it too, within the tree's size as last laid out
        if expanded:  # the tree grew: scroll again once the layout has the new size
            tree.call_after_refresh(tree.scroll_to_node, node)
        return True

    def search(self, text: str, after: str | None = None) -> str | None:
        """The first node (after `after`, wrapping) whose name contains `text`, built or not."""
        text = text.strip().lower()
        if not text:
            return None
        if self._names is None:  # walked once per tree shape, not per keystroke
            rows = self._rows
            self._names = NameIndex((rows.paths[row], rows.names[row]) for row in rows.walk())
        return self._names.find(text, after)

    def _search_changed(self, text: str) -> None:
        self.query_one("#tree-search", SearchBox).typed = True
        path = self.search(text)
        if path is not None:
            self.jump(path)

    @on(Input.Submitted, "#tree-search")
    def _search_next(self, event: Input.Submitted) -> None:
        """Enter goes to the match typing found, or (the box unchanged since it took the focus) to
        the next one, and hands the focus to the tree."""
        box = self.query_one("#tree-search", SearchBox)
        if event.value.strip():
            path = self.search(event.value, after=None if box.typed else self.selected_path)
            if path is None:
                self.notify(f"no node named like {event.value!r}", severity="warning")
            else:
                self.jump(path)
        box.typed = False
        self.tree.focus()

    @on(OptionList.OptionSelected, "#running-now")
    def _jump_to_running(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is not None and self.jump(event.option.id):
            self.tree.focus()

    def _cursor_moved(self) -> None:
        self.selected = self.selected_path
