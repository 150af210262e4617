"""The timeline pane: view a past checkpoint, fork after a state edit, replay a recorded run.

The scenarios marked `BOTH` run on a local session and on a remote one (the tree in its own
process recording into a store, attached over the debug protocol).
"""

from __future__ import annotations

from textual.widgets import Input
from tui_fixtures import BOTH, TEXT_PIPELINE, settle, steady_terminal, studio_on, until  # noqa: F401

from studio.screens.choice import ChoiceScreen
from studio.session import RunState
from studio.widgets.node_lines import NodeLines
from studio.widgets.state_pane import StatePane
from studio.widgets.status_line import StatusLine
from studio.widgets.timeline import Timeline, field_of
from studio.widgets.tree_pane import TreePane


async def run_ticks(app, pilot, ticks: int) -> None:
    for _ in range(ticks):
        await pilot.press("n")
        await settle(app, pilot)
        await pilot.pause(0.3)  # async work finishes between ticks
    await settle(app, pilot)


async def choose_checkpoint(app, pilot, row: int) -> None:
    timeline = app.main.query_one(Timeline)
    timeline.focus()
    timeline.move_cursor(row=row)
    await pilot.press("enter")
    await settle(app, pilot)


async def replay_from_the_first_checkpoint(app, pilot) -> None:
    """Tick 0 viewed, then replay (f) from it."""
    await choose_checkpoint(app, pilot, 0)
    await pilot.press("f")
    await pilot.pause()
    await pilot.click("#replay")
    await settle(app, pilot)


def rebuilds(session) -> list[int]:
    """Grows each time the tree pane rebuilds itself from the session's whole tree (`node_views()`)."""
    calls, node_views = [], session.node_views

    def counted():
        calls.append(1)
        return node_views()

    session.node_views = counted
    return calls


def state_label(app, key: str) -> str:
    return str(app.main.query_one(StatePane)._key_nodes[("", key)].label)


@BOTH
async def test_select_a_past_checkpoint_shows_the_past_state_read_only(kind, tmp_path):
    async with studio_on(kind, TEXT_PIPELINE, tmp_path) as (session, app, pilot):
        await run_ticks(app, pilot, 3)
        rows = list(session.checkpoints())
        assert app.main.query_one(Timeline).row_count == len(rows) >= 3
        rebuilt = rebuilds(session)
        await choose_checkpoint(app, pilot, 0)
        assert field_of(session.viewing, "tick") == field_of(rows[0], "tick")
        line = str(app.main.query_one(StatusLine).render())
        assert app.main.query_one(StatePane).styles.border_top[0] == "heavy" and line.startswith(" PAST (read-only)  │ ")
        assert f" │ tick {field_of(rows[0], 'tick')} │" in line
        assert f"esc: back to live (paused, tick {session.tick})" in line  # the live state, named as such
        assert state_label(app, "normalized_text").endswith('= ""')  # not normalised yet at the first tick
        await pilot.press("n")  # stepping is not offered in the past
        await settle(app, pilot)
        assert session.viewing is not None
        await pilot.press("escape")
        await settle(app, pilot)
        assert session.viewing is None and app.main.query_one(StatePane).styles.border_top[0] != "heavy"
        assert "the quick brown fox" in state_label(app, "normalized_text")
        assert rebuilt == []  # the past and back: the same nodes restated, the tree pane never rebuilt


async def test_the_past_border_still_shows_which_pane_has_the_focus(tmp_path):
    """The past's heavy border is lit (the accent colour) on the focused pane, muted on the other."""
    async with studio_on("local", TEXT_PIPELINE, tmp_path) as (session, app, pilot):
        await run_ticks(app, pilot, 2)
        await choose_checkpoint(app, pilot, 0)
        tree, state = app.main.query_one(TreePane), app.main.query_one(StatePane)
        colours = app.theme_variables

        def lit() -> list[str]:
            return [name for name, pane in (("tree", tree), ("state", state))
                    if pane.styles.border_top[1].hex == colours["accent"].upper()]

        assert [pane.styles.border_top[0] for pane in (tree, state)] == ["heavy", "heavy"]
        assert lit() == []  # the timeline has the focus
        for pane, name in ((state, "state"), (tree, "tree")):
            (pane if pane is state else pane.query_one(NodeLines)).focus()
            await pilot.pause()
            assert lit() == [name]
            assert all(p.styles.border_top[1].hex == colours["warning-muted"].upper() for p in (tree, state) if p is not pane)


@BOTH
async def test_a_finished_run_s_past_is_drawn_on_the_tree_pane(kind, tmp_path):
    """With nothing running the tree pane's list of running nodes was empty, and its name shadowed
    Textual's own `_running` flag: the pane stopped asking the screen to repaint it, and a real
    terminal kept its live border and title in the past (the state pane said PAST, the tree not)."""
    async with studio_on(kind, TEXT_PIPELINE, tmp_path) as (session, app, pilot):
        await pilot.press("c")
        await until(lambda: session.run_state == RunState.FINISHED)
        await settle(app, pilot)
        await choose_checkpoint(app, pilot, 0)
        tree = app.main.query_one(TreePane)
        assert "tree — PAST" in tree.border_title and tree.styles.border_top[0] == "heavy"
        assert tree.is_running  # Textual repaints only a running pane: the border above reaches the screen


