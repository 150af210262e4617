"""One row per checkpoint: tick, root status, branch, what changed. Rows update by key.

Drawn a line at a time, only the lines on screen, each row's line kept once drawn: a checkpoint never
changes once saved, so a step draws its new row (and the rows whose ▶ or cursor moved), at tick 10
as at tick 10,000. A DataTable drew every visible row again for each row added (its render caches
are keyed by an update count and the cursor's position) and laid out the whole screen to grow.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Sequence
from typing import Any, ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..drawn_text import shown
from .extent import set_extent
from .marks import status_text
from .values import fit

COLUMNS = ("", "tick", "status", "branch", "changed")  # the one of any length last: fitted to what is left
PAD = 1  # blank cells each side of a cell
MARK_STYLE = Style(bold=True, color="yellow")
KEPT = 200  # rows' lines kept before those far from the screen are dropped


def field_of(row: Any, name: str, default: Any = None) -> Any:
    """A checkpoint row's field, whether the row is an object or a mapping."""
    return row.get(name, default) if isinstance(row, dict) else getattr(row, name, default)


class Timeline(ScrollView, can_focus=True):
    """Checkpoints of the run; enter on a row views the tree and state as they were then."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home,ctrl+home", "first", "First", show=False),
        Binding("end,ctrl+end", "last", "Last", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "timeline--header", "timeline--even-row", "timeline--odd-row", "timeline--cursor", "timeline--hover"}
    # DataTable's look (the pane was one): the same colours, focused or not, in either theme
    DEFAULT_CSS = """
    Timeline {
        background: $surface;
        color: $foreground;
        &:focus {
            background-tint: $foreground 5%;
            & > .timeline--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .timeline--header {
                background-tint: $foreground 5%;
            }
        }
        &:dark > .timeline--even-row {
            background: $surface-darken-1 40%;
        }
        & > .timeline--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        & > .timeline--even-row {
            background: $surface-lighten-1 50%;
        }
        & > .timeline--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .timeline--hover {
            background: $block-hover-background;
        }
    }
    """

    class Chosen(Message):
        def __init__(self, checkpoint_id: Any) -> None:
            self.checkpoint_id = checkpoint_id
            super().__init__()

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        # The rows last given, top to bottom, and how many of them are synced (the session's own sequence: a
        # key, an index entry and a tuple of cells a row were kept for the run's length, then the rows
        # themselves; a local session builds a row when read), their cells read when drawn; the ids in order,
        # to find a row by its key (None: ids not whole numbers in order, found by a scan)
        self._rows: Sequence[Any] = ()
        self._count = 0
        self._ids: array | None = array("q")
        self._widths = [cell_len(name) for name in COLUMNS[1:]]  # the columns' natural widths
        self._viewing: str | None = None  # the checkpoint shown at the last sync
        self._cursor = 0
        self._hover: int | None = None  # the row under the mouse
        self._drawn: dict[int, tuple[tuple, Strip]] = {}  # row -> (what it was drawn from, its line)
        self._look: tuple | None = None  # styles and widths, worked out once per render_lines

    # -- the rows ------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return self._count

    @property
    def cursor_row(self) -> int:
        return self._cursor

    @property
    def cursor_key(self) -> str | None:
        """The row key (the checkpoint id as text) under the cursor; None without rows."""
        return self._key(self._cursor) if self._count else None

    def get_row_index(self, key: str) -> int:
        found = self._find(key)
        if found is None:
            raise KeyError(key)
        return found

    def _key(self, index: int) -> str:
        ids = self._ids
        return str(ids[index] if ids is not None else field_of(self._rows[index], "id"))

    def _find(self, key: str | None) -> int | None:
        """The row whose key is `key` (None: none)."""
        if key is None:
            return None
        if self._ids is not None:
            try:
                wanted = int(key)
            except ValueError:
                return None
            at = bisect_left(self._ids, wanted)
            return at if at < len(self._ids) and self._ids[at] == wanted and self._key(at) == key else None
        return next((at for at in range(self._count - 1, -1, -1) if self._key(at) == key), None)

    def get_row_at(self, index: int) -> list[str]:
        """The row's cells as drawn (the changed column whole): mark, tick, status, branch, changed."""
        tick, status, branch, summary = self._fields(self._rows[index])
        return ["▶" if self._key(index) == self._viewing else "", str(tick), status_text(status).plain, branch, summary]

    def get_cell(self, key: str, column: str) -> str:
        """One cell of a row by keys (`mark` for the ▶ column)."""
        return self.get_row_at(self.get_row_index(key))[COLUMNS.index("" if column == "mark" else column)]

    def sync(self, rows: Sequence[Any], viewing: Any = None) -> None:
        """Add new checkpoints, update changed ones, drop the ones that are gone. Checkpoints never
        change once saved, so rows that only grew since the last sync cost their new ones (and the
        ▶ of the row viewed): a drain costs the same at tick 10 and tick 10,000."""
        viewing_id = str(field_of(viewing, "id")) if viewing is not None else None
        held = self._count
        # the cursor follows new rows and the view only from where they were: one the user moved it
        # away to (reading an older checkpoint while a followed run grows) stays put
        at_newest = self._cursor >= held - 1
        on_viewed = self._viewing is None or self._find(self._viewing) == self._cursor
        grown = len(rows) >= held and (not held or (str(field_of(rows[0], "id")) == self._key(0) and
                                                    str(field_of(rows[held - 1], "id")) == self._key(held - 1)))
        if grown:
            self._rows = rows
            for at in range(held, len(rows)):
                self._append(rows[at])
        else:  # fewer rows, or another first or last: not the rows held (which are not read again: a
            self._replace(rows)  # local session's old run's would be decoded from the store, row by row)
        self._extend()  # the scroll range first: the cursor may scroll to a new row
        if grown and self._count > held and at_newest:
            self._move(self._count - 1)
        if viewing_id != self._viewing:
            for key in (self._viewing, viewing_id):
                if (found := self._find(key)) is not None:
                    self._refresh_row(found)
            self._viewing = viewing_id
            if (found := self._find(viewing_id)) is not None and on_viewed:  # the cursor on a row newly shown
                self._move(found)

    @staticmethod
    def _fields(row: Any) -> tuple:
        """A row's cells; the branch and the summary (names a user, a tree or a store gave) as drawn:
        the lines are drawn from segments, which no library makes safe."""
        return (field_of(row, "tick"), field_of(row, "status"), shown(str(field_of(row, "branch") or "main")),
                shown(str(field_of(row, "summary") or "")))

    def _append(self, row: Any) -> None:
        ids, checkpoint_id = self._ids, field_of(row, "id")
        if ids is not None and type(checkpoint_id) is int and (not ids or checkpoint_id > ids[-1]):
            ids.append(checkpoint_id)
        else:
            self._ids = None
        self._count += 1
        self._widen(self._fields(row))
        self._refresh_row(self._count - 1)

    def _widen(self, fields: tuple) -> None:
        tick, status, branch, summary = fields
        for column, width in enumerate((len(str(tick)), cell_len(status_text(status).plain), cell_len(branch),
                                        cell_len(summary))):
            if width > self._widths[column]:
                self._widths[column] = width
                self.refresh()  # every row's line is laid out anew

    def _replace(self, rows: Sequence[Any]) -> None:
        """Another timeline (restart, fork, another branch): every row anew."""
        self._rows, self._count, self._ids, self._drawn = rows, 0, array("q"), {}
        self._widths = [cell_len(name) for name in COLUMNS[1:]]
        for row in rows:
            self._append(row)
        self._cursor = min(self._cursor, max(self._count - 1, 0))
        self._hover = None
        self.refresh()

    def _extend(self) -> None:
        """The scrollable extent: a header line and a line per row, set without laying out the
        screen (`set_extent`: ~5 ms at every step otherwise); a scrollbar appearing still lays out."""
        set_extent(self, Size(self._columns(self._room())[1], self._count + 1))

    def _room(self) -> int:
        """The rows' width: the pane's, less the vertical scrollbar once they overflow (worked out
        here, as Textual shows the scrollbar only once the extent is set: the rows fit it at once)."""
        overflow = self._count + 1 > self.size.height
        return self.size.width - (self.styles.scrollbar_size_vertical if overflow else 0)

    def _columns(self, width: int) -> tuple[tuple[int, ...], int]:
        """Each column's width and the table's: the changed column fitted to what the pane has left
        (cut with an ellipsis), its right padding dropped rather than scrolled to."""
        fixed = 1 + sum(self._widths[:-1]) + 2 * PAD * len(COLUMNS)
        changed = max(1, min(self._widths[-1], width - fixed + PAD))
        return (1, *self._widths[:-1], changed), fixed + changed - (PAD if fixed + changed > width else 0)

    def on_resize(self) -> None:
        self._extend()

    # -- the cursor and the mouse ----------------------------------------------------
    def move_cursor(self, row: int, scroll: bool = True) -> None:
        self._move(row, scroll)

    def _move(self, row: int, scroll: bool = True) -> None:
        row = max(0, min(row, self._count - 1))
        if row != self._cursor:
            self._refresh_row(self._cursor)
            self._cursor = row
            self._refresh_row(row)
        if scroll:
            self._show_row(row)

    def _show_row(self, row: int) -> None:
        """Scrolled so that the row is on screen, under the header."""
        shown = max(1, self.scrollable_content_region.height - 1)
        top = round(self.scroll_y)
        if row < top:
            self.scroll_to(y=row, animate=False)
        elif row >= top + shown:
            self.scroll_to(y=row - shown + 1, animate=False)

    def _refresh_row(self, row: int) -> None:
        self.refresh_line(row + 1)  # under the header

    def _row_under(self, event: events.MouseEvent) -> int | None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return None
        row = offset.y - 1 + round(self.scroll_y)
        return row if row < self._count else None

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._hover_on(self._row_under(event))

    def on_leave(self) -> None:
        self._hover_on(None)

    def _hover_on(self, row: int | None) -> None:
        if row != self._hover:
            for drawn in (self._hover, row):
                if drawn is not None:
                    self._refresh_row(drawn)
            self._hover = row

    def on_click(self, event: events.Click) -> None:
        """A click moves the cursor to the row; on the cursor's row it chooses it (as enter)."""
        row = self._row_under(event)
        if row is None:
            return
        event.stop()
        if row == self._cursor:
            self.action_select_cursor()
        else:
            self._move(row)

    def action_select_cursor(self) -> None:
        if self._count:
            self.post_message(self.Chosen(self._key(self._cursor)))

    def action_cursor_up(self) -> None:
        self._key_move(self._cursor - 1)

    def action_cursor_down(self) -> None:
        self._key_move(self._cursor + 1)

    def action_page_up(self) -> None:
        self._key_move(self._cursor - max(1, self.scrollable_content_region.height - 1))

    def action_page_down(self) -> None:
        self._key_move(self._cursor + max(1, self.scrollable_content_region.height - 1))

    def action_first(self) -> None:
        self._key_move(0)

    def action_last(self) -> None:
        self._key_move(self._count - 1)

    def _key_move(self, row: int) -> None:
        self._hover_on(None)  # the keyboard's cursor alone, as DataTable had it
        self._move(row)

    # -- drawing -----------------------------------------------------------------------
    def _look_now(self) -> tuple:
        """What every line is drawn with: the styles (header, even and odd rows, cursor, hover), the
        columns' widths, the table's and the pane's."""
        styles = (self.get_component_styles("timeline--header").rich_style,
                  self.get_component_styles("timeline--even-row").rich_style,
                  self.get_component_styles("timeline--odd-row").rich_style,
                  self.get_component_rich_style("timeline--cursor"),
                  self.get_component_rich_style("timeline--hover"))
        width = self._room()
        return (self.rich_style, styles, *self._columns(width), width)

    def render_lines(self, crop):
        """The look worked out once for the lines drawn, not once a line. The lines kept are those
        of rows near the screen (a line is a few KB: 4,000 checkpoints would keep ~20 MB)."""
        self._look = self._look_now()
        try:
            return super().render_lines(crop)
        finally:
            self._look = None
            if len(self._drawn) > KEPT:
                top, height = round(self.scroll_y), self.size.height
                self._drawn = {row: drawn for row, drawn in self._drawn.items() if top - height <= row < top + 2 * height}

    def render_line(self, y: int) -> Strip:
        look = self._look or self._look_now()
        base, (header, even, odd, cursor, hover), widths, table_width, width = look
        scroll_x = round(self.scroll_x)
        if y == 0:
            line = _line([(name, None) for name in COLUMNS], header, Style(), widths, table_width, width)
            return line.crop(scroll_x, scroll_x + width)
        row = y - 1 + round(self.scroll_y)
        if row >= self._count:
            return Strip.blank(width, base)
        viewed = self._key(row) == self._viewing
        fields = self._fields(self._rows[row])
        key = (fields, viewed, row == self._cursor, row == self._hover, look)
        drawn = self._drawn.get(row)
        if drawn is None or drawn[0] != key:
            tick, status, branch, summary = fields
            shown = status_text(status)
            cells = (("▶" if viewed else "", MARK_STYLE), (str(tick), None), (shown.plain, shown.style),
                     (branch, None), (summary, None))
            over = (hover if row == self._hover else Style()) + (cursor if row == self._cursor else Style())
            drawn = self._drawn[row] = (key, self._draw(cells, even if row % 2 == 0 else odd, over, widths,
                                                        table_width, width))
        return drawn[1].crop(scroll_x, scroll_x + width)

    def _draw(self, *args) -> Strip:
        """A row's line (a seam to count what a change draws)."""
        return _line(*args)


def _line(cells: Sequence[tuple[str, Style | str | None]], row_style: Style, over: Style, widths: tuple,
          table_width: int, width: int) -> Strip:
    """One line of cells, each padded to its column's width (the last one fitted, with an ellipsis),
    then blank to the pane's edge; the cursor's colours over the cells' own (as DataTable drew them)."""
    pre = row_style + over
    segments = []
    for (text, style), column_width in zip(cells, widths, strict=True):
        text = fit(text, column_width)
        segments += [Segment(" " * PAD, pre), Segment(text, pre + _style(style)),
                     Segment(" " * (column_width - cell_len(text) + PAD), pre)]
    segments = list(Segment.apply_style(segments, post_style=Style.from_color(over.color, over.bgcolor)))
    segments.append(Segment(" " * max(0, width - table_width), pre))
    return Strip(segments).adjust_cell_length(max(width, table_width), row_style).simplify()


def _style(style: Style | str | None) -> Style:
    return Style.parse(style) if isinstance(style, str) else style or Style()
