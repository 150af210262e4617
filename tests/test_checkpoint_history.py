"""A restore leaves a stored history undecoded until something reads it (`Deferred`): what is
read is the stored list, read once; a damaged history is found then and stops the run in one
line without saving over it; a fork, which saves at once, still refuses it before changing anything."""

from __future__ import annotations

import sqlite3

import pytest
from test_checkpoint_store import Chat, chat_tree

from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import SQLiteCheckpointStore, StoreError, open_store
from runtime.state import Deferred, StateManager


async def _recorded(path) -> tuple[str, list]:
    store = open_store(str(path))
    runner = ReactiveRunner(chat_tree(40), Chat, checkpointer=store)
    await runner.run()
    store.close()
    return runner.run_id, store_infos(path, runner.run_id)


def store_infos(path, run_id: str) -> list:
    store = open_store(str(path))
    try:
        return store.list(run_id)
    finally:
        store.close()


def _counting_reads(store) -> list:
    reads: list = []
    read = store.read_list_json
    store.read_list_json = lambda list_id, length: reads.append(length) or read(list_id, length)
    return reads


async def test_a_restored_history_is_read_once_and_only_when_something_reads_it(tmp_path):
    path = tmp_path / "run.db"
    run_id, infos = await _recorded(path)
    store = open_store(str(path))
    runner = ReactiveRunner(chat_tree(40), Chat, checkpointer=store)
    middle = infos[len(infos) // 2]
    stored = store.get(middle.id).state
    assert len(stored[""]["messages"]) >= 8  # long enough to be a stored list
    reads = _counting_reads(store)

    runner.restore(middle.id)
    assert reads == [] and runner.tick_count == middle.tick
    assert runner.state_manager.get("turns") == stored[""]["turns"]  # other keys are there already
    assert reads == []
    assert runner.state_manager.get("messages") == stored[""]["messages"]
    assert runner.state_manager.model.messages == stored[""]["messages"]
    assert runner.state_manager.snapshot() == stored
    assert reads == [len(stored[""]["messages"])]  # once, by the first reader

    await runner.run()  # and the run goes on from it
    assert runner.state_manager.get("messages") == [f"message {i}" for i in range(1, 41)]
    store.close()


def _damage(path, sql: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute(sql)
    conn.commit()
    conn.close()


async def test_a_damaged_history_found_after_a_restore_stops_the_run_without_saving(tmp_path):
    path = tmp_path / "run.db"
    run_id, infos = await _recorded(path)
    _damage(path, "UPDATE chunks SET items = '[999999]'")  # items that are gone
    store = open_store(str(path))
    runner = ReactiveRunner(chat_tree(40), Chat, checkpointer=store)
    runner.restore(infos[len(infos) // 2].id)
    with pytest.raises(StoreError, match=r"run\.db: stored list \w+ is (incomplete|corrupt)") as raised:
        await runner.run()
    assert "\n" not in str(raised.value)
    assert store.list(run_id) == infos  # nothing saved on top of the damage
    store.close()


async def test_a_fork_of_a_damaged_history_is_refused_before_anything_changes(tmp_path):
    path = tmp_path / "run.db"
    run_id, infos = await _recorded(path)
    _damage(path, "UPDATE chunks SET items = '[999999]'")
    store = open_store(str(path))
    runner = ReactiveRunner(chat_tree(40), Chat, checkpointer=store)
    runner.state_manager.load({"turns": 7})
    before = runner.state_manager.snapshot()
    with pytest.raises(StoreError, match="is (incomplete|corrupt)"):
        runner.fork(infos[len(infos) // 2].id, state_updates={"turns": 3})
    assert runner.state_manager.snapshot() == before and runner.tick_count == 0
    assert store.branches(run_id) == ["main"]
    store.close()


def test_a_deferred_value_is_loaded_by_its_first_reader_whatever_it_reads_through():
    readers = {
        "get": lambda sm: sm.get("messages"),
        "model": lambda sm: sm.model.messages,
        "snapshot": lambda sm: sm.snapshot()[""]["messages"],
        "view": lambda sm: sm.view()["messages"],
        "stored": lambda sm: sm.stored("messages"),
        "reducer": lambda sm: sm.update({"messages": ["c"]}) and sm.get("messages")[:2],
    }
    for name, read in readers.items():
        loads: list = []
        sm = StateManager(Chat)
        sm.restore({"": {"messages": Deferred(lambda loads=loads: loads.append(1) or ["a", "b"]), "turns": 2}},
                   trusted={"": ["messages"]})
        assert loads == [] and sm.get("turns") == 2 and sm.take_dirty() == set()
        assert read(sm) == ["a", "b"], name
        assert loads == [1] and sm.get("messages")[:2] == ["a", "b"] and loads == [1], name
        assert sm.take_dirty() == (set() if name != "reducer" else {("", "messages")}), name  # a load is no write


def test_a_deferred_value_restored_over_is_never_loaded():
    sm = StateManager(Chat)
    sm.restore({"ns": {"messages": Deferred(lambda: pytest.fail("loaded"))}}, trusted={"ns": ["messages"]})
    sm.restore({})  # a restore replaces every slot
    assert sm.snapshot() == {"": {"messages": [], "big": "x" * 10_000, "turns": 0}}


def test_a_deferred_value_that_cannot_load_fails_every_read_until_written_over():
    sm = StateManager(Chat)

    def damaged():
        raise StoreError("run.db: stored list 1 is incomplete (0 of 9 items)")

    sm.restore({"": {"messages": Deferred(damaged), "turns": 1}}, trusted={"": ["messages"]})
    for read in (lambda: sm.model, sm.snapshot, lambda: sm.get("messages"), lambda: sm.model):
        with pytest.raises(StoreError, match="is incomplete"):
            read()
    assert sm.get("turns") == 1
    sm.restore({"": {"messages": ["a"]}})
    assert sm.model.messages == ["a"]


async def test_a_restored_history_written_again_by_a_new_process_inserts_none_of_its_items(store_name):
    """A new store object knows no item: the restored history's items are found in one query,
    not each deflated and inserted only to meet the stored row."""
    run_id, infos = await _recorded(store_name)
    store = open_store(store_name)
    statements: list[str] = []
    if isinstance(store, SQLiteCheckpointStore):
        store._conn.set_trace_callback(statements.append)
    runner = ReactiveRunner(chat_tree(40), Chat, checkpointer=store)
    middle = infos[len(infos) // 2]
    runner.restore(middle.id)
    runner.checkpoints.save()  # a full record: the history as a new stored list
    assert [s for s in statements if s.startswith("INSERT INTO items")] == []
    assert len(store.get(runner.checkpoints.head).state[""]["messages"]) >= 16
    assert store.get(runner.checkpoints.head).state == store.get(middle.id).state
    store.close()
