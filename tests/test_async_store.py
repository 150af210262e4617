"""The asyncio PostgreSQL store (issue #34 point 1) on a real (throw-away) server: opened from the event
loop it never holds the loop (a server that never answers: the wait is cancelled at once, or ends at
the connect's timeout, #32), its saves leave the event loop to other coroutines, a run recording into
it stores every tick as the synchronous store does, and a lost connection stops the run in one line.
(Its contract is the store suite's, `store` in conftest.py; how long the loop waits is
bench/many_runs.py's figure, never a test's.)"""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import time

import pytest
import resume_tree
from hanging_server import HangingServer
from postgres_server import PASSWORD
from py_trees.common import Status
from pydantic import BaseModel
from stopping_fixtures import TREE, all_gone, interrupted_run, start, stopped_mid_call, use_place, wait_for

from runtime import Agent
from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import (
    AsyncPostgresCheckpointStore,
    CheckpointRecord,
    IORecord,
    StoreError,
    open_store,
)
from runtime.node import Node


class Counted(BaseModel):
    n: int = 0


class CountTo(Node):
    """RUNNING until it has counted to `last`, one a tick; its state write wakes the next tick,
    so the run never waits for anything: with a synchronous store it never leaves the loop."""

    def __init__(self, last: int):
        super().__init__(name="count")
        self.last = last

    def update(self) -> Status:
        n = self.read_state("n") + 1
        self.write_state({"n": n})
        return Status.SUCCESS if n >= self.last else Status.RUNNING


def _record(tick: int) -> CheckpointRecord:
    return CheckpointRecord(run_id="r", branch="main", parent_id=None, base_id=None, tick=tick, time=time.time(),
                            status="RUNNING", source="loop", event_position=0, wake=False,
                            statuses={"count": "RUNNING"}, resume={}, state={"": {"n": ["v", tick]}})


@pytest.fixture
def store(postgres_url):
    made = open_store(postgres_url, asynchronous=True)
    yield made
    made.close()


async def test_a_save_lets_other_coroutines_run_while_it_is_on_the_wire(store):
    order = []

    async def save():
        checkpoint_id = await store.save_async(_record(1))
        order.append(("saved", checkpoint_id))

    async def other():
        order.append("other ran")

    await asyncio.gather(save(), other())  # the save starts first: a blocking one would end first too
    assert order[0] == "other ran" and order[1][0] == "saved"
    assert store.get(order[1][1]).state == {"": {"n": 1}}


async def test_a_recorded_call_is_read_while_other_coroutines_run(store):
    answer = {"content": "the answer, long enough to be stored as an item of its own " * 4}
    await store.put_io_async(IORecord("r", "main", "model", "Ask", 0, 0, {"messages": []}, answer))
    order = []

    async def read():
        record = await store.get_io_async("r", "model", "Ask", 0, 0, "main")
        order.append(("read", record.response))

    async def other():
        order.append("other ran")

    await asyncio.gather(read(), other())  # the read starts first: a blocking one would end first too
    assert order == ["other ran", ("read", answer)]
    assert await store.get_io_async("r", "model", "Ask", 1, 0) is None


async def test_a_recording_run_leaves_the_loop_to_other_coroutines_and_stores_every_tick(store):
    runner = ReactiveRunner(CountTo(40), Counted, checkpointer=store)
    seen_at: set[int] = set()

    async def other():
        while True:
            seen_at.add(runner.tick_count)
            await asyncio.sleep(0)

    watcher = asyncio.create_task(other())
    await asyncio.sleep(0)
    assert await runner.run() == Status.SUCCESS
    watcher.cancel()
    assert len(seen_at - {0, 40}) > 1  # it ran between the run's ticks, not only before and after
    infos = store.list(runner.run_id)  # every tick stored once run() returned, each a child of the one before
    assert [c.tick for c in infos] == list(range(41))
    assert [c.parent_id for c in infos] == [None, *(c.id for c in infos[:-1])]
    assert store.get(infos[-1].id).state == {"": {"n": 40}}
    assert store.runs(runner.run_id)[0].ended == "completed"


async def test_an_agent_run_cancelled_from_outside_is_recorded_as_interrupted_before_the_cancel_goes_on(store):
    agent = Agent(CountTo(10**9), state_schema=Counted)
    agent.runner = agent.make_runner(checkpointer=store)
    running = asyncio.create_task(agent.run())
    while agent.runner.tick_count < 20:
        await asyncio.sleep(0)
    running.cancel("SIGTERM")
    with pytest.raises(asyncio.CancelledError):
        await running
    (run,) = store.runs()  # read at once: the last checkpoint's write was awaited, not left in flight
    last = store.latest(run.run_id)
    assert run.ended == "failed" and last.status == "INTERRUPTED"
    # the cancel met the run awaiting a write in flight: that write was not cancelled with it (the last
    # checkpoint, a delta of the ones before, holds the count the run had reached)
    assert store.get(last.id).state[""]["n"] == agent.runner.state_manager.get("n")
    assert [c.tick for c in store.list(run.run_id)][:-1] == list(range(last.tick + 1))


