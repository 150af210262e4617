"""Every namespace as a tree of keys, each key that differs from the previous checkpoint of
the branch marked old → new (a value written after the tick's checkpoint, by async work
finishing between ticks, says so).

Lists and dicts are collapsed behind a count (a message list can be long) and open on
demand: a key's items are built when it is expanded, not when it is drawn (a past frame's
history is not even read until then). Updates are diffs: a key is redrawn only when its value
or its mark changed.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from runtime.memory.checkpoint import StoreError

from ..timeline import Mark, StoredList, whole
from .extent import set_extent
from .values import preview, summary

MAX_CHILDREN = 500
Key = tuple[str, str]  # (namespace, key); "" is the global namespace


def qualified(namespace: str, key: str) -> str:
    """The name a marker uses: `key` or `ns.key`."""
    return f"{namespace}.{key}" if namespace else key


def _add_children(node: TreeNode, value: Any, depth: int = 0) -> None:
    items = list(value.items() if isinstance(value, dict) else enumerate(value))
    for name, item in items[:MAX_CHILDREN]:
        if isinstance(item, dict | list) and item and depth < 4:
            child = node.add(Text.assemble((str(name), "bold"), "  ", (summary(item), "dim"), "  ",
                                           (preview(item, 60), "dim")))
            _add_children(child, item, depth + 1)
        else:
            node.add_leaf(Text.assemble((str(name), "bold"), " = ", preview(item)))
    if len(items) > MAX_CHILDREN:
        node.add_leaf(Text(f"… {len(items) - MAX_CHILDREN} more", "dim"))


def _same(old: Any, new: Any) -> bool:
    """Whether a key's drawing still shows `new`: a stored list by its reference (its items unread)."""
    if isinstance(old, StoredList) or isinstance(new, StoredList):
        return isinstance(old, StoredList) and old.same_reference(new)
    return old == new


