"""The runs of a store, newest first — tree, start, status, host — to open one in the studio.

A store that many processes write gains runs while the picker is open, and a run's status
changes as it ends, or as its writer goes (abandoned, `liveness.py`): the table refreshes every
second, updating rows by key.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label

from runtime.memory.checkpoint import CheckpointStore, RunSummary, run_liveness
from runtime.memory.checkpoint.liveness import ABANDONED, RUNNING, SUSPENDED

from ..widgets.marks import status_text

COLUMNS = ("started", "tree", "status", "checkpoints", "host", "run")
REFRESH_SECONDS = 1.0


def _when(run: RunSummary) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run.started or run.first_time))


LIVENESS_STYLES = {RUNNING: "bold cyan", SUSPENDED: "bold magenta", ABANDONED: "bold red"}


def _status(run: RunSummary) -> Text:
    """How it ended; with no end recorded, whether its writer still writes it (or is gone)."""
    liveness = run_liveness(run)
    if liveness.state not in LIVENESS_STYLES:
        return status_text(run.last_status)
    return Text("running…" if liveness.state == RUNNING else str(liveness), LIVENESS_STYLES[liveness.state])


def _tree(run: RunSummary) -> str:
    if run.tree is None:
        return "(no tree file recorded)"
    path, _, function = run.tree.rpartition(":")
    return Path(path).name + ("" if function == "build" else f":{function}")


def _host(run: RunSummary) -> str:
    """Where its writer runs (the one writing it now, else the one that first did)."""
    host, pid = (run.writer.host, run.writer.pid) if run.writer is not None else (run.host, run.pid)
    return f"{host} (pid {pid})" if host else "?"


class RunPicker(Screen[str | None]):
    """Enter opens the selected run (dismissing with its id); q or escape opens none."""

    BINDINGS = [
        Binding("enter", "open", "Open", id="open-run", tooltip="Open the selected run in the studio",
                priority=True),
        Binding("escape,q", "dismiss(None)", "Quit", id="quit-picker", tooltip="Open no run"),
    ]

    def __init__(self, store: CheckpointStore) -> None:
        super().__init__()
        self.store = store
        self._cells: dict[str, tuple] = {}
        self._started: dict[str, float] = {}  # run id -> when it started (the rows' order)

    def compose(self) -> ComposeResult:
        yield Label(f"runs in {self.store.location} — enter opens one", id="picker-title", markup=False)
        yield DataTable(cursor_type="row", zebra_stripes=True, id="runs")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for name in COLUMNS:
            table.add_column(name, key=name)
        self.refresh_runs()
        table.focus()
        self.set_interval(REFRESH_SECONDS, self.refresh_runs)

    def refresh_runs(self) -> None:
        """New runs go on top; rows whose facts changed (a run ended) are updated in place."""
        table = self.query_one(DataTable)
        for run in self.store.runs():
            cells = (_when(run), Text(_tree(run)), _status(run), str(run.checkpoints), Text(_host(run)), Text(run.run_id))
            known = self._cells.get(run.run_id)
            if known == cells:
                continue
            if known is None:
                self._started[run.run_id] = run.started or run.first_time
                table.add_row(*cells, key=run.run_id)
                table.sort("run", key=lambda run_id: self._started[str(run_id)], reverse=True)  # (its cell: Text)
            else:
                for name, value in zip(COLUMNS, cells, strict=True):
                    table.update_cell(run.run_id, name, value, update_width=True)  # "abandoned, …" is wider
            self._cells[run.run_id] = cells

    def action_open(self) -> None:
        table = self.query_one(DataTable)
        if table.row_count:
            self.dismiss(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)


class RunPickerApp(App[str | None]):
    """The picker on its own, before the studio opens on the run chosen (its return value)."""

    CSS_PATH = "../studio.tcss"
    TITLE = "Jianmu Studio — runs"

    def __init__(self, store: CheckpointStore) -> None:
        super().__init__()
        self.store = store

    def on_mount(self) -> None:
        self.push_screen(RunPicker(self.store), self.exit)


__all__ = ["RunPicker", "RunPickerApp"]
