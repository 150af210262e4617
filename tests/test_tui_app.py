"""Pilot tests of the studio: each drives the real app with keys and reads what the panes show.

The scenarios marked `BOTH` run on a local session and on a remote one (the tree in its own
process, attached over the debug protocol): the TUI must not tell them apart.
"""

from __future__ import annotations

import io

from rich.console import Console
from textual.geometry import Region
from textual.widgets import Input, OptionList, Static
from tui_fixtures import (  # noqa: F401
    APPROVAL_TREE,
    BOTH,
    REACT_CALCULATOR,
    SIZE,
    TEXT_PIPELINE,
    pipeline_session,
    session_on,
    settle,
    steady_terminal,
    studio_on,
    until,
)

from runtime import Agent
from sample_trees import large_tree
from studio.app import StudioApp
from studio.loader import LoadedTree
from studio.screens.approval import ApprovalScreen
from studio.screens.bindings_editor import BindingsEditor
from studio.screens.help import HelpScreen
from studio.session import DebugSession, RunState
from studio.widgets.events_pane import EventFilter, EventsPane
from studio.widgets.state_pane import StatePane
from studio.widgets.status_line import StatusLine
from studio.widgets.tree_pane import TreePane

NORMALIZE = "TextPipeline/Normalize"


def tree_label(app: StudioApp, path: str) -> str:
    return str(app.main.query_one(TreePane).label_of(path))


def state_label(app: StudioApp, namespace: str, key: str) -> str:
    return str(app.main.query_one(StatePane)._key_nodes[(namespace, key)].label)


def plain(static: Static) -> str:
    """What a Static shows, as text (its content may be a Rich renderable)."""
    console = Console(width=120, file=io.StringIO(), record=True)
    console.print(static.content)
    return console.export_text()


def status_line(app: StudioApp) -> str:
    return str(app.main.query_one(StatusLine).render())


