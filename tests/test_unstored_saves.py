"""A record no store can keep, and the writes of an asyncio store still waiting: the good checkpoints
taken before it are written all the same, and a run that waits for its writes never spins the loop."""

from __future__ import annotations

import asyncio
import threading
from collections import deque

import pytest
from pydantic import BaseModel

from runtime import Agent
from runtime.memory.checkpoint import StoreError, open_store, sqlite_store
from runtime.memory.checkpoint.runner_checkpoints import RunnerCheckpoints
from runtime.node import Sequence, node
from runtime.node.wait import Wait


class Text(BaseModel):
    b: str = ""


def _held_writes(monkeypatch) -> threading.Event:
    """The asyncio SQLite store's writer waits while the event returned is clear."""
    free = threading.Event()
    free.set()
    run = sqlite_store.SQLiteCheckpointStore._run

    def held(self, plan):
        free.wait()
        return run(self, plan)

    monkeypatch.setattr(sqlite_store.SQLiteCheckpointStore, "_run", held)
    return free


async def test_an_unstorable_full_record_leaves_the_checkpoints_taken_before_it_to_be_written(tmp_path, monkeypatch):
    free = _held_writes(monkeypatch)

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
