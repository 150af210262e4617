"""A port a debugger rebound is marked in the tree as rebound (now, and in the past as recorded), a
restart says what it keeps, and a port is only rebound to a key of its type."""

from __future__ import annotations

import pytest
from test_tui_app import status_line, tree_label
from textual.widgets import Button, Input, Static
from tui_fixtures import BOTH, TEXT_PIPELINE, session_on, settle, steady_terminal, studio_on  # noqa: F401
from tui_fixtures import until as condition_holds

from studio.screens.bindings_editor import BindingsEditor
from studio.session import EditError

WORDS = "TextPipeline/Count/AllWords"  # its `count` port is bound to `words`, an int
NORMALIZE = "TextPipeline/Normalize"  # its `source_text` port is bound to `text`, a str


@BOTH
async def test_a_rebound_node_is_marked_now_and_in_the_past_from_its_edit_on(kind, tmp_path):
    async with studio_on(kind, TEXT_PIPELINE, tmp_path) as (session, app, pilot):
        await session.step()
        await settle(app, pilot)
        assert "rebound" not in tree_label(app, NORMALIZE)
        session.edit_binding(NORMALIZE, "in", "source_text", "summary")
        await condition_holds(lambda: session.rebound_paths() == {NORMALIZE})
        await settle(app, pilot)
        assert "⇄ rebound" in tree_label(app, NORMALIZE) and "rebound" not in tree_label(app, WORDS)
        await session.step()
        await condition_holds(lambda: len(session.checkpoints()) >= 3)
        before, after = session.checkpoints()[1], session.checkpoints()[-1]
        session.select_checkpoint(before.id)  # saved before the edit: nothing was rebound then
        await condition_holds(lambda: session.viewing is not None and session.viewing.id == before.id)
        await settle(app, pilot)
        assert session.rebound_paths() == set() and "rebound" not in tree_label(app, NORMALIZE)
        session.select_checkpoint(after.id)
        await condition_holds(lambda: session.viewing is not None and session.viewing.id == after.id)
        await settle(app, pilot)
        assert session.rebound_paths() == {NORMALIZE} and "⇄ rebound" in tree_label(app, NORMALIZE)


@BOTH
async def test_a_port_is_rebound_only_to_a_key_of_its_type(kind, tmp_path):
    async with session_on(kind, TEXT_PIPELINE, tmp_path) as session:
        with pytest.raises(EditError, match="port 'count' carries int; state key 'summary' is str"):
            session.validate_binding(WORDS, "out", "count", "summary")
        with pytest.raises(EditError, match="port 'source_text' carries str; state key 'words' is int"):
            session.edit_binding(NORMALIZE, "in", "source_text", "words")
        assert session.validate_binding(NORMALIZE, "in", "source_text", "summary") == "summary"  # str to str
        assert session.rebound_paths() == set()


async def test_restart_keeps_the_rebound_ports_recorded_and_says_so(tmp_path):
    async with studio_on("local", TEXT_PIPELINE, tmp_path) as (session, app, pilot):
        session.toggle_node_breakpoint(WORDS)
        session.edit_binding(NORMALIZE, "in", "source_text", "summary")
        old_run = session.run_id
        await pilot.press("r")
        await condition_holds(lambda: session.run_id != old_run)
        await settle(app, pilot)
        assert "kept 1 breakpoint and rebound ports of TextPipeline/Normalize; state edits are not kept" in (
            status_line(app))
        assert session.rebound_paths() == {NORMALIZE} and "⇄ rebound" in tree_label(app, NORMALIZE)
        port = next(p for p in session.node_detail(NORMALIZE).ports if p.port == "source_text")
        assert port.key == "summary"
        await session.step()  # the new run's record has the edit: its checkpoints say so
        session.select_checkpoint(session.checkpoints()[-1].id)
        assert session.rebound_paths() == {NORMALIZE}


async def test_the_bindings_editor_refuses_a_key_of_another_type_as_it_is_typed(tmp_path):
    async with studio_on("local", TEXT_PIPELINE, tmp_path) as (session, app, pilot):
        app.push_screen(BindingsEditor(session, NORMALIZE))
        await pilot.pause()
        screen = app.screen
        screen.query_one(".port-key", Input).value = "words"
        await pilot.pause()
        assert str(screen.query_one(".port-check", Static).render()) == (
            "✘ port 'source_text' carries str; state key 'words' is int")
        screen.query_one("#apply", Button).press()
        await pilot.pause()
        assert app.screen is screen and session.rebound_paths() == set()  # refused: the editor stays open
        screen.query_one(".port-key", Input).value = "summary"
        await pilot.pause()
        assert str(screen.query_one(".port-check", Static).render()) == "✔"
        screen.query_one("#apply", Button).press()
        await condition_holds(lambda: session.rebound_paths() == {NORMALIZE})