async def test_many_runs_in_one_loop_record_into_one_store_at_once(store):
    runners = [ReactiveRunner(CountTo(15), Counted, checkpointer=store) for _ in range(12)]
    assert await asyncio.gather(*(r.run() for r in runners)) == [Status.SUCCESS] * 12
    for runner in runners:
        assert [c.tick for c in store.list(runner.run_id)] == list(range(16))
        assert store.get(store.latest(runner.run_id).id).state == {"": {"n": 15}}


async def test_connections_wanted_at_once_are_opened_one_after_another(store):
    """(Each connect's authentication costs ~4 ms of CPU in one loop callback: opened at once, 8 of them
    held the loop ~30 ms at the runs' start.)"""
    connect, opening, most = store._connect_async, 0, 0

    async def counted():
        nonlocal opening, most
        opening += 1
        most = max(most, opening)
        try:
            return await connect()
        finally:
            opening -= 1

    store._connect_async = counted
    answer = {"content": "an answer long enough to be stored as an item of its own " * 4}
    await asyncio.gather(*(store.put_io_async(IORecord("r", "main", "model", "Ask", i, 0, {"messages": []}, answer))
                           for i in range(8)))
    assert most == 1 and len(store._opened) > 1
    assert [(await store.get_io_async("r", "model", "Ask", i, 0)).response for i in range(8)] == [answer] * 8


async def test_a_run_whose_connection_is_lost_stops_in_one_line_and_the_next_run_records(store, postgres_url):
    runner = ReactiveRunner(CountTo(10**9), Counted, checkpointer=store)

    async def kill_the_connections():
        while runner.tick_count < 20:
            await asyncio.sleep(0)
        with store._guard() as conn:  # every other backend of the database: the async store's connections
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                         "WHERE datname = current_database() AND pid <> pg_backend_pid()")

    killer = asyncio.create_task(kill_the_connections())
    with pytest.raises(StoreError) as raised:
        await runner.run()
    await killer
    message = str(raised.value)
    assert message.startswith("checkpoint of tick") and "\n" not in message
    assert "lost the connection to the PostgreSQL server" in message and PASSWORD not in message
    again = ReactiveRunner(CountTo(3), Counted, checkpointer=store)
    assert await again.run() == Status.SUCCESS
    assert [c.tick for c in store.list(again.run_id)] == [0, 1, 2, 3]


async def test_opened_from_the_loop_it_creates_the_store_and_connects_synchronously_only_to_read(postgres_url):
    store = await AsyncPostgresCheckpointStore.open(postgres_url)
    assert store._conn is None  # the schema made over an async connection: nothing held the loop
    checkpoint_id = await store.save_async(_record(1))
    assert store.get(checkpoint_id).state == {"": {"n": 1}}  # a read: its synchronous connection, opened now
    await store.aclose()
    again = open_store(postgres_url, create=False)
    (run,) = again.runs()
    assert run.writer is not None and run.writer.closed is not None  # said over the async connection
    again.close()


async def test_opened_from_the_loop_an_empty_database_is_refused_when_not_to_be_created(postgres_url):
    with pytest.raises(StoreError, match="no checkpoint store in this database"):
        await AsyncPostgresCheckpointStore.open(postgres_url, create=False)


async def test_its_synchronous_connection_dropped_while_idle_is_replaced_before_a_read(store, postgres_url):
    checkpoint_id = await store.save_async(_record(1))
    assert store.get(checkpoint_id).tick == 1
    killer = open_store(postgres_url)
    with killer._guard() as conn:
        ended = [pid for pid, _ in conn.execute("SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity "
                                                "WHERE datname = current_database() AND pid <> pg_backend_pid()")]
        while conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(?)", (ended,)).fetchone()[0]:
            await asyncio.sleep(0.01)  # (until those backends have gone: they said so on their sockets)
    killer.close()
    assert store.get(checkpoint_id).tick == 1  # a read after the loss: connected again, not failed


@pytest.fixture
def hanging():
    server = HangingServer()
    yield server
    server.close()


