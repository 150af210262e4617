"""Fits the screen and the keys work: filter examples from the tree, help, palette screenshot, dialogs at 80x24 and 200x50."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_snapshots import WAITING_EVENTS, filter_events, filter_events_with
from textual.widgets import Input
from tui_fixtures import (  # noqa: F401
    REACT_CALCULATOR,
    approval_session,
    pipeline_session,
    settle,
    steady_terminal,
    until,
)

from runtime.engine.events import RuntimeEvent
from studio.app import StudioApp
from studio.event_log import StampedEvent
from studio.screens.bindings_editor import BindingsEditor
from studio.screens.help import HelpScreen
from studio.screens.state_editor import StateEditor
from studio.session import DebugSession
from studio.widgets.events_pane import filter_example, format_event
from studio.widgets.state_pane import StatePane

SIZES = [(80, 24), (200, 50)]
ROOT = Path(__file__).resolve().parents[1]


def test_the_events_type_column_fits_the_longest_type():
    event = RuntimeEvent(seq=1, type="swarm.message.received", time=0, node="a/Wait", payload={})
    line = format_event(StampedEvent("main", event))
    assert "swarm.message.received Wait" in line


def test_the_filter_example_names_nodes_of_the_open_tree():
    session = DebugSession.load(str(REACT_CALCULATOR))
    example = filter_example([view.name for view in session.node_views()])
    assert example == "type:tool. -type:node.status node:Calculator.tools -node:Calculator.done -noise"
    assert filter_example(["Hire researcher"]) == "type:tool. -type:node.status -noise"


async def test_help_names_tab_arrows_enter_and_the_trees_filter_example():
    app = StudioApp(pipeline_session())
    async with app.run_test(size=(120, 45)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        about = str(app.screen.query_one(".hint").render())
        assert "tab / shift+tab go from pane to pane; arrows move inside one; enter opens" in about
        assert "node:UniqueWords -node:Summarise" in about or "node:" in about
        assert app.main.filter_example in about


def test_readme_names_tab_arrows_and_enter():
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "Tab and shift+tab move between panes, the arrows move inside one, and enter opens" in readme


async def test_palette_screenshot_goes_to_the_working_directory_without_downloads(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("studio.app.user_downloads_path", lambda: tmp_path / "no-Downloads-here")
    app = StudioApp(pipeline_session())
    async with app.run_test(size=(100, 30)):
        (screenshot,) = [c for c in app.get_system_commands(app.screen) if c.title == "Screenshot"]
        screenshot.callback()  # what the palette's "Screenshot" runs (after a 0.1 s timer, written by a thread)
        await until(lambda: any("Saved screenshot" in str(n.message) for n in app._notifications))
        (shot,) = tmp_path.glob("*.svg")
        assert shot.read_text().startswith("<svg")
        assert any(str(shot) in str(n.message) for n in app._notifications)  # it says where it really is


# -- dialogs at a small and a large terminal ----------------------------------------------
@pytest.mark.parametrize("size", SIZES, ids=["80x24", "200x50"])
def test_snapshot_replay_fork_dialog(snap_compare, size):
    app = StudioApp(pipeline_session())

    async def run_before(pilot) -> None:
        await filter_events(pilot)
        await pilot.press("n")
        await settle(app, pilot)
        await pilot.press("f")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "200x50"])
def test_snapshot_bindings_editor_with_an_error(snap_compare, size, tmp_path):
    app = StudioApp(pipeline_session(tmp_path))

    async def run_before(pilot) -> None:
        await filter_events(pilot)
        await settle(app, pilot)
        app.main.query_one("#tree").jump("TextPipeline/Normalize")
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, BindingsEditor)
        app.screen.query_one("#port-0", Input).value = "no_such_key"
        await pilot.click("#apply")
        await pilot.hover(None, offset=(0, 0))  # off the button: whether it is drawn hovered is a race
        await settle(app, pilot)  # the error drawn, the panes behind it idle
        await until(lambda: not app.screen.query_one("#apply").has_class("-active"))  # the press's flash over
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "200x50"])
def test_snapshot_approval_dialog_sizes(snap_compare, size, tmp_path):
    app = StudioApp(approval_session(tmp_path))

    async def run_before(pilot) -> None:
        await filter_events_with(pilot, WAITING_EVENTS)
        await pilot.press("c")
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "200x50"])
def test_snapshot_breakpoints_screen(snap_compare, size, tmp_path):
    session = DebugSession.load(str(REACT_CALCULATOR), db=tmp_path / "runs.db")
    session.add_node_breakpoint("Calculator/Calculator.loop/Calculator.llm")
    session.add_condition_breakpoint("rounds >= 2")
    app = StudioApp(session)

    async def run_before(pilot) -> None:
        await filter_events(pilot)
        await pilot.press("c")
        await settle(app, pilot)
        await pilot.press("B")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "200x50"])
def test_snapshot_state_editor_with_an_error(snap_compare, size):
    """The editor's hint and the schema's refusal wrap inside the dialog."""
    app = StudioApp(pipeline_session())

    async def run_before(pilot) -> None:
        await filter_events(pilot)
        state = app.main.query_one(StatePane)
        state.focus()
        state.move_cursor(state._key_nodes[("", "words")])
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, StateEditor)
        app.screen.query_one("#state-value", Input).value = '"many"'
        await pilot.press("enter")
        await settle(app, pilot)
        assert "✘" in str(app.screen.query_one("#state-error").render())

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "200x50"])
def test_snapshot_add_breakpoint_prompt_with_an_error(snap_compare, size, tmp_path):
    """The prompt's hint (what a breakpoint can be) and its refusal wrap."""
    app = StudioApp(DebugSession.load(str(REACT_CALCULATOR), db=tmp_path / "runs.db"))

    async def run_before(pilot) -> None:
        await filter_events(pilot)
        await pilot.press("B")
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        app.screen.query_one("#prompt-input", Input).value = "after:Nowhere"
        await pilot.press("enter")
        await pilot.pause()
        assert "no node named 'Nowhere'" in str(app.screen.query_one("#prompt-error").render())

    assert snap_compare(app, terminal_size=size, run_before=run_before)


