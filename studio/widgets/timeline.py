"""One row per checkpoint: tick, root status, branch, what changed. Rows update by key."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from .marks import status_text
from .values import fit

COLUMNS = ("", "tick", "status", "branch", "changed")  # the one of any length last: a narrow pane cuts only it
CHANGED_WIDTH = 40


def field_of(row: Any, name: str, default: Any = None) -> Any:
    """A checkpoint row's field, whether the row is an object or a mapping."""
    return row.get(name, default) if isinstance(row, dict) else getattr(row, name, default)


class Timeline(DataTable):
    """Checkpoints of the run; enter on a row views the tree and state as they were then."""

    class Chosen(Message):
        def __init__(self, checkpoint_id: Any) -> None:
            self.checkpoint_id = checkpoint_id
            super().__init__()

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self._cells: dict[str, tuple] = {}
        self._order: list[str] = []  # row keys, top to bottom
        self._viewing: str | None = None  # the checkpoint shown at the last sync

    def on_mount(self) -> None:
        for name in COLUMNS:  # the mark column is sized for ▶ now: cells updated later never widen it
            self.add_column(name, key=name or "mark", width=1 if not name else None)

    def sync(self, rows: Sequence[Any], viewing: Any = None) -> None:
        """Add new checkpoints, update changed ones, drop the ones that are gone. Checkpoints never
        change once saved, so rows that only grew since the last sync cost their new ones (and the
        ▶ of the row viewed): a drain costs the same at tick 10 and tick 10,000."""
        viewing_id = str(field_of(viewing, "id")) if viewing is not None else None
        known = self._order
        grown = len(rows) >= len(known) and (not known or (str(field_of(rows[0], "id")) == known[0] and
                                                            str(field_of(rows[len(known) - 1], "id")) == known[-1]))
        if grown:
            for key in {self._viewing, viewing_id} - {None}:
                if key in self._cells:
                    self._put(key, self._cells[key][1:], viewing_id)
            for row in rows[len(known):]:
                self._put(str(field_of(row, "id")), self._fields(row), viewing_id)
        else:
            seen = set()
            for row in rows:
                key = str(field_of(row, "id"))
                seen.add(key)
                self._put(key, self._fields(row), viewing_id)
            for key in [k for k in self._cells if k not in seen]:
                self.remove_row(key)
                del self._cells[key]
            self._order = [str(field_of(row, "id")) for row in rows]
        if viewing_id != self._viewing and viewing_id in self._cells:  # the cursor on a row newly shown
            self.move_cursor(row=self.get_row_index(viewing_id))
        self._viewing = viewing_id

    @staticmethod
    def _fields(row: Any) -> tuple:
        return (field_of(row, "tick"), field_of(row, "status"), field_of(row, "branch") or "main",
                fit(field_of(row, "summary") or "", CHANGED_WIDTH))

    def _put(self, key: str, fields: tuple, viewing_id: str | None) -> None:
        """Add or update one row (only the cells that differ from what is drawn)."""
        cells = ("▶" if key == viewing_id else "", *fields)
        drawn = self._cells.get(key)
        if drawn == cells:
            return
        rendered = (Text(cells[0], "bold yellow"), str(cells[1]), status_text(cells[2]), cells[3], cells[4])
        if drawn is not None:
            self._update_row(key, {column or "mark": value for column, value, old, new
                                   in zip(COLUMNS, rendered, drawn, cells, strict=True) if old != new})
        else:
            self.add_row(*rendered, key=key)
            self._order.append(key)
            self.move_cursor(row=self.row_count - 1)
        self._cells[key] = cells

    def _update_row(self, key: str, values: dict[str, Any]) -> None:
        """New values for cells of one row, that row alone drawn again. DataTable's `update_cell`
        counts an update, which is in the key of every row's cached render: the ▶ moving on enter
        or esc rendered every row again (~10 ms a frame); only this row's renders are dropped here."""
        row_key = RowKey(key)
        for column, value in values.items():
            self._data[row_key][ColumnKey(column)] = value
        index = self.get_row_index(row_key)
        region = self._get_row_region(index)
        for cache, forget in ((self._row_render_cache, lambda cached: cached[0] == row_key),
                              (self._cell_render_cache, lambda cached: cached[0] == row_key),
                              (self._row_renderable_cache, lambda cached: cached[1] == index),
                              (self._line_cache, lambda cached: region.y <= cached[0] < region.bottom)):
            for cached in [cached for cached in cache.keys() if forget(cached)]:  # noqa: SIM118 (no __iter__)
                cache.discard(cached)
        self.refresh_row(index)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.post_message(self.Chosen(event.row_key.value))
