"""The studio on a store: the run picker lists its runs (tree, start, status, host) and opens one; a
run whose writer died is abandoned there, not running (#28.5)."""

from __future__ import annotations

import socket
from pathlib import Path

from textual.widgets import DataTable
from tui_fixtures import SIZE, steady_terminal  # noqa: F401
from writer_process import start_writer, suspended_run

from runtime.memory.checkpoint import open_store
from runtime.memory.checkpoint.liveness import when
from studio.screens.run_picker import RunPickerApp
from studio.session import DebugSession

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = str(ROOT / "sample_trees/text_pipeline.py")


async def _until(pilot, condition, tries: int = 200) -> bool:
    """Let the app run until `condition()` holds (at most `tries` short pauses)."""
    for _ in range(tries):
        if condition():
            return True
        await pilot.pause(0.05)
    return condition()


def _cells(table: DataTable, row: int) -> list[str]:
    return [str(cell) for cell in table.get_row_at(row)]


async def test_the_picker_lists_runs_newest_first_refreshes_and_opens_the_chosen_one(store_name):
    finished = DebugSession.load(PIPELINE, db=store_name)
    await finished.continue_()
    running = DebugSession.load(PIPELINE, db=store_name)
    await running.step()  # another writer is still on this one
    store = open_store(store_name)
    app = RunPickerApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        assert table.row_count == 2
        newest, oldest = _cells(table, 0), _cells(table, 1)
        assert newest[1] == oldest[1] == "text_pipeline.py"
        assert (newest[2], newest[5]) == ("running…", running.run_id)
        assert (oldest[2], oldest[5]) == ("✔ SUCCESS", finished.run_id)
        assert newest[4].startswith(f"{socket.gethostname()} (pid ")
        await running.continue_()  # it ends while the picker is open: its row says so
        late = DebugSession.load(PIPELINE, db=store_name)
        await late.step()  # and a new run appears on top
        assert await _until(pilot, lambda: table.row_count == 3 and _cells(table, 1)[2] == "✔ SUCCESS")
        assert _cells(table, 0)[5] == late.run_id
        await pilot.press("down", "down", "enter")
    assert app.return_value == finished.run_id
    store.close()
    for session in (finished, running, late):
        session.store.close()


async def test_the_picker_tells_a_run_whose_writer_died_from_a_live_and_a_suspended_one(store_name):
    live, live_run = start_writer(store_name)
    dying, dying_run = start_writer(store_name)
    try:
        waiting = suspended_run(store_name)
        store = open_store(store_name)
        app = RunPickerApp(store)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            table = app.screen.query_one(DataTable)
            statuses = lambda: {_cells(table, row)[5]: _cells(table, row)[2] for row in range(table.row_count)}  # noqa: E731
            assert statuses() == {live_run: "running…", dying_run: "running…",
                                  waiting: "suspended: waiting for approval"}
            assert _cells(table, 1)[4] == f"{socket.gethostname()} (pid {dying.pid})"
            dying.kill()  # SIGKILL, while the picker is open: its row says so at the next refresh
            dying.wait()
            assert await _until(pilot, lambda: statuses()[dying_run].startswith("abandoned, last seen ")), statuses()
            (run,) = store.runs(dying_run)
            assert statuses() == {live_run: "running…", dying_run: f"abandoned, last seen {when(run.writer.seen)}",
                                  waiting: "suspended: waiting for approval"}
            assert await _until(pilot, lambda: table.ordered_columns[2].content_width >= len(statuses()[dying_run]))
        store.close()
    finally:
        for proc in (live, dying):
            proc.kill()
            proc.wait()