# -- the checkpoint CLI ------------------------------------------------------------------
def checkpoint_cli(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runtime.memory.checkpoint", *args], capture_output=True,
                          text=True, timeout=60, cwd=ROOT, **kwargs)


async def recorded_store(tmp_path: Path) -> tuple[Path, str]:
    db = tmp_path / "runs.db"
    session = DebugSession.load(str(REACT_CALCULATOR), db=db)
    await session.continue_()
    return db, session.run_id


async def test_list_shows_the_ids_that_show_takes(tmp_path):
    db, run_id = await recorded_store(tmp_path)
    listing = checkpoint_cli("list", str(db))
    (line,) = listing.stdout.splitlines()  # one line per run, its checkpoint ids at the end
    assert line.startswith(f"{run_id}      7 checkpoints") and line.endswith("ids 1-7")  # tick 0 (the input) + 6
    assert listing.stderr.strip() == f"(show {db} ID prints one checkpoint)"
    shown = checkpoint_cli("show", str(db), "7")
    assert shown.returncode == 0 and '"tick": 6' in shown.stdout


async def test_export_into_a_closed_pipe_exits_quietly(tmp_path):
    db, run_id = await recorded_store(tmp_path)
    process = subprocess.Popen([sys.executable, "-m", "runtime.memory.checkpoint", "export", str(db), "--run", run_id],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    process.stdout.close()  # the reader is gone before the first line
    stderr = process.stderr.read().decode()
    process.wait(timeout=60)
    process.stderr.close()
    assert stderr == "" and process.returncode == 1