@BOTH
async def test_step_changes_the_tree_and_the_state(kind, tmp_path):
    async with studio_on(kind, TEXT_PIPELINE, tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        assert "○ Normalize" in tree_label(app, NORMALIZE)
        await pilot.press("n")
        await settle(app, pilot)
        assert "● Normalize" in tree_label(app, NORMALIZE)
        line = status_line(app)
        assert "tick 1" in line and "paused" in line
        assert line.count("tick 1") == 1 and "stepped: " in line and " nodes changed" in line  # what the step did, tick said once
        await pilot.press("n")  # waits for Normalize's async work, which writes state between ticks
        await settle(app, pilot)
        assert "✔ Normalize" in tree_label(app, NORMALIZE)
        label = state_label(app, "", "normalized_text")
        assert "the quick brown fox" in label and label.startswith("●")  # changed by the last tick
        running = app.main.query_one("#running-now", OptionList)
        assert {running.get_option_at_index(i).id for i in range(running.option_count)} == {
            "TextPipeline/Count/AllWords", "TextPipeline/Count/UniqueWords"}


@BOTH
async def test_the_input_is_state_at_tick_0_before_the_first_step(kind, tmp_path):
    """Opened and not stepped, the state pane shows the run's input and the timeline its tick-0
    checkpoint: the input can be read (and edited) before the run moves."""
    async with studio_on(kind, REACT_CALCULATOR, tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        assert "[1 item]" in state_label(app, "", "messages")  # the question asked (was [] until n)
        assert session.state_snapshot()[""]["messages"][0]["content"] == "What is 25 * 4 + 10?"
        assert [row.tick for row in session.checkpoints()] == [0]


@BOTH
async def test_continue_stops_at_a_node_breakpoint(kind, tmp_path):
    async with studio_on(kind, TEXT_PIPELINE, tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        assert app.main.query_one(TreePane).jump("TextPipeline/Summarise")
        await pilot.press("b")
        await settle(app, pilot)
        assert tree_label(app, "TextPipeline/Summarise").startswith("◆")
        await pilot.press("c")
        await settle(app, pilot)
        assert session.last_stop.kind == "breakpoint" and "Summarise" in session.last_stop.message
        assert "breakpoint: before TextPipeline/Summarise" in status_line(app)
        assert session.run_state == RunState.PAUSED


async def test_the_status_line_shows_why_the_run_stopped_whole_at_120_columns(tmp_path):
    """A stop's reason names a node by its path: at 120 columns it comes before the frame's figures
    (they are cut instead) and the line takes more rows only when the reason itself needs them."""
    done = "Calculator/Calculator.loop/Calculator.done"
    session = DebugSession.load(str(REACT_CALCULATOR), db=tmp_path / "runs.db")
    app = StudioApp(session)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert app.main.query_one(TreePane).jump(done)
        await pilot.press("b", "c")
        await settle(app, pilot)
        assert done in session.message
        widget = app.main.query_one(StatusLine)
        for width, rows in ((120, 1), (60, 2)):  # wider: one row; narrower than the reason: the rows it needs
            await pilot.resize_terminal(width, 40)
            await settle(app, pilot)
            await pilot.pause()  # the new height laid out
            shown = "".join(strip.text for strip in widget.render_lines(Region(0, 0, *widget.size))).replace(" ", "")
            assert widget.size.height == rows and done.replace(" ", "") in shown, (width, shown)


@BOTH
async def test_continue_stops_at_a_conditional_breakpoint_set_from_the_palette(kind, tmp_path):
    async with studio_on(kind, TEXT_PIPELINE, tmp_path) as (session, app, pilot):
        await conditional_breakpoint_from_the_palette(app, pilot, session)


async def conditional_breakpoint_from_the_palette(app: StudioApp, pilot, session) -> None:
    await settle(app, pilot)
    await pilot.press("ctrl+p")
    await pilot.pause()
    await pilot.press(*"conditional")
    await pilot.pause(0.3)
    await pilot.press("enter")
    await pilot.pause()
    prompt = app.screen.query_one("#prompt-input", Input)
    prompt.value = "nope > 1"
    await pilot.press("enter")
    await pilot.pause()
    assert "no state key 'nope'" in str(app.screen.query_one("#prompt-error", Static).render())
    prompt.value = "len(normalized_text) > 0"
    await pilot.press("enter")
    await pilot.pause()
    assert app.screen is app.main
    await pilot.press("c")
    await settle(app, pilot)
    assert session.last_stop.message == "breakpoint: when len(normalized_text) > 0"
    assert "breakpoint: when len(normalized_text) > 0" in status_line(app)
    assert session.state_snapshot()[""]["words"] == 0 and session.run_state == RunState.PAUSED


async def test_filter_events_by_type_node_and_text():
    session = pipeline_session()
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("c")
        await settle(app, pilot)
        log = app.main.query_one(EventsPane)
        assert any("tick.completed" in line for line in log.lines)
        await pilot.press("slash")
        await pilot.pause()
        app.screen.query_one("#prompt-input", Input).value = "type:node. node:Count/ -UniqueWords"
        await pilot.press("enter")
        await pilot.pause()
        lines = [line for line in log.lines if line]
        assert lines and all("node.status" in line and "UniqueWords" not in line for line in lines)
        assert any("AllWords" in line for line in lines)
        assert log.border_subtitle == "filter: type:node. node:Count/ -UniqueWords"
        await pilot.press("slash")
        await pilot.pause()
        app.screen.query_one("#prompt-input", Input).value = ""
        await pilot.press("enter")
        await pilot.pause()
        assert len([line for line in log.lines if line]) == len(session.events)


async def test_events_waiting_for_a_drain_when_a_filter_is_applied_show_once():
    """The filter refills the pane from the log, which holds the events a drain has not shown yet: they
    are not added again after it (they showed twice)."""
    session = pipeline_session()
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await session.step()  # its events wait for the next drain
        assert app.main._events
        app.main._refilter("")  # the filter prompt's answer
        app.main.drain()
        seqs = [(event.branch, event.seq) for event in app.main.query_one(EventsPane)._rows]
        assert seqs and len(seqs) == len(set(seqs))


def test_event_filter_terms():
    f = EventFilter.parse("type:tool. -type:tool.call.failed node:Calc -noise")
    assert f.include == {"type": ["tool."], "node": ["calc"]}
    assert f.exclude == {"type": ["tool.call.failed"], "text": ["noise"]}


@BOTH
async def test_edit_a_binding_and_the_next_tick_reads_the_new_key(kind, tmp_path):
    async with session_on(kind, TEXT_PIPELINE, tmp_path) as session:
        session.edit_state(None, "summary", "Hello   BRAVE  World")
        app = StudioApp(session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            app.main.query_one(TreePane).jump(NORMALIZE)
            await pilot.press("e")
            await pilot.pause()
            assert isinstance(app.screen, BindingsEditor)
            app.screen.query_one("#port-0", Input).value = "summary"
            await pilot.click("#apply")
            await settle(app, pilot)
            assert app.screen is app.main
            assert session.bindings()[NORMALIZE]["inputs"] == {"source_text": "summary"}
            assert any(e.type == "binding.changed" and e.payload["new"] == "summary" for e in session.events)
            await pilot.press("n")
            await settle(app, pilot)
            await pilot.press("n")
            await settle(app, pilot)
            assert session.state_snapshot()[""]["normalized_text"] == "hello brave world"
            detail = plain(app.main.query_one("#node-detail-body", Static))
            assert "source_text → summary" in detail


async def test_apply_and_save_keeps_the_bindings_beside_the_store(tmp_path):
    session = pipeline_session(tmp_path)
    app = StudioApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.main.query_one(TreePane).jump(NORMALIZE)
        await pilot.press("e")
        await pilot.pause()
        app.screen.query_one("#port-0", Input).value = "summary"
        await pilot.click("#save")
        await pilot.pause()
        assert app.screen is app.main
        assert session.bindings_file.exists() and session.bindings_file.name.endswith(".bindings.json")
        assert not (tmp_path / "text_pipeline.bindings.json").exists()  # beside the store, not the tree file


@BOTH
async def test_a_bad_binding_is_rejected_with_a_reason(kind, tmp_path):
    async with studio_on(kind, TEXT_PIPELINE, tmp_path) as (session, app, pilot):
        await settle(app, pilot)
        app.main.query_one(TreePane).jump(NORMALIZE)
        await pilot.press("e")
        await pilot.pause()
        app.screen.query_one("#port-0", Input).value = "no_such_key"
        await pilot.pause()
        assert "no state field 'no_such_key'" in str(app.screen.query_one("#port-check-0", Static).render())
        await pilot.click("#apply")
        await pilot.pause()
        assert isinstance(app.screen, BindingsEditor)
        assert "no state field" in str(app.screen.query_one("#bindings-error", Static).render())
        await pilot.press("escape")
        await settle(app, pilot)
        assert session.bindings()[NORMALIZE]["inputs"] == {"source_text": "text"}


@BOTH
async def test_approve_a_pending_tool_call(kind, tmp_path):
    async with studio_on(kind, APPROVAL_TREE, tmp_path) as (session, app, pilot):
        await pilot.press("c")
        await settle(app, pilot)
        assert session.run_state == RunState.SUSPENDED
        assert "suspended for approval" in status_line(app)
        assert isinstance(app.screen, ApprovalScreen)
        assert app.screen.request.tool == "calculator"
        await pilot.click("#approve")
        await until(lambda: session.run_state == RunState.PAUSED)  # answered: held until c or n, both alike
        await settle(app, pilot)
        assert "approval resolved: continue" in status_line(app)
        await pilot.press("c")
        await settle(app, pilot)
        await until(lambda: session.run_state == RunState.FINISHED)
        assert session.state_snapshot()[""]["final_answer"] == "110"


@BOTH
async def test_deny_a_pending_tool_call_with_a_reason(kind, tmp_path):
    async with studio_on(kind, APPROVAL_TREE, tmp_path) as (session, app, pilot):
        await pilot.press("c")
        await settle(app, pilot)
        app.screen.query_one("#approval-reason", Input).value = "not today"
        await pilot.click("#deny")
        await until(lambda: session.run_state == RunState.PAUSED)
        await pilot.press("c")
        await settle(app, pilot)
        await until(lambda: session.run_state == RunState.FINISHED)
        messages = session.state_snapshot()[""]["messages"]
        assert messages[2]["content"] == "Error: tool 'calculator' was not approved: not today"
        assert session.state_snapshot()[""]["final_answer"] == "110"  # the scripted model's next answer


async def test_search_jumps_to_a_node_by_name_and_help_lists_the_keys():
    app = StudioApp(pipeline_session())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.main.query_one("#tree-search", Input).focus()
        await pilot.press(*"unique")
        await pilot.pause()
        assert app.main.query_one(TreePane).selected_path == "TextPipeline/Count/UniqueWords"
        search = app.main.query_one("#tree-search", Input)
        search.value = ""
        await pilot.press("enter")  # enter in an empty search box goes on to the tree, warning of nothing
        await pilot.pause()
        assert app.focused is app.main.query_one(TreePane).tree and not app._notifications
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.main


async def test_enter_and_esc_in_the_search_box_hand_the_keys_back_to_the_commands():
    """After a search, n steps the run: it does not type an n into the box."""
    app = StudioApp(pipeline_session())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        pane, search = app.main.query_one(TreePane), app.main.query_one("#tree-search", Input)
        search.focus()
        await pilot.press(*"words", "enter")  # the match typing found, the tree focused
        await pilot.pause()
        first = pane.selected_path
        assert first is not None and "words" in first.lower() and app.focused is pane.tree
        search.focus()
        await pilot.press("enter")  # the box unchanged since it took the focus: the next match
        await pilot.pause()
        assert pane.selected_path not in (None, first) and "words" in pane.selected_path.lower()
        search.focus()
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is pane.tree and search.value == "words"
        await pilot.press("n")
        await settle(app, pilot)
        assert search.value == "words" and app.session.tick >= 1


async def test_search_lands_on_the_match_inside_collapsed_branches(tmp_path):
    """Expanding a match's ancestors moves every line below them: the cursor must land on the
    match, not on the node now at the line the match had when the tree was last drawn whole."""
    root = large_tree.build_root(total=200, stages=2)
    app = StudioApp(DebugSession(LoadedTree(Agent(root, state_schema=large_tree.LargeState),
                                            tmp_path / "large.py", "build", {})))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        pane = app.main.query_one(TreePane)
        pane.tree.collapse_all()
        await pilot.pause()
        app.main.query_one("#tree-search", Input).focus()
        await pilot.press(*"s1")  # the first name holding "s1" is in the collapsed Stage1/Fan1
        await pilot.pause()
        match = "LargeTree/Stage1/Fan1/s1.b0"
        assert pane.selected_path == match
        assert pane.selected_path == match


async def test_steps_pressed_faster_than_the_ticks_are_each_taken(tmp_path):
    """n pressed four times before the first step is done (a key repeated, a fast typist): four ticks,
    in order, not one; p drops the steps pressed ahead of the one running (here, before any began)."""
    for keys, ticks in (("nnnn", [0, 1, 2, 3, 4]), ("nnnp", [0])):  # tick 0: the input, saved at open
        session = DebugSession.load(str(REACT_CALCULATOR), db=tmp_path / f"{keys}.db")
        app = StudioApp(session)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            for key in keys:
                app.simulate_key(key)  # queued at once: none waits for the one before
            await settle(app, pilot)
            assert [row.tick for row in session.checkpoints()] == ticks, keys
            assert session.tick == ticks[-1]
