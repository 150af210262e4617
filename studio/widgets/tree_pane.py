"""The behaviour tree, live: one line per node, redrawn only where something changed.

The pane keeps a path → `TreeNode` map and the last label drawn for each path, so a tick
costs one `set_label` per node whose status, counter or highlight changed, whatever the
size of the tree. Nodes that appear or vanish (a subtree compiled on its first tick) are
added or removed in place: the cursor, scroll position and expansion survive.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, OptionList, Tree
from textual.widgets.option_list import Option
from textual.widgets.tree import TreeNode

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
        self._drawn: dict[str, tuple] = {}
        self._names: dict[str, str] = {}
        self._running: list[str] = []

    def compose(self) -> ComposeResult:
        yield Input(placeholder="search nodes by name (enter: next match)", id="tree-search")
        tree: Tree[str] = Tree("", id="tree-view")
        tree.guide_depth = 3
        yield tree
        yield OptionList(id="running-now")

    def on_mount(self) -> None:
        self.query_one("#running-now", OptionList).border_title = "running now"

    @property
    def tree(self) -> Tree[str]:
        return self.query_one("#tree-view", Tree)

    @property
    def selected_path(self) -> str | None:
        node = self.tree.cursor_node
        return node.data if node is not None else None

    def knows(self, paths: Iterable[str]) -> bool:
        return all(path in self._tree_nodes for path in paths)

    # -- drawing -------------------------------------------------------------------
    def sync(self, views: list[NodeView], ticked: set[str]) -> None:
        """Match the whole tree: add new nodes, drop vanished ones, relabel changed ones."""
        present = {view.path for view in views}
        for path in [p for p in self._tree_nodes if p not in present]:
            node = self._tree_nodes.pop(path)
            self._drawn.pop(path, None)
            self._names.pop(path, None)
            if node.parent is not None and node.parent.data in self._tree_nodes:
                node.remove()
        by_path = {view.path: view for view in views}
        for view in views:
            if view.path not in self._tree_nodes:
                self._add(view, by_path)
        self.update(views, ticked)

    def _add(self, view: NodeView, by_path: dict[str, NodeView]) -> None:
        tree = self.tree
        parent = self._tree_nodes.get(view.parent) if view.parent else None
        if parent is None:
            node = tree.root
            node.data = view.path
            node.expand()
        else:
            siblings = by_path[view.parent].children
            index = siblings.index(view.path) if view.path in siblings else None
            position = min(index, len(parent.children)) if index is not None else None
            node = parent.add("", data=view.path, before=position, expand=True,
                              allow_expand=bool(view.children))
        self._tree_nodes[view.path] = node
        self._names[view.path] = view.name.lower()

    def update(self, views: Iterable[NodeView], ticked: set[str]) -> None:
        """Relabel the given nodes where their label would change."""
        for view in views:
            node = self._tree_nodes.get(view.path)
            if node is None:
                continue
            is_ticked = view.path in ticked
            drawn = (status_name(view.status), view.counter, view.breakpoint, is_ticked, view.namespace)
            if self._drawn.get(view.path) != drawn:
                self._drawn[view.path] = drawn
                node.set_label(node_label(view, is_ticked))

    def set_running(self, paths: list[str]) -> None:
        if paths == self._running:
            return
        self._running = paths
        running = self.query_one("#running-now", OptionList)
        running.clear_options()
        running.add_options([Option(Text.assemble(path.rpartition("/")[2], "  ", (path, "dim")), id=path)
                             for path in paths])
        running.display = bool(paths)

    # -- moving around -------------------------------------------------------------
    def jump(self, path: str) -> bool:
        """Put the cursor on a node (expanding its ancestors); False if there is none."""
        node = self._tree_nodes.get(path)
        if node is None:
            return False
        parent = node.parent
        while parent is not None:
            parent.expand()
            parent = parent.parent
        tree = self.tree
        tree.move_cursor(node)
        tree.call_after_refresh(tree.scroll_to_node, node)
        return True

    def search(self, text: str, after: str | None = None) -> str | None:
        """The first node (after `after`, wrapping) whose name contains `text`."""
        text = text.strip().lower()
        if not text:
            return None
        order = [node.data for node in self._walk()]
        start = order.index(after) + 1 if after in order else 0
        for path in order[start:] + order[:start]:
            if text in self._names.get(path, ""):
                return path
        return None

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
