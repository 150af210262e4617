"""A recorded run's events: the store keeps a tick's telemetry (tick.started, node.status,
tick.completed) as a few numbers beside its checkpoint's status delta and rebuilds the events
on reading, so what `store.events()` gives back is what a subscriber saw live (issue #14 point 2)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_checkpoint_store import Chat, chat_tree

from runtime.engine import RuntimeEventBus
from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import EventsRead


async def _recorded(store, *, watched: bool, full_every: int = 4):
    """A chat run (full records every `full_every` saves), forked at its middle with an edit and
    run to its end; returns (runner, what a subscriber to every event saw as (branch, event))."""
    bus = RuntimeEventBus(history=0)
    runner = ReactiveRunner(chat_tree(9), Chat, event_bus=bus, checkpointer=store)
    runner.checkpoints.full_every = full_every
    seen: list = []
    if watched:
        bus.subscribe(lambda event: seen.append((runner.checkpoints.branch, event)))
    await runner.run()
    middle = store.list(runner.run_id)[len(store.list(runner.run_id)) // 2]
    before = len(seen)
    runner.fork(middle.id, state_updates={"turns": 7})
    seen[before:] = [pair for pair in seen[before:] if pair[0] != "main"]  # the restore's notice: no branch's story
    await runner.run()
    return runner, seen


async def test_the_stored_events_are_those_a_subscriber_saw_live(store):
    runner, seen = await _recorded(store, watched=True)
    stored = store.events(runner.run_id)
    assert stored == seen
    types = [event.type for _, event in stored]
    assert types.count("tick.started") == types.count("tick.completed") == len(store.list(runner.run_id)) - 2
    assert {branch for branch, _ in stored} == {"main", "fork-1"}
    statuses = [(e.tick, e.node, e.payload["new"]) for b, e in stored if b == "main" and e.type == "node.status"]
    assert statuses[:3] == [(1, "loop", "RUNNING"), (1, "loop/seq", "RUNNING"), (1, "loop/seq/say", "RUNNING")]


async def test_a_run_nobody_watched_records_the_same_telemetry(store, tmp_path):
    """The runner numbers the telemetry whether or not anybody wants it built."""
    from runtime.memory.checkpoint import SQLiteCheckpointStore

    def timeless(pairs):
        out = []
        for branch, event in pairs:
            payload = {k: v for k, v in event.payload.items() if k != "duration_ms"}
            out.append((branch, replace(event, time=0.0, run_id=None, payload=payload)))
        return out

    watched, _ = await _recorded(store, watched=True)
    other = SQLiteCheckpointStore(tmp_path / "unwatched.db")
    unwatched, seen = await _recorded(other, watched=False)
    assert seen == []
    assert timeless(other.events(unwatched.run_id)) == timeless(store.events(watched.run_id))
    other.close()


async def test_telemetry_survives_checkpoints_that_are_all_full(store):
    """A full record cannot take its old statuses from its chain: it keeps the changes itself."""
    runner, seen = await _recorded(store, watched=True, full_every=0)
    assert store.events(runner.run_id) == seen


async def test_telemetry_of_a_run_with_many_chains_is_rebuilt_from_each_chain(store):
    """More chains than the store keeps statuses for at once (a full record every other save)."""
    runner, seen = await _recorded(store, watched=True, full_every=1)
    assert len({info.id for info in store.list(runner.run_id)}) > 16
    assert store.events(runner.run_id) == seen


async def _looked_at_each_tick(store, *, let_go: bool = False):
    """A chat run stepped tick by tick, forked at its middle and stepped to its end, the store asked
    after each tick for what is new (`since`); `let_go` forgets the chains' statuses between looks,
    as when more chains are written at once than the store keeps. Returns (runner, the looks)."""
    runner = ReactiveRunner(chat_tree(9), Chat, checkpointer=store)
    runner.checkpoints.full_every = 2
    read, looks = EventsRead(), []

    async def step_to_the_end():
        while not runner.finished:
            await runner.step()
            looks.append(store.events(runner.run_id, since=read))
            if let_go:
                read.chains.clear()

    await step_to_the_end()
    runner.fork(store.list(runner.run_id)[6].id, state_updates={"turns": 7})
    await step_to_the_end()
    return runner, looks


@pytest.mark.parametrize("let_go", [False, True], ids=["chains kept", "chains let go"])
async def test_events_read_as_they_land_add_up_to_the_whole_run(store, let_go):
    """A follower's looks (studio/follow.py) each bring only what landed since the one before, and
    together they are what one read of the whole run gives, telemetry and its old statuses included."""
    runner, looks = await _looked_at_each_tick(store, let_go=let_go)
    whole = store.events(runner.run_id)
    assert [pair for look in looks for pair in look] == whole
    assert {branch for branch, _ in whole} == {"main", "fork-1"}
    started = [sum(event.type == "tick.started" for _, event in look) for look in looks]
    assert len(started) > 10 and max(started) == 1  # a look holds the tick just made, never the run again
    assert store.events(runner.run_id, since=EventsRead()) == whole
