"""Writes of different runs that come due together share one statement on the asyncio PostgreSQL store
(issue #34, `shared_trips.py`), each whole: a write whose row the server refuses fails alone, with its
own one-line error, and the writes it was sent with are stored; a write is acknowledged once committed."""

from __future__ import annotations

import asyncio
import time

import pytest

from runtime.memory.checkpoint import CheckpointRecord, IORecord, StoreError, open_store
from runtime.memory.checkpoint.answering import AsyncBoundedConnection
from runtime.memory.checkpoint.shared_trips import SharedTrips
from runtime.memory.checkpoint.sql_plan import Query, Stepping, answer
from runtime.memory.checkpoint.statement_fusion import fused, together


@pytest.fixture
def store(postgres_url):
    made = open_store(postgres_url, asynchronous=True)
    yield made
    made.close()


@pytest.fixture
def sent(monkeypatch):
    """The statements the async connections are sent."""
    statements: list[str] = []
    execute = AsyncBoundedConnection.execute

    async def counted(self, query, params=None, **kwargs):
        statements.append(str(query))
        return await execute(self, query, params, **kwargs)

    monkeypatch.setattr(AsyncBoundedConnection, "execute", counted)
    return statements


def _record(run_id: str, tick: int) -> CheckpointRecord:
    return CheckpointRecord(run_id=run_id, branch="main", parent_id=None, base_id=None, tick=tick, time=time.time(),
                            status="RUNNING", source="loop", event_position=0, wake=False,
                            statuses={"count": "RUNNING"}, resume={}, state={"": {"n": ["v", tick]}})


def _call(run_id: str, round: int) -> IORecord:
    return IORecord(run_id, "main", "tool", "Look", round, 0, {"q": run_id}, {"a": round})


async def _noted(store, *runs: str) -> None:
    """Each run's first save (which notes the run, and the store's writer) made."""
    for run_id in runs:
        await store.save_async(_record(run_id, 0))


async def test_saves_and_calls_due_together_go_in_one_statement_each_stored(store, sent):
    await _noted(store, "r0", "r1", "r2", "r3")
    sent.clear()
    ids = await asyncio.gather(*(store.save_async(_record(f"r{i}", i)) for i in range(4)),
                               *(store.put_io_async(_call(f"r{i}", 1)) for i in range(3)))
    assert len(sent) == 1  # seven writes, one round trip
    for i, checkpoint_id in enumerate(ids[:4]):
        assert store.latest(f"r{i}").id == checkpoint_id and store.get(checkpoint_id).state == {"": {"n": i}}
    for i in range(3):
        assert store.get_io(f"r{i}", "tool", "Look", 1, 0).response == {"a": 1}


async def test_a_write_the_server_refuses_fails_alone_in_one_line_and_those_sent_with_it_are_stored(store, sent):
    await _noted(store, "a", "bad", "b", "c")
    sent.clear()
    results = await asyncio.gather(store.save_async(_record("a", 1)), store.save_async(_record("bad", 2**40)),
                                   store.put_io_async(_call("b", 2**40)), store.put_io_async(_call("c", 1)),
                                   return_exceptions=True)
    saved, refused, refused_call, called = results
    for error in (refused, refused_call):
        assert isinstance(error, StoreError) and "\n" not in str(error) and "out of range" in str(error)
    assert store.get(saved).state == {"": {"n": 1}} and called is None
    assert store.get_io("c", "tool", "Look", 1, 0) is not None
    assert store.latest("bad").tick == 0 and store.get_io("b", "tool", "Look", 2**40, 0) is None
    assert len(sent) == 5  # the four together (refused whole), then each alone
    assert await store.save_async(_record("bad", 3))  # its run goes on


def test_writes_that_must_see_each_other_go_in_statements_one_after_the_other_each_whole():
    insert, notify = Query("INSERT INTO io VALUES (?)", (1,)), Query("SELECT pg_notify(?, ?)", ("c", "r"))
    beat = Query("UPDATE writers SET seen = ? WHERE id = ?", (1, 2))
    first, second = fused([insert, beat, notify])[0], fused([Query("INSERT INTO io VALUES (?)", (2,)), beat])[0]
    statements = together([first, second, insert])
    assert [count for _, count in statements] == [1, 2]  # the second updates the writer's row the first does
    assert statements[0][0] == first and statements[1][0].params == (2, 1, 2, 1)


def _big_call(run_id: str, round: int) -> IORecord:
    """A model call whose answer is stored as an item (a text of its own, by content)."""
    return IORecord(run_id, "main", "model", "Think", round, 0, {"q": run_id}, {"text": f"{round} " + "x" * 2000})


async def test_a_write_storing_new_items_first_then_goes_with_the_writes_due_with_it(store, monkeypatch):
    await _noted(store, "r0")
    shared = []
    send = SharedTrips.send
    monkeypatch.setattr(SharedTrips, "send", lambda self, statement: (shared.append(statement), send(self, statement))[1])
    await store.put_io_async(_big_call("r0", 1))
    assert len(shared) == 1  # its items stored alone, then its row among the shared writes (not over a connection of its own)
    assert store.get_io("r0", "model", "Think", 1, 0).response == {"text": "1 " + "x" * 2000}


def test_items_stored_ahead_of_a_writes_transaction_are_known_to_the_store_at_once(postgres_url):
    """(So an asyncio store's writes in flight point at them rather than storing them again.)"""
    store = open_store(postgres_url)
    try:
        stepping = Stepping(store.putting_io(_big_call("r", 1)))
        query = stepping.query()
        assert query.alone and "INSERT INTO items" in query.sql
        stepping.answered(answer(store._conn.execute(query.sql, query.params), query.want))
        query = stepping.query()
        assert len(store._items) == 1 and not query.alone  # (known before the write's own statement is sent)
        while query is not None:
            stepping.answered(answer(store._conn.execute(query.sql, query.params), query.want))
            query = stepping.query()
        assert store.get_io("r", "model", "Think", 1, 0).response == {"text": "1 " + "x" * 2000}
    finally:
        store.close()
