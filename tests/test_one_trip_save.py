"""A tick's save on PostgreSQL in one round trip (issue #34): its rows' ids reserved ahead from the
tables' sequences, its writes and NOTIFY one statement. The ids stay unique and in a run's order
across writers and restarts, a run taken over gets ids after its earlier writer's, a failed save
stores none of its rows and says so in one line, and a follower still hears each save."""

from __future__ import annotations

import time

import pytest
from conftest import rows, tamper

from runtime.engine.events import EventType, RuntimeEvent
from runtime.memory.checkpoint import CheckpointRecord, StoreError, open_store
from runtime.memory.checkpoint.reserved_ids import BLOCK, MOST, ReservedIds
from runtime.memory.checkpoint.sql_plan import Query
from runtime.memory.checkpoint.sql_store import run_facts
from runtime.memory.checkpoint.statement_fusion import NOTIFY, fused


def _record(run_id: str, tick: int, parent: int | None, base: int | None) -> CheckpointRecord:
    return CheckpointRecord(run_id=run_id, branch="main", parent_id=parent, base_id=base, tick=tick, time=time.time(),
                            status="RUNNING", source="loop", event_position=tick, wake=False,
                            statuses={"count": "RUNNING"}, resume={}, state={"": {"n": ["v", tick]}})


def _event(run_id: str, tick: int) -> tuple[str, RuntimeEvent]:
    return "main", RuntimeEvent(tick, "note", time.time(), tick, "count", run_id, {"tick": tick})


def _ticks(store, run_id: str, count: int) -> list[int]:
    """Save `count` ticks of `run_id` (a full record, then deltas on it, each with an event)."""
    latest = store.latest(run_id)
    parent = base = latest.id if latest else None
    ids = []
    for tick in range(count):
        parent = store.save(_record(run_id, tick, parent, base), [_event(run_id, tick)])
        base = base or parent
        ids.append(parent)
    return ids


@pytest.fixture
def url(postgres_url):
    return postgres_url


def test_a_ticks_save_after_the_first_is_one_statement(url):
    store = open_store(url)
    try:
        base, parent = _ticks(store, "r", 2)
        sent = []
        execute = store._conn.execute
        store._conn.execute = lambda sql, params=(): (sent.append(sql), execute(sql, params))[1]
        checkpoint_id = store.save(_record("r", 2, parent, base), [_event("r", 2)])
        assert len(sent) == 1 and sent[0].startswith("WITH ")  # no BEGIN, RETURNING, COMMIT: its own transaction
        assert [e.payload for _, e in store.events("r")] == [{"tick": 0}, {"tick": 1}, {"tick": 2}]
        assert store.get(checkpoint_id).state == {"": {"n": 2}}
    finally:
        store.close()


def _lifecycle(run_id: str, kind: str) -> tuple[str, RuntimeEvent]:
    return "main", RuntimeEvent(0, kind, time.time(), 0, None, run_id, {})


def test_a_runs_first_save_and_its_ending_need_no_transaction_and_read_its_facts_once(url):
    """The run's facts (`run:<id>`) this writer committed are kept: written at the end of the write,
    compared-and-set, not read in a transaction of their own at the run's start and end."""
    store = open_store(url)
    try:
        sent = []
        execute = store._conn.execute
        store._conn.execute = lambda sql, params=(): (sent.append(sql), execute(sql, params))[1]
        first = store.save(_record("r", 0, None, None), [_lifecycle("r", EventType.RUN_STARTED), _event("r", 0)])
        store.save(_record("r", 1, first, first), [_event("r", 1)])
        ending = len(sent)
        store.add_events([_lifecycle("r", EventType.RUN_COMPLETED)])
        assert "BEGIN" not in sent and "COMMIT" not in sent
        assert sum(sql.startswith("SELECT value FROM meta") for sql in sent) == 1  # at the run's first write only
        assert len(sent) - ending <= 2  # the ending's events and facts in one statement (and maybe ids reserved)
        facts = run_facts(store.get_meta("run:r"))
        assert facts["writer"] == store._writer_id and facts["ended"] == "completed" and facts["pid"] > 0
    finally:
        store.close()


