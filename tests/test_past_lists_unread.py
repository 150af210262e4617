"""A past frame leaves its stored lists unread until a pane shows their items (issue #14 point 3),
and still shows exactly what the store holds: the key line's count, the marks against the parent,
the items on expand, the value whole on enter and in the editor, the ports' values as validated."""

from __future__ import annotations

import json
import sqlite3

import pytest
from textual.widgets import Input
from tui_fixtures import ROOT, settle, steady_terminal, until  # noqa: F401

from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import open_store
from runtime.node.presets import Message
from studio.app import StudioApp
from studio.edits import EditError
from studio.loader import load_tree
from studio.screens.state_editor import StateEditor
from studio.screens.value import ValueScreen
from studio.session import DebugSession, RunState
from studio.timeline import StoredList, whole
from studio.widgets.state_pane import StatePane
from studio.widgets.values import preview, summary

HISTORY = ROOT / "tests" / "history_tree.py"
LLM = "Calc/Calc.loop/Calc.llm"


def counted_reads(store) -> list[str]:
    """Grows by the list id each time the store reads a stored list's items (`read_list` reads them so too)."""
    reads, read = [], store.read_list_json
    store.read_list_json = lambda list_id, length: reads.append(list_id) or read(list_id, length)
    return reads


async def finished(tmp_path) -> DebugSession:
    session = DebugSession.load(str(HISTORY), db=tmp_path / "runs.db")
    await session.continue_()
    assert session.run_state == RunState.FINISHED, session.message
    return session


def grown(store, run_id: str):
    """The last checkpoint whose message list is longer than its parent's (a stored list both)."""
    infos = store.list(run_id)
    refs = {info.id: store.get(info.id, read_lists=False).lists.get("", {}).get("messages") for info in infos}
    return next(info for info in reversed(infos)
                if refs[info.id] and refs.get(info.parent_id) and refs[info.id][1] > refs[info.parent_id][1])


async def test_a_past_checkpoint_is_drawn_and_marked_from_its_lists_references(tmp_path):
    session = await finished(tmp_path)
    store = open_store(str(tmp_path / "runs.db"))
    try:
        info = grown(store, session.run_id)
        saved, parent = store.get(info.id), store.get(info.parent_id)
        reads = counted_reads(session.store)
        session.select_checkpoint(info.id)
        state, marks = session.state_snapshot(), session.marks()
        session.node_views()
        assert session.frame.tokens > 0
        messages = state[""]["messages"]
        assert isinstance(messages, StoredList) and len(messages) == len(saved.state[""]["messages"])
        assert (summary(marks["messages"].old), summary(marks["messages"].new)) == (
            f"[{len(parent.state['']['messages'])} items]", f"[{len(messages)} items]")
        assert reads == []  # drawn and marked, not read
        assert whole(messages) == saved.state[""]["messages"] and reads == [messages.list_id]
        assert preview(messages) == preview(saved.state[""]["messages"])
    finally:
        store.close()


async def test_the_ports_of_a_past_checkpoint_read_its_history_as_the_schema_validates_it(tmp_path):
    session = await finished(tmp_path)
    info = grown(session.store, session.run_id)
    reads = counted_reads(session.store)
    session.select_checkpoint(info.id)
    session.node_detail("Calc")  # a node with no ports reads nothing
    assert reads == []
    port = next(p for p in session.node_detail(LLM).ports if p.port == "messages")
    restored = ReactiveRunner(load_tree(str(HISTORY)).agent.root, session.runner.state_manager.schema,
                              checkpointer=session.store)
    restored.restore(info.id)
    assert all(type(m) is Message for m in port.value) and port.value == restored.state_manager.get("messages")


async def test_a_list_on_a_new_line_is_compared_item_by_item(tmp_path):
    """A fork stores its lists afresh (new ids): unchanged items are no mark, whatever their ids."""
    session = await finished(tmp_path)
    source = grown(session.store, session.run_id)
    await session.fork_from(source.id)
    fork = session.store.latest(session.run_id, session.branch)
    refs = [session.store.get(i, read_lists=False).lists[""]["messages"] for i in (source.id, fork.id)]
    assert fork.parent_id == source.id and refs[0][0] != refs[1][0] and refs[0][1] == refs[1][1]
    session.select_checkpoint(fork.id)
    assert "messages" not in session.marks()
    assert session.state_snapshot()[""]["messages"] == session.store.get(source.id).state[""]["messages"]


def test_two_references_to_one_stored_list_are_compared_without_reading_it():
    def unread():
        raise AssertionError("read")

    def items(n):
        return lambda: [{"n": i} for i in range(n)]

    assert StoredList("a", 3, unread) == StoredList("a", 3, unread)
    assert StoredList("a", 3, unread) != StoredList("a", 4, unread)
    assert StoredList("a", 3, unread) != StoredList("b", 4, unread)  # lengths differ: no need to read
    assert StoredList("a", 3, items(3)) == StoredList("b", 3, items(3)) == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert StoredList("a", 3, items(3)) != StoredList("b", 3, lambda: [{"n": 0}, {"n": 1}, {"n": 5}])
    assert StoredList("a", 3, unread) != "abc" and StoredList("a", 3, unread) != {"a": 3}
    with pytest.raises(TypeError):  # never taken for an empty list
        json.dumps(StoredList("a", 3, unread))


async def test_the_state_pane_builds_a_past_lists_items_when_it_is_expanded(tmp_path):
    session = await finished(tmp_path)
    info = grown(session.store, session.run_id)
    saved, parent = session.store.get(info.id), session.store.get(info.parent_id)
    items = saved.state[""]["messages"]
    app = StudioApp(session)
    async with app.run_test(size=(160, 50)) as pilot:
        session.select_checkpoint(info.id)
        await settle(app, pilot)
        pane = app.main.query_one(StatePane)
        node = pane._key_nodes[("", "messages")]
        label = str(node.label)
        assert f"messages  [{len(items)} items]" in label
        assert f"[{len(parent.state['']['messages'])} items] → [{len(items)} items]" in label
        assert not node.children  # not built (nor read) while only the key is drawn
        node.expand()
        await until(lambda: len(node.children) == len(items))
        assert str(node.children[-1].label).startswith(f"{len(items) - 1}  {{")
        pane.focus()
        pane.move_cursor(node)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ValueScreen) and app.screen.value == items
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, StateEditor)
        assert json.loads(app.screen.query_one("#state-value", Input).value) == items


async def test_a_history_the_store_cannot_read_is_said_when_it_is_shown(tmp_path):
    """Damaged items surface where the history is read (a port, opening the key), in one line each."""
    session = await finished(tmp_path)
    run_id, info = session.run_id, grown(session.store, session.run_id)
    session.store.close()
    conn = sqlite3.connect(tmp_path / "runs.db")
    conn.execute("DELETE FROM items")
    conn.commit()
    conn.close()
    recorded = DebugSession.open_recorded(str(tmp_path / "runs.db"), run_id)
    app = StudioApp(recorded)
    async with app.run_test(size=(160, 50)) as pilot:
        recorded.select_checkpoint(info.id)
        await settle(app, pilot)
        assert "messages" in recorded.marks()  # a grown list: marked by its reference, unread
        with pytest.raises(EditError, match="is missing"):
            recorded.node_detail(LLM)
        pane = app.main.query_one(StatePane)
        node = pane._key_nodes[("", "messages")]
        node.expand()
        await until(lambda: not node.is_expanded)
        assert not node.children
        assert any("is missing" in str(n.message) for n in app._notifications)
