"""The behaviour tree, live: one line per node, redrawn only where something changed.

The pane keeps what every node's line should show as rows of arrays (`TreeRows`: no object per
node); its lines (`NodeLines`) are drawn from those rows as they come on screen, nothing is built
for a line that is not. A tick report updates the rows (status from `report.changed`, the highlight
from `report.ticked`); paused inside a tick, every line is restated from the frame (what returned so
far shows what it returned, highlighted; a node not reached yet shows `◌`, not yet ticked); then
only the lines on screen whose label changed are drawn again. A tree opens expanded level by level
while it shows at most `OPEN_LINES` lines. Search and `jump()` read the rows, so they find a node in
a branch never opened (and open it). Nodes that appear or vanish (a subtree compiled on its first
tick) come and go in place: the cursor and expansion survive.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping
from functools import cached_property
from itertools import accumulate, islice, repeat
from operator import add
from typing import Any

from py_trees.common import Status
from rich.cells import cell_len
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Size
from textual.reactive import Reactive, var
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option

from runtime.engine.record import Returns, TickReport

from ..drawn_text import shown
from ..node_views import NodeColumns, NodeView
from .extent import FixedExtent
from .marks import BREAKPOINT, NOT_YET, REBOUND, status_mark
from .node_lines import NodeLines
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
        (shown(view.name), "bold"), "  ",
        (shown(view.class_name), "dim"),
    )
    if view.namespace:
        label.append(f"  ⟨{shown(view.namespace)}⟩", "magenta")
    if view.counter:
        label.append(f"  {view.counter}", "cyan")
    if view.rebound:
        label.append(f"  {REBOUND[0]}", REBOUND[1])
    if ticked:
        label.stylize(TICKED)
    return label


def label_width(view: NodeView) -> int:
    """The cells `node_label(view, ...)` takes, counted without building it."""
    width = 6 + cell_len(shown(view.name)) + cell_len(shown(view.class_name))
    if view.namespace:
        width += 4 + cell_len(shown(view.namespace))
    if view.counter:
        width += 2 + cell_len(view.counter)
    return width + (2 + cell_len(REBOUND[0]) if view.rebound else 0)


def _open(rows: TreeRows, expanded: bytearray, fresh: bytearray) -> None:
    """Which rows new to the tree (`fresh`: or a leaf that now has children) open expanded: level by
    level from the root, a level's fresh rows open when the lines shown so far and the level's
    children fit in OPEN_LINES; otherwise they stay folded until the user opens them."""
    if not len(rows):
        return
    expanded[0] = expanded[0] or fresh[0]  # the root's children are always shown at first
    lines, level = 1, [0]
    while level:
        opening = sum(1 for row in level if expanded[row] or fresh[row] for _ in rows.kids(row))
        fits = lines + opening <= OPEN_LINES
        below = []
        for row in level:
            if fresh[row] and row != 0:
                expanded[row] = fits
            if expanded[row]:
                kids = list(rows.kids(row))
                lines += len(kids)
                below += kids
        level = below


class NameIndex:
    """Nodes' names in line order, lower-cased and joined into one text: a search key is a `str.find`
    over it, not a loop over 10,000 names in Python (~1.7 ms a key)."""

    SEPARATOR = "\n"  # no search holds it: the box is one line

    def __init__(self, paths: list[str], names: Iterable[str]) -> None:
        """`paths` and their nodes' `names`, in line order; built in C (a first search key at 100,000
        nodes built it a name at a time, ~90 ms)."""
        self.paths = paths
        lowered = list(map(str.lower, names))
        ends = accumulate(map(add, map(len, lowered), repeat(len(self.SEPARATOR))), initial=0)
        self.starts = array("q", islice(ends, len(lowered)))  # where each name begins in the text (8 bytes each)
        self.text = self.SEPARATOR.join(lowered)

    @cached_property
    def index(self) -> dict[str, int]:
        """Each path's place: made when a search first goes on from a node (~20 ms at 100,000)."""
        return dict(zip(self.paths, range(len(self.paths)), strict=True))

    def find(self, text: str, after: str | None = None) -> str | None:
        """The first path whose name holds `text`, after `after` (wrapping round), or None."""
        if self.SEPARATOR in text:
            return None
        start = self.index[after] + 1 if after is not None and after in self.index else 0
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
        self._rows = TreeRows(NodeColumns.of(()))  # what each node's line shows
        self._ticked: set[str] = set()
        self._running_paths: list[str] | None = None  # None: not filled yet (not `_running`: Textual's flag)
        self._names: NameIndex | None = None  # the names in line order, for search

    def compose(self) -> ComposeResult:
        yield SearchBox(placeholder="search nodes by name (enter: go there, again: next)", id="tree-search")
        yield NodeLines(self.label, self._drawn, self._width, id="tree-view")
        yield RunningList(id="running-now")

    def on_mount(self) -> None:
        self.query_one("#running-now", OptionList).border_title = "running now"
        self.watch(self.tree, "cursor_line", self._cursor_moved, init=False)
        # the search runs as the key changes the box, not on its Changed message: the box, the tree
        # and the node pane then all ask for their repaint before any of them is drawn, one frame
        self.watch(self.query_one("#tree-search", SearchBox), "value", self._search_changed, init=False)

    @property
    def tree(self) -> NodeLines:
        return self.query_one("#tree-view", NodeLines)

    @property
    def selected_path(self) -> str | None:
        row = self.tree.cursor_row
        return self._rows.paths[row] if row != NONE else None

    @property
    def node_count(self) -> int:
        return len(self._rows)

    def statuses(self) -> dict[str, Any]:
        """Every node's status as its line shows it, or will once it is on screen."""
        rows = self._rows
        return {path: rows.status_of(row) for row, path in enumerate(rows.paths)}

    def label(self, row: int) -> Text:
        """A row's label, as its line shows it."""
        return node_label(self._rows.view(row), self._rows.paths[row] in self._ticked)

    def label_of(self, path: str) -> Text:
        return self.label(self._rows.index[path])

    def parent_of(self, path: str) -> str | None:
        up = self._rows.parent[self._rows.index[path]]
        return self._rows.paths[up] if up != NONE else None

    def kids_of(self, path: str) -> list[str]:
        return self._rows.kid_paths(path)

    def shown(self, path: str) -> bool:
        """The node has a line (every node above it is expanded)."""
        row = self._rows.index.get(path)
        return row is not None and self.tree.line_of(row) is not None

    def _drawn(self, row: int) -> tuple:
        """What a row's label is drawn from: equal, the label is the same."""
        rows = self._rows
        return (rows.status[row], rows.counters.get(row), row in rows.breakpoints, rows.paths[row] in self._ticked,
                row in rows.pending, row in rows.rebound)

    def _width(self, row: int) -> int:
        return label_width(self._rows.view(row))

    # -- drawing -------------------------------------------------------------------
    def sync(self, views: NodeColumns, ticked: set[str]) -> None:
        """Match the whole tree: new nodes, vanished ones, every line restated; the lines that stay keep
        whether they are expanded."""
        old, was_expanded = self._rows, self.tree.expanded
        self._rows = rows = TreeRows(views)
        self._ticked = ticked
        expanded, fresh = bytearray(len(rows)), bytearray(b"\x01") * len(rows)
        if len(old) and len(rows) and old.paths[0] == rows.paths[0]:  # the same tree (or the first)
            for row, path in enumerate(rows.paths):
                was = old.index.get(path)
                if was is not None and old.has_kids(was) == rows.has_kids(row):
                    fresh[row], expanded[row] = 0, was_expanded[was]
        _open(rows, expanded, fresh)
        self.tree.show(rows, expanded)
        self._names = None

    def apply(self, reports: list[TickReport], breakpoints: set[str], fetch: Callable[[str], NodeView]) -> bool:
        """Take in tick reports and the breakpoint set; `fetch` re-reads loops whose counter moves. False
        when a report changed a node that has no row (the tree grew): the caller syncs the whole tree."""
        rows = self._rows
        try:
            for report in reports:
                rows.take_changes(report.changed)
        except KeyError:
            return False
        if reports:
            self._ticked = set(reports[-1].ticked)
            ticked = self._ticked.union(*(report.ticked for report in reports[:-1])) if len(reports) > 1 \
                else self._ticked  # every tick of the batch
            for row in [row for row in rows.counters if rows.paths[row] in ticked]:
                rows.refetch(row, fetch)
        rows.breakpoints = rows.marked(breakpoints)
        self.flush()
        return True

    def restate(self, statuses: Mapping[str, Status], ticked: set[str], breakpoints: set[str],
                fetch: Callable[[str], NodeView], pending: frozenset[str] = frozenset()) -> None:
        """The same nodes at another moment (a past checkpoint, back live, a tick held further in):
        each line's status from `statuses` (every node's), `pending` those not returned yet in a tick
        held inside, loops' counters re-read."""
        rows = self._rows
        rows.pending = rows.marked(pending)
        rows.restatus(statuses)
        for row in list(rows.counters):  # a loop's status and counter as the session reads them
            rows.refetch(row, fetch)
        self._ticked = ticked
        self.apply([], breakpoints, fetch)

    def mark_rebound(self, rebound: set[str]) -> None:
        """Say which nodes' ports are bound unlike the tree file says (the frame's)."""
        self._rows.rebound = self._rows.marked(rebound)
        self.flush()

    def flush(self) -> None:
        """Draw again the lines on screen that changed (the others are drawn as they come into view)."""
        self.tree.refresh_changed()

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
        """Put the cursor on a node (expanding its ancestors); False if there is none."""
        rows = self._rows
        row = up = rows.index.get(path, NONE)
        while up not in (NONE, 0):  # reachable from the root (a swarm agent hangs under its spawner)
            up = rows.parent[up]
        if up == NONE:
            return False
        tree = self.tree
        tree.move_to(tree.reveal(row))
        return True

    def search(self, text: str, after: str | None = None) -> str | None:
        """The first node (after `after`, wrapping) whose name contains `text`, built or not."""
        text = text.strip().lower()
        if not text:
            return None
        return self.names().find(text, after)

    def names(self) -> NameIndex:
        """The search's index of names, made once per tree shape, not per keystroke (the app makes it
        once the tree is drawn, beside the collection it pays then: not in the first key typed)."""
        if self._names is None:
            rows = self._rows
            order = rows.walk()
            self._names = NameIndex(list(map(rows.paths.__getitem__, order)), map(rows.names.__getitem__, order))
        return self._names

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
