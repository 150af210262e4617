"""An SQLite file opened for runs in an event loop (`open_store(FILE, asynchronous=True)`) commits
their saves in its writer thread: the loop runs on while a save waits (here, for another
connection's lock), and what is stored is what the synchronous store stores."""

import asyncio
import sqlite3

import pytest
from py_trees.common import Status
from pydantic import BaseModel

from runtime.engine import ReactiveRunner
from runtime.memory.checkpoint import SQLiteCheckpointStore, StoreError, open_store
from runtime.memory.checkpoint.sqlite_store import ThreadedSQLiteCheckpointStore
from runtime.node import Node


class Counted(BaseModel):
    count: int = 0


class Count(Node):
    """Counts to `ticks`, a tick at a time (a signalled write wakes the next tick)."""

    def __init__(self, ticks: int):
        super().__init__(name="count")
        self.ticks = ticks

    def update(self) -> Status:
        count = self.read_state("count") + 1
        self.write_state({"count": count}, signal=count < self.ticks)
        return Status.SUCCESS if count >= self.ticks else Status.RUNNING


async def test_the_loop_runs_on_while_a_save_waits_for_another_writers_lock(tmp_path):
    path = tmp_path / "runs.db"
    store = open_store(path, asynchronous=True)
    assert isinstance(store, ThreadedSQLiteCheckpointStore)
    runner = ReactiveRunner(Count(5), Counted, checkpointer=store)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process writing: every save waits for its commit
    run = asyncio.create_task(runner.run())
    turns = 0
    while turns < 50:  # a synchronous save would hold the loop here until the lock's timeout failed it
        await asyncio.sleep(0.001)
        turns += 1
    assert not run.done() and runner.checkpoints.head is None  # nothing could be written yet
    other.execute("COMMIT")
    assert await run == Status.SUCCESS
    assert [info.tick for info in store.list(runner.run_id)] == [0, 1, 2, 3, 4, 5]
    other.close()
    store.close()


async def test_a_read_from_the_loop_does_not_wait_while_a_save_waits_for_another_writers_lock(tmp_path):
    path = tmp_path / "runs.db"
    store = open_store(path, asynchronous=True)
    runner = ReactiveRunner(Count(3), Counted, checkpointer=store)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    run = asyncio.create_task(runner.run())
    while runner.tick_count < 1:  # (its first save is waiting for the lock now, or about to)
        await asyncio.sleep(0.001)
    for _ in range(20):
        await asyncio.sleep(0.001)
    # over the writer's connection this read would wait until that save gave up on the lock (and the run failed)
    assert store.list() == [] and not run.done()
    other.execute("COMMIT")
    assert await run == Status.SUCCESS
    assert [info.tick for info in store.list(runner.run_id)] == [0, 1, 2, 3]
    other.close()
    store.close()


async def test_it_stores_what_the_synchronous_store_stores(tmp_path):
    stored = []
    for store in (SQLiteCheckpointStore(tmp_path / "sync.db"), open_store(tmp_path / "threaded.db", asynchronous=True)):
        runner = ReactiveRunner(Count(30), Counted, checkpointer=store)
        assert await runner.run() == Status.SUCCESS
        infos = store.list(runner.run_id)
        last = store.get(infos[-1].id)
        stored.append(([(i.tick, i.status, i.source) for i in infos], last.state, last.statuses))
        runner.restore(infos[10].id)
        assert runner.state_manager.get("count") == 10
        store.close()
    assert stored[0] == stored[1]


async def test_closing_lands_the_writes_asked_for(tmp_path):
    store = open_store(tmp_path / "runs.db", asynchronous=True)
    runner = ReactiveRunner(Count(3), Counted, checkpointer=store)
    assert await runner.run() == Status.SUCCESS
    run_id = runner.run_id
    store.close()
    reopened = SQLiteCheckpointStore(tmp_path / "runs.db")
    assert [info.tick for info in reopened.list(run_id)] == [0, 1, 2, 3]
    reopened.close()


async def test_a_write_asked_of_a_closed_store_is_refused_in_one_line_and_closing_again_does_nothing(tmp_path):
    store = open_store(tmp_path / "runs.db", asynchronous=True)
    runner = ReactiveRunner(Count(2), Counted, checkpointer=store)
    assert await runner.run() == Status.SUCCESS
    store.close()
    store.close()
    with pytest.raises(StoreError, match="runs.db: the store is closed"):
        await store.add_events_async([])
