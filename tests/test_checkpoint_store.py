"""Checkpoint stores: deltas with bounded chains, listings, and bad store files named in one line."""

from __future__ import annotations

import asyncio
import operator
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
from typing import Annotated

import pytest
from conftest import rows
from py_trees.common import Status
from pydantic import BaseModel

from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import (
    SCHEMA_VERSION,
    CheckpointError,
    SQLiteCheckpointStore,
    StoreError,
)
from runtime.node import AsyncNode, LoopUntilSuccess, StateCondition


class Chat(BaseModel):
    messages: Annotated[list[str], operator.add] = []
    big: str = "x" * 10_000  # never changes: must not be stored again and again
    turns: int = 0


class Say(AsyncNode):
    async def update_async(self) -> Status:
        await asyncio.sleep(0)
        turns = self.read_state("turns") + 1
        self.write_state({"messages": [f"message {turns}"], "turns": turns})
        return Status.SUCCESS


def chat_tree(turns: int):
    return LoopUntilSuccess("loop", _Seq(turns), max_iterations=turns + 1)


def _Seq(turns: int):
    from runtime.node import Sequence
    return Sequence("seq", memory=True, children=[Say("say"), StateCondition("enough", key="turns", op=">=",
                                                                                 value=turns)])


async def test_checkpoints_store_what_changed_and_restore_through_a_bounded_chain(store):
    runner = ReactiveRunner(chat_tree(60), Chat, checkpointer=store)
    runner.checkpoints.full_every = 10
    await runner.run()
    infos = store.list(runner.run_id)
    assert [c.id for c in infos] == sorted(c.id for c in infos) and infos[0].source == "input"
    assert [c.tick for c in infos] == list(range(len(infos)))
    # every checkpoint reads back whole, equal to the state at its tick
    last = store.get(infos[-1].id)
    assert last.state == runner.state_manager.snapshot()
    middle = store.get(infos[len(infos) // 2].id)
    assert middle.state[""]["messages"] == [f"message {i}" for i in range(1, middle.state[""]["turns"] + 1)]
    assert middle.statuses["loop/seq/say"] in ("RUNNING", "INVALID", "SUCCESS")
    sizes = [len(row[0]) for row in rows(store, "SELECT data FROM checkpoints WHERE base_id != id")]
    chain = max(row[0] for row in rows(store, "SELECT count(*) FROM checkpoints GROUP BY base_id"))
    assert max(sizes) < 1000  # a delta never repeats the 10 KB field nor the whole message list
    assert chain <= 11


class Talk(BaseModel):
    messages: Annotated[list[str], operator.add] = []
    turns: int = 0


async def test_a_chain_ends_once_its_deltas_outgrow_its_full_record(store):
    """Small full records, deltas of a third of their size: chains stay a few records long
    with no count forcing them (a restore parses a few full records' worth at most)."""
    runner = ReactiveRunner(chat_tree(60), Talk, checkpointer=store)
    runner.checkpoints.full_every = 1000
    await runner.run()
    chains = [row[0] for row in rows(store, "SELECT count(*) FROM checkpoints GROUP BY base_id")]
    assert sum(chains) > 100 and max(chains) <= 20
    infos = store.list(runner.run_id)
    assert store.get(infos[-1].id).state[""] == runner.state_manager.snapshot()[""]


async def test_list_latest_and_history_newest_first(store):
    runner = ReactiveRunner(chat_tree(3), Chat, checkpointer=store)
    await runner.run()
    first_run = runner.run_id
    await runner.run()  # a second, fresh run
    assert [r.run_id for r in store.runs()] == [first_run, runner.run_id]
    history = store.history(first_run)
    assert [c.id for c in history] == [c.id for c in reversed(store.list(first_run))]
    assert store.latest(first_run).id == history[0].id and history[0].status == "SUCCESS"
    assert store.latest("no such run") is None and store.history("no such run") == []
    with pytest.raises(CheckpointError, match="unknown checkpoint id 12345"):
        store.get(12345)


async def test_runs_say_where_they_ran_since_when_and_how_they_ended(store):
    runner = ReactiveRunner(chat_tree(2), Chat, checkpointer=store)
    before = time.time()
    await runner.run()
    failing = ReactiveRunner(StateCondition("never", key="turns", op=">", value=5), Chat, checkpointer=store)
    await failing.run()
    store.set_meta(f"tree:{runner.run_id}", "/trees/chat.py:build")
    done, failed = store.runs()
    assert (done.run_id, done.ended, done.tree, failed.ended, failed.tree) == (
        runner.run_id, "completed", "/trees/chat.py:build", "failed", None)
    assert done.host == failed.host == socket.gethostname() and done.pid == os.getpid()
    assert before <= done.started <= failed.started <= time.time()


def test_a_missing_store_is_named_and_never_created_when_reading(tmp_path):
    with pytest.raises(StoreError, match=r"nope\.db: no such checkpoint store"):
        SQLiteCheckpointStore(tmp_path / "nope.db", create=False)
    assert not (tmp_path / "nope.db").exists()


def test_a_file_that_is_not_a_store_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("my precious notes\n" * 100)
    before = path.read_bytes()
    with pytest.raises(StoreError, match=r"notes\.txt: not a checkpoint store"):
        SQLiteCheckpointStore(path)
    assert path.read_bytes() == before

    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE mine(x)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=r"other\.db: not a checkpoint store"):
        SQLiteCheckpointStore(other)


def test_a_corrupt_store_is_named(tmp_path):
    path = tmp_path / "broken.db"
    SQLiteCheckpointStore(path).close()
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=r"broken\.db: corrupt checkpoint store"):
        SQLiteCheckpointStore(path)


