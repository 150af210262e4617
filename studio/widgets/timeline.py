"""One row per checkpoint: tick, root status, what changed, branch. Rows update by key."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

from .marks import status_text

COLUMNS = ("", "tick", "status", "changed", "branch")
CHANGED_WIDTH = 26  # so the branch column stays on screen


def _clip(text: str) -> str:
    return text if len(text) <= CHANGED_WIDTH else text[: CHANGED_WIDTH - 1] + "…"


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
        self._viewing: Any = None  # the checkpoint shown at the last sync

    def on_mount(self) -> None:
        for name in COLUMNS:  # the mark column is sized for ▶ now: cells updated later never widen it
            self.add_column(name, key=name or "mark", width=1 if not name else None)

    def sync(self, rows: Iterable[Any], viewing: Any = None) -> None:
        """Add new checkpoints, update changed ones, drop the ones that are gone."""
        viewing_id = field_of(viewing, "id") if viewing is not None else None
        seen = set()
        for row in rows:
            key = str(field_of(row, "id"))
            seen.add(key)
            cells = ("▶" if viewing_id is not None and str(viewing_id) == key else "",
                     field_of(row, "tick"), field_of(row, "status"), _clip(field_of(row, "summary") or ""),
                     field_of(row, "branch") or "main")
            if self._cells.get(key) == cells:
                continue
            rendered = (Text(cells[0], "bold yellow"), str(cells[1]), status_text(cells[2]), cells[3], cells[4])
            if key in self._cells:
                for column, value in zip(COLUMNS, rendered, strict=True):
                    self.update_cell(key, column or "mark", value)
            else:
                self.add_row(*rendered, key=key)
                self.move_cursor(row=self.row_count - 1)
            self._cells[key] = cells
        for key in [k for k in self._cells if k not in seen]:
            self.remove_row(key)
            del self._cells[key]
        if viewing_id != self._viewing and str(viewing_id) in self._cells:  # the cursor on a row newly shown
            self.move_cursor(row=self.get_row_index(str(viewing_id)))
        self._viewing = viewing_id

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.post_message(self.Chosen(event.row_key.value))