@BOTH
async def test_fork_after_a_state_edit_shows_the_new_branch(kind, tmp_path):
    async with studio_on(kind, TEXT_PIPELINE, tmp_path) as (session, app, pilot):
        await run_ticks(app, pilot, 2)
        await choose_checkpoint(app, pilot, 0)
        state = app.main.query_one(StatePane)
        state.focus()
        state.move_cursor(state._key_nodes[("", "text")])
        await pilot.press("e")
        await pilot.pause()
        app.screen.query_one("#state-value", Input).value = '"Forked   TEXT"'
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("f")
        await pilot.pause()
        assert isinstance(app.screen, ChoiceScreen)
        await pilot.click("#fork")
        await settle(app, pilot)
        assert session.branch not in (None, "main")
        assert f"branch {session.branch}" in str(app.main.query_one(StatusLine).render())
        await pilot.press("c")
        await settle(app, pilot)
        assert session.state_snapshot()[""]["normalized_text"] == "forked text"
        assert session.branch in {field_of(row, "branch") for row in session.checkpoints()}


@BOTH
async def test_replay_a_finished_run_gives_the_same_result(kind, tmp_path):
    async with studio_on(kind, TEXT_PIPELINE, tmp_path) as (session, app, pilot):
        await pilot.press("c")
        await settle(app, pilot)
        await until(lambda: session.run_state == RunState.FINISHED)  # attached: held at its end for the studio
        recorded = session.state_snapshot()
        await replay_from_the_first_checkpoint(app, pilot)
        assert session.branch == "replay-1" and session.run_state == RunState.PAUSED
        await pilot.press("c")
        await settle(app, pilot)
        await until(lambda: session.run_state == RunState.FINISHED)
        assert session.viewing is None
        assert session.state_snapshot()[""] == recorded[""]


@BOTH
async def test_a_replay_from_a_checkpoint_while_held_takes_the_same_path(kind, tmp_path):
    async with studio_on(kind, TEXT_PIPELINE, tmp_path) as (session, app, pilot):
        await run_ticks(app, pilot, 3)
        recorded = session.state_snapshot()
        await replay_from_the_first_checkpoint(app, pilot)
        assert session.branch == "replay-1" and session.viewing is None and session.tick == 0
        assert "replaying checkpoint" in str(app.main.query_one(StatusLine).render())
        await run_ticks(app, pilot, 3)
        assert session.state_snapshot()[""] == recorded[""]
        assert {field_of(row, "branch") for row in session.checkpoints()} == {"main", "replay-1"}


@BOTH
async def test_replay_with_staged_edits_asks_first(kind, tmp_path):
    async with studio_on(kind, TEXT_PIPELINE, tmp_path) as (session, app, pilot):
        await run_ticks(app, pilot, 2)
        await choose_checkpoint(app, pilot, 0)
        session.edit_state(None, "text", "Staged   TEXT")
        await settle(app, pilot)
        assert 'text = "Staged   TEXT"' in state_label(app, "text")  # the past shows the staged edit
        assert "staged" in str(app.main.query_one(StatePane).border_title)
        await pilot.press("f")
        await pilot.pause()
        await pilot.click("#replay")
        await pilot.pause()
        assert isinstance(app.screen, ChoiceScreen) and "staged edit" in str(app.screen.query_one(".dialog").border_title)
        await pilot.click("#fork")
        await settle(app, pilot)
        assert session.branch == "fork-1"
        assert session.state_snapshot()[""]["text"] == "Staged   TEXT"


@BOTH
async def test_the_viewed_checkpoint_is_marked_and_under_the_cursor(kind, tmp_path):
    async with studio_on(kind, TEXT_PIPELINE, tmp_path) as (session, app, pilot):
        await run_ticks(app, pilot, 2)
        rows = list(session.checkpoints())
        session.select_checkpoint(rows[1].id)  # chosen elsewhere than in the timeline
        await settle(app, pilot)
        timeline = app.main.query_one(Timeline)
        assert timeline.cursor_row == 1
        assert [str(timeline.get_cell(str(row.id), "mark")) for row in rows] == ["", "▶", ""]
        tree = app.main.query_one(TreePane)
        assert "● Normalize" in str(tree.label_of("TextPipeline/Normalize"))  # as at tick 1
        await pilot.press("escape")
        await settle(app, pilot)
        assert [str(timeline.get_cell(str(row.id), "mark")) for row in rows] == ["", "", ""]
        assert "✔ Normalize" in str(tree.label_of("TextPipeline/Normalize"))  # live again


@BOTH
async def test_bindings_edited_in_the_past_are_staged_for_a_fork(kind, tmp_path):
    from textual.widgets import Label

    from studio.screens.bindings_editor import BindingsEditor

    async with studio_on(kind, TEXT_PIPELINE, tmp_path) as (session, app, pilot):
        await run_ticks(app, pilot, 2)
        await choose_checkpoint(app, pilot, 0)
        assert app.main.query_one(TreePane).jump("TextPipeline/Normalize")
        await settle(app, pilot)
        await pilot.press("e")
        await settle(app, pilot)
        assert isinstance(app.screen, BindingsEditor)
        assert "staged: a fork (f) from this checkpoint applies it" in str(app.screen.query_one(".hint", Label).render())
        app.screen.query_one("#port-0", Input).value = "summary"
        await pilot.click("#apply")
        await settle(app, pilot)
        assert not isinstance(app.screen, BindingsEditor) and len(session.staged) == 1
        assert session.bindings()["TextPipeline/Normalize"]["inputs"]["source_text"] == "text"  # live: unchanged
        assert "staged" in str(app.main.query_one(StatePane).border_title)
        await pilot.press("f")
        await pilot.pause()
        await pilot.click("#fork")
        await settle(app, pilot)
        assert session.branch == "fork-1" and "with 1 edit" in session.message
        assert session.bindings()["TextPipeline/Normalize"]["inputs"]["source_text"] == "summary"  # the fork's