def test_a_writer_whose_run_was_taken_over_leaves_the_takers_facts_as_they_are(url):
    writer, taker = open_store(url), open_store(url)
    try:
        _ticks(writer, "r", 2)
        assert taker.take_over("r", taker.get_meta("run:r"))
        writer.add_events([_lifecycle("r", EventType.RUN_COMPLETED)])  # (its facts kept are not the stored ones)
        facts = run_facts(taker.get_meta("run:r"))
        assert facts["writer"] == taker._writer_id and "ended" not in facts
        taker.add_events([_lifecycle("r", EventType.RUN_COMPLETED)])
        assert run_facts(taker.get_meta("run:r"))["ended"] == "completed"
    finally:
        writer.close()
        taker.close()


def test_ids_reserved_ahead_stay_unique_and_in_order_across_writers_and_a_restart(url):
    first, second = open_store(url), open_store(url)
    ids = {"a": _ticks(first, "a", 3), "b": _ticks(second, "b", 3)}
    ids["a"] += _ticks(first, "a", 3)  # (the first writer's block was reserved before the second's)
    first._conn.raw.close()  # a crash: its reserved ids are never used
    again = open_store(url)
    ids["a"] += _ticks(again, "a", 3)
    for run_id, saved in ids.items():
        assert saved == sorted(saved)  # a run's rows in the order written: followers read `id > last seen`
        assert [c.id for c in again.list(run_id)] == saved and again.latest(run_id).id == saved[-1]
        assert [e.payload["tick"] for _, e in again.events(run_id)] == [t % 3 for t in range(len(saved))]
    assert len({*ids["a"], *ids["b"]}) == 9 + 3
    events = [row[0] for row in rows(again, "SELECT id FROM events")]
    assert len(events) == len(set(events)) == 12
    second.close()
    again.close()


def test_a_run_taken_over_gets_ids_after_those_its_earlier_writer_gave_it(url):
    taker, writer = open_store(url), open_store(url)
    _ticks(taker, "other", 1)  # the taker holds a block reserved before the writer's
    written = _ticks(writer, "r", 4)
    writer.close()
    assert taker.take_over("r", taker.get_meta("run:r"))
    taken = _ticks(taker, "r", 2)
    assert min(taken) > max(written) > BLOCK
    assert taker.latest("r").id == taken[-1]
    assert [e.payload["tick"] for _, e in taker.events("r")] == [0, 1, 2, 3, 0, 1]
    taker.close()


def test_a_new_run_takes_the_ids_its_writer_reserved_for_earlier_runs(url):
    store = open_store(url)
    try:
        _ticks(store, "a", 2)
        sent = []
        execute = store._conn.execute
        store._conn.execute = lambda sql, params=(): (sent.append(sql), execute(sql, params))[1]
        ids = _ticks(store, "b", 2) + _ticks(store, "a", 1)
        assert not [sql for sql in sent if "nextval" in sql]  # (ids are let go when a run is taken over only)
        assert ids == sorted(ids) and [c.id for c in store.list("b")] == ids[:2]
    finally:
        store.close()


def test_each_block_of_ids_reserved_is_twice_the_last_up_to_a_bound():
    ids, asked, given = ReservedIds("checkpoints"), [], 0

    def taken() -> int:  # (the plan driven as a store drives it, the sequence's ids counted here)
        nonlocal given
        plan, rows = ids.take(), None
        while True:
            try:
                query = plan.send(rows)
            except StopIteration as stop:
                return stop.value
            asked.append(query.params[0])
            rows, given = ([given + n + 1 for n in range(query.params[0])],), given + query.params[0]

    assert [taken() for _ in range(20_000)] == list(range(1, 20_001))
    assert asked == [BLOCK * 2 ** n for n in range(5)] + [MOST] * 18  # (64 + ... + 1024: 1,984 ids)


