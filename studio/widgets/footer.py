"""The keys line: Textual's Footer, changed in place when keys come, go or turn on and off."""

from __future__ import annotations

from textual.binding import Binding
from textual.geometry import Size
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class _Key(FooterKey):
    """A key mounted in place. Its extent, set by the layout that places it, asks no second layout."""

    virtual_size = Reactive(Size(0, 0), layout=False)


class KeysFooter(Footer):
    """Textual's Footer rebuilds every key whenever a binding changes: ~30 widgets removed, mounted,
    styled and laid out again, ~40 ms after each enter and esc at 10,000 nodes (the live key comes
    and goes), while the terminal is still taking the frame. Here the keys that stay are kept and
    switched on or off, a key that comes is mounted in its place and one that goes is removed; a
    change it cannot place so (keys reordered, grouped keys) rebuilds as Textual does. The keys
    change after the screen has drawn what changed them (as Textual's own Footer rebuilds), so the
    layout a key coming or going needs never holds back the frame of the panes (enter, esc)."""

    virtual_size = Reactive(Size(0, 0), layout=False)  # set by each layout of the keys: no second layout

    def compose(self):
        """The keys at once, laid out with the panes: Textual's Footer composes none at first and
        rebuilds with them once the screen has drawn, a second layout of the whole screen and ~15 keys
        mounted that the first frame's panes waited behind (~0.2-0.5 s of a launch at load)."""
        if self.app.app_focus:  # (unfocused, a browser's start: `bindings_changed` shows them)
            self.set_reactive(Footer._bindings_ready, True)
        for widget in super().compose():
            yield self._compacted(widget)

    def _compacted(self, widget):
        """A key bound to the footer's `compact` given its value before it is mounted: a FooterKey starts
        compact, so each was styled twice as it mounted (its class added, then removed by the binding),
        ~30 restyles before the launch's first frame. (The palette's key is not bound: it stays compact.
        `_reactive_connect` is where Textual keeps a widget's bindings, `data_bind`'s.)"""
        if isinstance(widget, FooterKey) and "compact" in (widget._reactive_connect or {}):
            widget.set_reactive(FooterKey.compact, self.compact)
        return widget

    def bindings_changed(self, screen: Screen) -> None:
        if not screen.app.app_focus and not self.children and self.is_attached and screen is self.screen:
            # Textual's web driver starts the app unfocused (until the page is clicked), and Textual's Footer
            # shows nothing while unfocused: in a browser the keys line stayed empty. It shows them at once.
            self._bindings_ready = True
            self.call_after_refresh(self.recompose)
            return
        if not (self._bindings_ready and screen.app.app_focus and self.is_attached and screen is self.screen):
            super().bindings_changed(screen)
            return
        self.call_after_refresh(self._show_keys, screen)

    def _show_keys(self, screen: Screen) -> None:
        if self.is_attached and not self._change_in_place(self._wanted(screen)):
            super().bindings_changed(screen)

    def _wanted(self, screen: Screen) -> list[tuple[Binding, bool, str]] | None:
        """The keys `compose` would yield now (the first binding of each action, then the command
        palette's), each with whether it is enabled and its tooltip; None when some are grouped."""
        active = screen.active_bindings
        first: dict[str, tuple[Binding, bool, str]] = {}
        for _, binding, enabled, tooltip in active.values():
            if binding.show:
                if binding.group is not None:
                    return None
                first.setdefault(binding.action, (binding, enabled, tooltip))
        wanted = list(first.values())
        palette = active.get(self.app.COMMAND_PALETTE_BINDING)
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE and palette is not None:
            wanted.append((palette.binding, palette.enabled, palette.binding.tooltip or palette.binding.description))
        return wanted

    def _change_in_place(self, wanted: list[tuple[Binding, bool, str]] | None) -> bool:
        shown = list(self.query_children(FooterKey))
        if wanted is None or not shown or len(shown) != len(self.children):  # not built yet, or grouped
            return False
        by_key = {(key.key, key.action): key for key in shown}
        wanted_keys = [(binding.key, binding.action) for binding, _, _ in wanted]
        staying = set(by_key) & set(wanted_keys)
        if ([key for key in wanted_keys if key in staying] != [key for key in by_key if key in staying]
                or any(binding.key == self.app.COMMAND_PALETTE_BINDING for binding, _, _ in wanted
                       if (binding.key, binding.action) not in by_key)):
            return False  # the keys that stay are in another order, or the palette's key comes back
        for place, key in by_key.items():
            if place not in staying:
                key.remove()
        before: FooterKey | None = None
        for binding, enabled, tooltip in wanted:
            key = by_key.get((binding.key, binding.action))
            if key is None:  # as `compose` makes it (binding to the footer needs it as the active pump)
                with self._context():
                    key = self._compacted(_Key(binding.key, self.app.get_key_display(binding), binding.description,
                                               binding.action, disabled=not enabled,
                                               tooltip=tooltip).data_bind(compact=Footer.compact))
                if before is None:
                    self.mount(key, before=0)
                else:
                    self.mount(key, after=before)
            elif key._disabled == enabled:
                key._disabled = not enabled
                key.set_class(not enabled, "-disabled")
            before = key
        return True