class StatePane(Tree[Key]):
    """`session.state_snapshot()` drawn as namespace → key → value."""

    BINDINGS = [Binding("e", "edit_value", "Edit value", id="edit-state", tooltip="Edit the selected state value")]

    class EditRequested(Message):
        def __init__(self, namespace: str, key: str, value: Any) -> None:
            self.namespace, self.key, self.value = namespace, key, value
            super().__init__()

    class ValueRequested(Message):
        """Enter on a key: show its value whole (space opens and closes a structure in place)."""

        def __init__(self, namespace: str, key: str, value: Any) -> None:
            self.namespace, self.key, self.value = namespace, key, value
            super().__init__()

    def __init__(self, **kwargs) -> None:
        super().__init__("state", **kwargs)
        self.show_root = False
        self.auto_expand = False  # enter opens the full value; space expands
        self._namespace_nodes: dict[str, TreeNode[Key]] = {}
        self._key_nodes: dict[Key, TreeNode[Key]] = {}
        self._values: dict[Key, Any] = {}
        self._marked: dict[Key, Mark] = {}
        self._relabelled = False  # a key's line redrawn in place since the width was last checked

    def show(self, snapshot: dict[str, dict[str, Any]], changes: dict[str, Mark]) -> None:
        """Draw `snapshot`, marking the keys in `changes` ({qualified key: Mark})."""
        marks = {(ns, key): changes[qualified(ns, key)]
                 for ns, values in snapshot.items() for key in values if qualified(ns, key) in changes}
        for ns in [ns for ns in self._namespace_nodes if ns not in snapshot]:
            self._namespace_nodes.pop(ns).remove()
            for gone in [k for k in self._key_nodes if k[0] == ns]:
                self._forget(gone)
        for ns, values in snapshot.items():
            parent = self._namespace_nodes.get(ns)
            if parent is None:
                parent = self._namespace_nodes[ns] = self.root.add(Text(ns or "(global)", "bold magenta"),
                                                                   expand=True)
            for gone in [k for k in self._key_nodes if k[0] == ns and k[1] not in values]:
                self._key_nodes[gone].remove()
                self._forget(gone)
            for key, value in values.items():
                self._draw_key(parent, (ns, key), value, marks.get((ns, key)))
        self._marked = marks
        if self._relabelled:
            self._relabelled = False
            self._fit_width()

    def _on_resize(self, event: events.Resize) -> None:
        """Drawn again at its new size, not laid out: Textual's Tree lays the whole screen out again
        at each resize (the opening's first layout then asked a second before the first frame was
        whole), but only its lines depend on its size (each padded to it), not its extent. In place
        of the Tree's handler (the only other one of the pane's classes)."""
        event.prevent_default()
        self._line_cache.grow(event.size.height)
        self._clear_line_cache()
        self.refresh()

    def _fit_width(self) -> None:
        """As wide as the widest line, as Textual's Tree works out when it re-indexes: a key redrawn
        in place may have made the pane's scroll range wider or narrower. Its lines are drawn again
        only if their padding changed (each is padded to the wider of the range and the pane).
        Textual's line index, guide widths and line cache are private (`_tree_lines`,
        `_get_guide_width`, `_line_cache`): a Tree has no public measure of its lines."""
        old = self.virtual_size.width
        width = max((self.get_label_width(line.node) + line._get_guide_width(self.guide_depth, self.show_root)
                     for line in self._tree_lines), default=old)
        if max(width, self.size.width) != max(old, self.size.width):
            self._line_cache.clear()
            self.refresh()
        set_extent(self, Size(width, self.virtual_size.height))

    def _forget(self, key: Key) -> None:
        self._key_nodes.pop(key, None)
        self._values.pop(key, None)

    def _draw_key(self, parent: TreeNode[Key], key: Key, value: Any, mark: Mark | None) -> None:
        node = self._key_nodes.get(key)
        same_value = node is not None and _same(self._values.get(key), value)
        if same_value and mark == self._marked.get(key):
            return
        label = Text.assemble(("● " if mark else "  ", "bold yellow"), (key[1], "bold"))
        long = isinstance(value, dict | list | StoredList) and bool(value)
        label.append(f"  {summary(value)}" if long else f" = {preview(value)}", "dim" if long else "")
        if mark:
            label.append(f"   {summary(mark.old)} → {summary(mark.new)}", "yellow")
            if mark.between is not None:
                label.append(f"  (t{mark.between}+: between ticks)", "italic yellow")
        if node is None:
            node = self._key_nodes[key] = parent.add(label, data=key, expand=False, allow_expand=long)
        else:  # its line alone drawn again (`set_label`), unless its items must go
            node.set_label(label)
            node.allow_expand = long
            self._relabelled = True
        if not same_value:
            self._values[key] = value
            if node.children:  # removing re-indexes and lays out the pane: only when there is something to remove
                node.remove_children()
            if long and node.is_expanded and self._readable(key):
                _add_children(node, whole(value))

    def on_tree_node_expanded(self, event: Tree.NodeExpanded) -> None:
        """A key's items, built when it is first opened (and again once its value changed)."""
        key = event.node.data
        if event.node is self._key_nodes.get(key) and not event.node.children:
            if self._readable(key):
                _add_children(event.node, whole(self._values[key]))
            else:
                event.node.collapse()

    def _readable(self, key: Key) -> bool:
        """Whether the key's value can be shown whole (a past frame's stored list is read now); if the
        store cannot read it, says why."""
        try:
            whole(self._values[key])
        except StoreError as exc:
            self.notify(str(exc), severity="error")
            return False
        return True

    def _key_at_cursor(self) -> Key | None:
        node = self.cursor_node
        while node is not None and node.data is None:
            node = node.parent
        return node.data if node is not None and node.data in self._values else None

    def action_edit_value(self) -> None:
        key = self._key_at_cursor()
        if key is None:
            self.notify("put the cursor on a state key to edit it", severity="warning")
            return
        if self._readable(key):
            self.post_message(self.EditRequested(*key, whole(self._values[key])))

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        key = self._key_at_cursor()
        if key is not None:
            event.stop()
            if self._readable(key):
                self.post_message(self.ValueRequested(*key, whole(self._values[key])))