class _Compared(int):
    """An id that counts the comparisons made of it (sorting, filtering)."""

    made = 0

    def __lt__(self, other):
        _Compared.made += 1
        return int.__lt__(self, other)

    def __gt__(self, other):
        _Compared.made += 1
        return int.__gt__(self, other)


def test_saves_asking_for_ids_at_once_get_them_in_order_and_each_answer_costs_its_block_only():
    """50 runs' first saves ask for ids at once (the asyncio store): each block answered is held apart, not
    sorted again with all those held (~45,000 ids: 25-40 ms of CPU in all)."""
    ids, given, _Compared.made = ReservedIds("checkpoints"), 0, 0
    plans = [ids.take() for _ in range(50)]
    asks = [plan.send(None) for plan in plans]  # (none holds an id yet: each asks)
    taken = []
    for plan, ask in zip(plans, asks, strict=True):
        block = ask.params[0]
        with pytest.raises(StopIteration) as stop:
            plan.send(([_Compared(given + n + 1) for n in range(block)],))
        taken.append(stop.value.value)
        given += block
    assert taken == sorted(taken) and len(set(taken)) == 50
    assert _Compared.made < 6 * given  # (all sorted again at each answer: ~25x as many)


def test_a_failed_one_trip_save_stores_none_of_its_rows_says_one_line_and_the_next_saves(url):
    store = open_store(url)
    try:
        saved = _ticks(store, "r", 2)
        tamper(store, "CREATE FUNCTION jianmu.refuse() RETURNS trigger LANGUAGE plpgsql AS "
                      "$$BEGIN RAISE EXCEPTION 'events refused'; END$$")
        tamper(store, "CREATE TRIGGER refuse BEFORE INSERT ON jianmu.events FOR EACH ROW EXECUTE FUNCTION jianmu.refuse()")
        with pytest.raises(StoreError) as raised:
            store.save(_record("r", 2, saved[-1], saved[0]), [_event("r", 2)])
        assert str(raised.value) == f"{store.location}: events refused"
        assert [c.id for c in store.list("r")] == saved  # no checkpoint without its events
        tamper(store, "DROP TRIGGER refuse ON jianmu.events")
        latest = store.save(_record("r", 2, saved[-1], saved[0]), [_event("r", 2)])
        assert [c.tick for c in store.list("r")] == [0, 1, 2] and store.get(latest).state == {"": {"n": 2}}
        assert [e.payload["tick"] for _, e in store.events("r")] == [0, 1, 2]
    finally:
        store.close()


async def test_a_follower_hears_each_one_trip_save_of_the_async_store(url):
    writer, follower = open_store(url, asynchronous=True), open_store(url)
    try:
        assert follower.wait_for_change(0)  # (listening from now on)
        first = await writer.save_async(_record("r", 0, None, None), [_event("r", 0)])
        assert follower.wait_for_change(10)
        await writer.save_async(_record("r", 1, first, first), [_event("r", 1)])
        assert follower.wait_for_change(10)
        assert [c.tick for c in follower.list("r")] == [0, 1]
    finally:
        writer.close()
        follower.close()


def test_writes_that_must_see_each_other_and_a_notify_twice_are_not_fused_into_one_statement():
    insert = Query("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO NOTHING", ("k", "1"))
    upsert = Query("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", ("k", "2"))
    notify = Query(NOTIFY, ("jianmu_checkpoints", "r"))
    event = Query("INSERT INTO events (id, run_id) VALUES (?, ?)", (7, "r"))
    statements = fused([insert, notify, event, notify, upsert, notify])
    assert [s.sql for s in statements] == [  # (the upsert would not see the insert's row in one statement)
        "WITH w0 AS (INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO NOTHING), "
        "w2 AS (INSERT INTO events (id, run_id) VALUES (?, ?)) SELECT pg_notify(?, ?)",
        "WITH w0 AS (INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value) "
        "SELECT pg_notify(?, ?)"]
    assert [s.params for s in statements] == [("k", "1", 7, "r", "jianmu_checkpoints", "r"),
                                              ("k", "2", "jianmu_checkpoints", "r")]
