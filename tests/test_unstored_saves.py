"""A record no store can keep, and the writes of an asyncio store still waiting: the good checkpoints
taken before it are written all the same, and a run that waits for its writes never spins the loop."""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from runtime import Agent
from runtime import agent as agent_module
from runtime.memory.checkpoint import StoreError, open_store, sqlite_store
from runtime.memory.checkpoint.runner_checkpoints import RunnerCheckpoints
from runtime.node import Sequence, node
from runtime.node.wait import Wait


class Text(BaseModel):
    b: str = ""


@pytest.fixture
def free(monkeypatch) -> Iterator[threading.Event]:
    """The asyncio SQLite store's writer waits while this event is clear (set again at the end)."""
    free = threading.Event()
    free.set()
    run = sqlite_store.SQLiteCheckpointStore._run

    def held(self, plan):
        free.wait()
        return run(self, plan)

    monkeypatch.setattr(sqlite_store.SQLiteCheckpointStore, "_run", held)
    yield free
    free.set()


async def test_an_unstorable_full_record_leaves_the_checkpoints_taken_before_it_to_be_written(tmp_path, free):

    @node(name="Hold")
    def hold(state: dict) -> dict:
        free.clear()  # the writes of this tick and after wait ...
        return {}

    @node(name="Bad")
    def bad(state: dict) -> dict:
        asyncio.get_running_loop().call_soon(free.set)  # ... until this tick's record is taken
        return {"b": "bad \udc80"}

    store = open_store(str(tmp_path / "runs.db"), asynchronous=True)
    agent = Agent(Sequence("Root", memory=True, children=[Wait(f"w{i}", 0.0) for i in range(7)] + [hold(), bad()]),
                  state_schema=Text)
    agent.runner = agent.make_runner(checkpointer=store)
    agent.runner.checkpoints.full_every = 4  # the bad tick's record is a full one
    with pytest.raises(StoreError, match="not valid Unicode"):
        await agent.run({})
    ticks = agent.runner.tick_count
    assert ticks == 10
    assert [info.tick for info in store.list(store.runs()[0].run_id)] == list(range(ticks))
    store.close()


async def test_waiting_for_writes_whose_last_is_done_but_not_yet_let_go_yields_the_loop(tmp_path, monkeypatch):
    checkpoints = RunnerCheckpoints.__new__(RunnerCheckpoints)
    checkpoints._flying, checkpoints._failed = deque(), None
    turns = {"shield": 0}
    shield = asyncio.shield

    def counted(awaitable):  # (an endless loop of them, never yielding, would hang the test)
        turns["shield"] += 1
        if turns["shield"] > 1_000:
            raise AssertionError("the wait spins without yielding the loop")
        return shield(awaitable)

    monkeypatch.setattr(asyncio, "shield", counted)

    async def write() -> int:
        return 1

    done = asyncio.ensure_future(write())
    checkpoints._flying.append(done)
    done.add_done_callback(checkpoints._flying.remove)  # (called soon after it is done)

    async def wait() -> None:  # runs right after the write's last step, before its callback
        settling = checkpoints.settle()
        if settling is not None:
            await settling

    await asyncio.gather(done, asyncio.ensure_future(wait()))
    assert not checkpoints._flying


def _waiting_agent(tmp_path) -> tuple[Agent, object, list[str]]:
    """An agent recording into an asyncio SQLite store, whose run waits an hour; and what its close() saw."""
    store = open_store(str(tmp_path / "runs.db"), asynchronous=True)
    agent = Agent(Sequence("Root", memory=True, children=[Wait("w", 3600.0)]), state_schema=Text)
    agent.runner = agent.make_runner(checkpointer=store)
    closed: list[str] = []

    async def close() -> None:
        closed.append("closed")

    agent.close = close
    return agent, store, closed


async def _started(agent: Agent) -> asyncio.Task:
    task = asyncio.ensure_future(agent.run({}))
    while agent.runner.run_id is None:
        await asyncio.sleep(0.01)
    return task


async def test_a_cancelled_run_whose_store_hangs_waits_a_bounded_time_and_closes_its_providers(tmp_path, free):
    free.clear()  # the store never answers (until the test lets it)
    agent, store, closed = _waiting_agent(tmp_path)
    agent.runner.settle_within = 0.05
    task = await _started(agent)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 60)  # (a guard: unbounded, the wait never ends)
    assert closed == ["closed"]
    free.set()
    await agent_module.settled(agent.runner)  # (its last writes, let go)
    store.close()


async def test_a_run_cancelled_again_while_it_waits_for_its_last_checkpoints_closes_its_providers(tmp_path,
                                                                                                 monkeypatch, free):
    waiting = asyncio.Event()
    settled = agent_module.settled

    async def noted(runner) -> None:
        waiting.set()
        await settled(runner)

    monkeypatch.setattr(agent_module, "settled", noted)
    agent, store, closed = _waiting_agent(tmp_path)
    task = await _started(agent)
    while agent.runner.checkpoints._flying:  # (its writes done, the run waits)
        await asyncio.sleep(0.01)
    free.clear()  # its last checkpoint, interrupted, is never written (until the test lets it)
    task.cancel()
    await waiting.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert closed == ["closed"]
    free.set()
    await agent_module.settled(agent.runner)  # (its last writes, let go)
    store.close()


async def test_a_runs_input_that_could_not_be_written_stops_the_run(tmp_path, monkeypatch):
    """The first checkpoint (the run's input) refused by a store locked past its wait: the run stops at its
    first step, naming it, not going on without its input recorded (it cannot be taken again later)."""
    store = open_store(str(tmp_path / "runs.db"))
    save = type(store).save

    def locked_once(self, record, events):
        monkeypatch.setattr(type(store), "save", save)
        raise StoreError(f"{self.location}: locked by another process")

    monkeypatch.setattr(type(store), "save", locked_once)
    agent = Agent(Sequence("Root", memory=True, children=[Wait(f"w{i}", 0.0) for i in range(3)]), state_schema=Text)
    agent.runner = agent.make_runner(checkpointer=store)
    with pytest.raises(StoreError, match="checkpoint of tick 0 not written: .*locked by another process"):
        await agent.run({})
    assert agent.runner.tick_count <= 1
    assert not [info for run in store.runs() for info in store.list(run.run_id)]  # no line beginning after it
    store.close()


async def test_a_runs_failed_input_is_not_the_next_runs_failure(tmp_path):
    """Run A's input refused and run A stopped before its next tick, then a restart (the studio's r): run B
    steps and records; the failure was run A's."""
    store = open_store(str(tmp_path / "runs.db"))
    runner = Agent(Sequence("Root", memory=True, children=[Wait("w", 0.0)]), state_schema=Text).make_runner(
        checkpointer=store)
    await runner.step()  # run A
    runner.checkpoints._failed = StoreError("run A's input: locked by another process")  # (as a refused input leaves it)
    runner.start_fresh()  # run B
    await runner.step()
    assert [info.tick for info in store.list(runner.run_id)] == [1]
    store.close()