@pytest.mark.parametrize("version, message", [
    ("99", rf"future\.db: written by a newer version \(schema 99; this version reads up to {SCHEMA_VERSION}\)"),
    ("1", rf"future\.db: written by an older version \(schema 1; this version reads schema {SCHEMA_VERSION}\)"),
])
def test_another_schema_is_refused_and_left_untouched(tmp_path, version, message):
    path = tmp_path / "future.db"
    SQLiteCheckpointStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version,))
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match=message):
        SQLiteCheckpointStore(path)
    assert path.read_bytes() == before


def test_a_locked_store_is_named(tmp_path):
    path = tmp_path / "busy.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t(x)")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError, match=r"busy\.db: locked by another process"):
            SQLiteCheckpointStore(path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_reopening_a_store_keeps_everything(tmp_path):
    path = tmp_path / "keep.db"

    async def go():
        store = SQLiteCheckpointStore(path)
        runner = ReactiveRunner(chat_tree(2), Chat, checkpointer=store)
        await runner.run()
        store.close()
        return runner.run_id, runner.state_manager.snapshot()

    run_id, final = asyncio.run(go())
    store = SQLiteCheckpointStore(path)
    assert store.get(store.latest(run_id).id).state == final
    assert store.events(run_id)[-1][1].type == "run.completed"
    store.close()


_CHILD = textwrap.dedent("""
    import asyncio, sys
    sys.path.insert(0, {tests!r})
    from test_checkpoint_store import Chat, chat_tree
    from runtime.engine.runner import ReactiveRunner
    from runtime.memory.checkpoint import SQLiteCheckpointStore

    async def main():
        runner = ReactiveRunner(chat_tree(10**9), Chat, checkpointer=SQLiteCheckpointStore({path!r}))
        print(runner.checkpoints.store.location, flush=True)
        await runner.run()

    asyncio.run(main())
""")


def test_a_run_killed_mid_run_leaves_every_committed_checkpoint_whole(tmp_path):
    path = tmp_path / "killed.db"
    code = _CHILD.format(tests=os.path.dirname(__file__), path=str(path))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert child.stdout.readline()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        time.sleep(0.2)
        conn = sqlite3.connect(path)
        count = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
        conn.close()
        if count > 200:
            break
    child.send_signal(signal.SIGKILL)
    child.wait()
    store = SQLiteCheckpointStore(path)
    (run,) = store.runs()
    infos = store.list(run.run_id)
    assert len(infos) > 200
    for info in infos[:: max(1, len(infos) // 40)] + infos[-3:]:
        checkpoint = store.get(info.id)
        turns = checkpoint.state[""]["turns"]
        assert checkpoint.state[""]["messages"] == [f"message {i}" for i in range(1, turns + 1)]
        assert checkpoint.tick == info.tick and set(checkpoint.statuses) >= {"loop", "loop/seq/say"}
    store.close()


async def test_a_recorded_call_asked_about_with_a_value_the_driver_cannot_send_is_not_called_corrupt(store):
    """Only bytes that do not decode make a store "corrupt": a question it cannot send is the question's fault."""
    with pytest.raises(StoreError) as raised:
        store.get_io("r", "model", "bad \udc80", 0, 0)
    assert "corrupt" not in str(raised.value) and "cannot be sent" in str(raised.value)
    assert "\n" not in str(raised.value)
    if hasattr(store, "get_io_async"):  # the asyncio PostgreSQL store's own connections
        with pytest.raises(StoreError) as raised:
            await store.get_io_async("r", "model", "bad \udc80", 0, 0)
        assert "corrupt" not in str(raised.value) and "\n" not in str(raised.value)
