"""A scrolling pane's extent (its virtual size) set without laying the screen out."""

from __future__ import annotations

from textual.geometry import Size
from textual.reactive import Reactive
from textual.scroll_view import ScrollView
from textual.widget import Widget


def set_extent(view: ScrollView, size: Size) -> bool:
    """`view.virtual_size = size` as its scroll range and scrollbars alone; whether it changed.

    Textual's `virtual_size` is a layout reactive: every new extent laid the whole screen out
    again (every widget arranged, every scrollbar drawn), where a pane whose size the stylesheet
    fixes needs only its scroll range. A scrollbar that comes or goes still lays the screen out
    (its own reactive does). `_scroll_update` is Textual's private step of a layout that does
    just this: which scrollbars show, their ranges, the scroll offsets kept in range.
    """
    if size == view.virtual_size:
        return False
    view.set_reactive(Widget.virtual_size, size)
    view._scroll_update(size)
    return True


class FixedExtent:
    """For a scrolling widget whose size the stylesheet fixes and which sets its own extent (Textual's
    Tree, OptionList): each new `virtual_size` sets its scroll range and scrollbars alone, as
    `set_extent` does, not a layout of the whole screen. Put it before the widget's class."""

    virtual_size = Reactive(Size(0, 0), layout=False)

    def watch_virtual_size(self, size: Size) -> None:
        self._scroll_update(size)