async def test_opening_from_the_loop_a_server_that_never_answers_leaves_the_loop_free_and_cancels(hanging):
    opening = asyncio.create_task(AsyncPostgresCheckpointStore.open(hanging.url()))  # (its timeout: 600 s)
    assert await asyncio.to_thread(hanging.accepted.wait, 60)  # the loop ran this while the connect waited
    assert not opening.done()
    opening.cancel()
    with pytest.raises(asyncio.CancelledError):
        await opening


async def test_opening_from_the_loop_a_server_that_never_answers_ends_at_the_connect_timeout(hanging):
    with pytest.raises(StoreError) as raised:
        await AsyncPostgresCheckpointStore.open(hanging.url().replace("connect_timeout=600", "connect_timeout=2"))
    message = str(raised.value)
    assert message.startswith(f"postgresql://someone@127.0.0.1:{hanging.port}/db: cannot connect (")
    assert "\n" not in message and "pw-never-shown" not in message


async def test_agent_resume_given_the_stores_url_goes_on_recording_through_the_asyncio_store(postgres_url, tmp_path,
                                                                                           monkeypatch):
    monkeypatch.setenv(resume_tree.EFFECTS, str(tmp_path / "ledger.txt"))
    store = open_store(postgres_url)
    first = resume_tree.build()
    first.runner = first.make_runner(checkpointer=store)
    run_id = (await first.run(resume_tree.INPUT)).run_id
    store.close()
    agent = resume_tree.build()  # another process's agent: the URL is all it is given
    result = await agent.resume(postgres_url, run_id, approve=["append_line"])
    assert (result.termination_reason, result.run_id) == ("completed", run_id)
    assert isinstance(agent.runner.checkpoints.store, AsyncPostgresCheckpointStore)
    assert (tmp_path / "ledger.txt").read_text().splitlines() == ["payment 42 sent"]
    again = open_store(postgres_url)
    assert again.runs(run_id)[0].ended == "completed" and again.latest(run_id).status == "SUCCESS"
    again.close()


@pytest.mark.parametrize("command", ["run", "serve"])
def test_a_command_recording_into_postgresql_stopped_by_a_signal_mid_call_records_the_run_interrupted(
        command, postgres_url, tmp_path, monkeypatch):
    place = use_place(tmp_path, monkeypatch)
    extra = ["--at", "127.0.0.1:0", "--wait", "0"] if command == "serve" else []
    process = start(command, TREE, "--db", postgres_url, *extra)  # the asyncio store: its writes awaited at the end
    out, err, pids = stopped_mid_call(process, place, signal.SIGTERM)
    assert process.returncode == 143 and "Traceback" not in err and PASSWORD not in out + err, err
    wait_for(lambda: all_gone(pids), "the MCP server and its helper gone")
    status, source, _, ended = interrupted_run(postgres_url)
    assert (status, source, ended) == ("INTERRUPTED", "interrupt", "failed")


@pytest.fixture
def many_descriptors():
    """Over 1024 descriptors open, as a busy process has: what opens next is numbered past select()'s reach."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 1100 + 64
    if soft < wanted:
        if hard != resource.RLIM_INFINITY and hard < wanted:
            pytest.skip(f"this process may open {hard} descriptors only")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    base = os.open(os.devnull, os.O_RDONLY)
    held = [os.dup(base) for _ in range(1100)]
    yield
    for fd in [base, *held]:
        os.close(fd)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def test_its_synchronous_connection_numbered_past_1024_is_kept_between_reads(many_descriptors, postgres_url):
    store = await AsyncPostgresCheckpointStore.open(postgres_url)
    checkpoint_id = await store.save_async(_record(1))
    assert store.get(checkpoint_id).tick == 1  # the synchronous connection, opened now
    first = store._conn
    assert first.raw.fileno() >= 1024
    assert store.get(checkpoint_id).tick == 1
    assert store._conn is first  # a healthy connection: not taken for lost, nor replaced
    await store.aclose()


async def test_its_synchronous_connection_replaced_after_a_loss_is_closed(store, postgres_url):
    checkpoint_id = await store.save_async(_record(1))
    assert store.get(checkpoint_id).tick == 1
    first = store._conn.raw
    killer = open_store(postgres_url)
    with killer._guard() as conn:
        ended = [pid for pid, _ in conn.execute("SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity "
                                                "WHERE datname = current_database() AND pid <> pg_backend_pid()")]
        while conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(?)", (ended,)).fetchone()[0]:
            await asyncio.sleep(0.01)
    killer.close()
    assert store.get(checkpoint_id).tick == 1
    assert store._conn.raw is not first and first.closed  # the lost one closed, not left open
