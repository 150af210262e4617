"""Restore-then-run continues the restored checkpoint (tick 0, finished, forks), a restored
Timeout keeps its time left, and restores served from decoded lists give the stored state."""

from __future__ import annotations

import asyncio
import random

from py_trees.common import Status
from test_checkpoint_restore import AsyncCount, Count, State
from test_checkpoint_store import Chat, chat_tree

from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import open_store
from runtime.node import AsyncNode, Sequence, StateCondition, Timeout


async def _events_of(runner: ReactiveRunner) -> list:
    events = []
    sub = runner.event_bus.subscribe(events.append)
    await runner.run()
    sub.close()
    return events


async def test_a_restored_finished_run_reports_its_status_without_ticking_then_runs_fresh(store):
    runner = ReactiveRunner(Sequence("s", memory=True, children=[Count("c0", 100), AsyncCount("c1", 100)]),
                            State, checkpointer=store)
    assert await runner.run() == Status.SUCCESS
    run_id, ticks, final = runner.run_id, runner.tick_count, runner.state_manager.snapshot()
    last = store.latest(run_id)
    assert last.status == "SUCCESS"

    runner.restore(last.id)
    events = await _events_of(runner)
    assert runner.status == Status.SUCCESS and runner.run_id == run_id and runner.tick_count == ticks
    assert runner.state_manager.snapshot() == final
    assert [e.type for e in events] == ["run.started", "run.completed"]
    assert events[0].payload["fresh"] is False and events[1].payload == {"status": "SUCCESS", "ticks": ticks}
    assert store.latest(run_id).id == last.id  # nothing ran, nothing was saved

    await runner.run()  # the restore is used up: a finished runner starts a fresh run
    assert runner.run_id != run_id and runner.state_manager.get("c0") == 2


async def test_restoring_and_forking_tick_0_run_on_with_the_restored_state(store):
    tree = Sequence("s", memory=True, children=[
        AsyncCount("c1", 100), Count("c0", 100), StateCondition("check", key="c0", op=">=", value=5)])
    runner = ReactiveRunner(tree, State, checkpointer=store)
    assert await runner.run(input_data={"c0": 1, "total": 7}) == Status.FAILURE  # c0 reaches 2 only
    run_id = runner.run_id
    start = store.list(run_id)[0]
    assert start.tick == 0 and start.source == "input"

    runner.restore(start.id)
    assert await runner.run() == Status.FAILURE
    assert runner.run_id == run_id
    assert runner.state_manager.get("total") == 7  # run-scoped, set by the input: not reset again
    assert runner.state_manager.get("c0") == 2 and runner.state_manager.get("c1") == 1

    branch = runner.fork(start.id, state_updates={"c0": 4})
    assert await runner.run() == Status.SUCCESS  # the edit at tick 0 is what the run went on with
    assert runner.run_id == run_id and runner.checkpoints.branch == branch
    assert runner.state_manager.get("c0") == 5 and runner.state_manager.get("total") == 7
    assert [c.source for c in store.history(run_id, branch)][-2:] == ["fork", "input"]


class Hold(AsyncNode):
    """RUNNING until its gate opens."""

    def __init__(self, name: str, gate: asyncio.Event):
        super().__init__(name=name)
        self.gate = gate

    async def update_async(self) -> Status:
        await self.gate.wait()
        return Status.SUCCESS


async def test_a_restored_running_timeout_goes_on_with_the_time_it_had_left(store):
    runner = ReactiveRunner(Timeout("limit", Hold("hold", asyncio.Event()), duration=30), State, checkpointer=store)
    await runner.run(max_ticks=1)
    await asyncio.sleep(0.05)
    saved = runner.checkpoints.save()
    remaining = store.get(saved).resume["limit"]["data"]["remaining"]
    assert 0 < remaining < 30 - 0.04
    runner.stop()

    gate = asyncio.Event()
    again = ReactiveRunner(Timeout("limit", Hold("hold", gate), duration=30), State, checkpointer=store)
    again.restore(saved)
    timeout = again.nodes["limit"]
    assert timeout.status == Status.RUNNING
    left = timeout.expiry_time - asyncio.get_running_loop().time()
    assert remaining - 1 < left <= remaining  # re-armed for the time left, not the whole duration
    assert 0 < again.checkpoints.store.get(again.checkpoints.save()).resume["limit"]["data"]["remaining"] <= left
    gate.set()
    assert await asyncio.wait_for(again.run(), timeout=5) == Status.SUCCESS


async def test_a_restored_timeout_still_expires(store):
    """Its timer, armed at the restore, ends the wait for the restarted child that never finishes."""
    runner = ReactiveRunner(Timeout("limit", Hold("hold", asyncio.Event()), duration=0.2), State,
                            checkpointer=store)
    await runner.run(max_ticks=1)
    saved = runner.checkpoints.save()
    runner.stop()
    again = ReactiveRunner(Timeout("limit", Hold("hold", asyncio.Event()), duration=0.2), State,
                           checkpointer=store)
    again.restore(saved)
    events = []
    again.event_bus.subscribe(events.append, types=["node.timeout"])
    assert await asyncio.wait_for(again.run(), timeout=5) == Status.FAILURE
    assert [e.node for e in events] == ["limit"]


def test_a_timeout_restored_outside_an_event_loop_arms_at_its_next_tick():
    timeout = Timeout("limit", Hold("hold", asyncio.Event()), duration=30)
    timeout.restore_resume_state({"remaining": 2.0})
    assert timeout.dump_resume_state() == {"remaining": 2.0}  # a save before that tick keeps it

    async def tick():
        status = timeout.update()
        left = timeout.expiry_time - asyncio.get_running_loop().time()
        timeout.terminate(Status.INVALID)
        return status, left

    status, left = asyncio.run(tick())
    assert status == Status.RUNNING and 1.5 < left <= 2.0
    assert timeout.dump_resume_state() == {}


async def test_restores_in_any_order_give_each_checkpoint_its_stored_state(store_name):
    """The runner keeps restored lists decoded; any checkpoint still comes back exactly as stored,
    also after a restored run appended to its history and after the store was reopened."""
    store = open_store(store_name)
    runner = ReactiveRunner(chat_tree(40), Chat, checkpointer=store)
    runner.checkpoints.full_every = 7
    await runner.run()
    run_id = runner.run_id
    store.close()

    store = open_store(store_name)
    again = ReactiveRunner(chat_tree(40), Chat, checkpointer=store)
    infos = store.list(run_id)
    order = random.Random(4).sample(infos, len(infos))
    for info in order[:25]:
        again.restore(info.id)
        assert again.state_manager.snapshot() == store.get(info.id).state, f"checkpoint {info.id}"
        assert again.state_manager.get("messages") == store.get(info.id).state[""]["messages"]
    middle = infos[len(infos) // 2]
    again.restore(middle.id)
    await again.run()  # appends to a new stored list, from the restored (decoded) one
    assert again.state_manager.get("messages") == [f"message {i}" for i in range(1, 41)]
    for info in (middle, infos[-1], infos[3]):
        again.restore(info.id)
        assert again.state_manager.snapshot() == store.get(info.id).state
    store.close()
