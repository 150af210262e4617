"""A save refused for a value no store can keep leaves the writer where the store is (#32).

The writer tracks what it stored (the values, lists, statuses and positions a delta is taken
against). A refused record was never stored, so a run that goes on after it (the studio keeps the
session, an edit fixes the value) must take its next records against what the store holds: every
checkpoint stored then reads back the state and statuses the run had at its tick, on every store.
"""

from __future__ import annotations

import operator
from typing import Annotated

import pytest
from py_trees.behaviours import Success
from py_trees.common import Status
from pydantic import BaseModel

from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import StoreError
from runtime.node import Node, Selector, Sequence

BAD = "bad \udc80"  # a lone surrogate: no store can keep it


class Notes(BaseModel):
    n: int = 0
    text: str = ""
    stage: str = "before"
    log: Annotated[list[str], operator.add] = [f"start {i}" for i in range(8)]  # long: stored in chunks


class Count(Node):
    """RUNNING, a tick counted each tick (`n`, a line of `log`); at tick `bad` it also writes a
    text no store can keep and, once, `stage`."""

    def __init__(self, bad: int):
        super().__init__(name="Count")
        self.bad = bad

    def update(self) -> Status:
        n = self.read_state("n") + 1
        out = {"n": n, "log": [f"tick {n}"]}
        if n == self.bad:
            out |= {"text": BAD, "stage": "after"}
        self.write_state(out)
        return Status.RUNNING


class Since(Node):
    """FAILURE before tick `bad`, SUCCESS from it on: statuses that change in the refused tick only."""

    def __init__(self, bad: int):
        super().__init__(name="Since")
        self.bad = bad

    def update(self) -> Status:
        return Status.SUCCESS if self.read_state("n") + 1 >= self.bad else Status.FAILURE


def _runner(store, bad: int, full_every: int) -> ReactiveRunner:
    tree = Sequence("Root", memory=False, children=[Selector("Pick", memory=False, children=[
        Since(bad), Success("Always")]), Count(bad)])
    runner = ReactiveRunner(tree, Notes, checkpointer=store)
    runner.checkpoints.full_every = full_every
    return runner


class Seen:
    """The runner's state and statuses after each tick, by (branch, tick): what its checkpoints must read back."""

    def __init__(self, runner: ReactiveRunner):
        self.runner = runner
        self.at: dict[tuple[str, int], tuple[dict, dict]] = {}

    def note(self) -> None:
        runner = self.runner
        self.at[runner.checkpoints.branch, runner.tick_count] = (runner.state_manager.snapshot(),
                                                                 dict(runner.capture().statuses))

    async def step(self) -> None:
        await self.runner.step()
        self.note()

    async def refused(self) -> None:
        """A step whose save is refused, naming the key; the run goes on once `text` is fixed."""
        with pytest.raises(StoreError, match="state key 'text'.*not valid Unicode"):
            await self.runner.step()
        self.runner.state_manager.load({"text": "fixed"}, signal=True)  # as an edit does

    async def stored_as_seen(self, store) -> list[int]:
        """Every checkpoint the store holds reads back as the run was at its tick; returns their ticks."""
        if (settling := self.runner.checkpoints.settle()) is not None:
            await settling
        ticks = []
        for info in store.list(self.runner.run_id):
            checkpoint = store.get(info.id)
            state, statuses = self.at[checkpoint.branch, checkpoint.tick]
            assert (checkpoint.state, checkpoint.statuses) == (state, statuses), (checkpoint.branch, checkpoint.tick)
            ticks.append(checkpoint.tick)
        return ticks


@pytest.mark.parametrize("bad", [3, 5])  # (full_every 3: tick 3's record a delta, tick 5's a full one)
async def test_a_run_that_goes_on_after_a_refused_save_stores_what_it_had_at_each_tick(store, bad):
    runner = _runner(store, bad, full_every=3)
    seen = Seen(runner)
    for _ in range(1, bad):
        await seen.step()
    await seen.refused()
    for _ in range(6):
        await seen.step()
    assert await seen.stored_as_seen(store) == [t for t in range(1, bad + 7) if t != bad]


async def test_a_run_stopped_by_a_refused_save_records_its_end_as_it_was_but_the_value_refused(store):
    runner = _runner(store, bad=3, full_every=10)
    seen = Seen(runner)
    for _ in range(2):
        await seen.step()
    with pytest.raises(StoreError, match="state key 'text'"):
        await runner.step()
    state, statuses = runner.state_manager.snapshot(), dict(runner.capture().statuses)
    if (settling := runner.checkpoints.settle()) is not None:
        await settling
    end = store.get(runner.checkpoints.save(status="ERROR"))  # as the CLI records a stopped run's end
    assert (end.tick, end.status) == (3, "ERROR")
    assert (end.state, end.statuses) == ({**state, "": {**state[""], "text": ""}}, statuses)  # its last stored text


async def test_a_restored_lines_first_record_refused_and_fixed_stores_what_the_run_had(store):
    runner = _runner(store, bad=3, full_every=3)
    seen = Seen(runner)
    for _ in range(2):
        await seen.step()
    if (settling := runner.checkpoints.settle()) is not None:
        await settling
    runner.checkpoints.restore(store.list(runner.run_id)[1].id)  # tick 2: the run goes on from there
    await seen.refused()  # tick 3: the first record of the restored line
    for _ in range(4):
        await seen.step()
    assert await seen.stored_as_seen(store) == [1, 2, 4, 5, 6, 7]


async def test_a_forks_first_record_refused_and_fixed_stores_what_the_run_had(store):
    runner = _runner(store, bad=0, full_every=3)
    seen = Seen(runner)
    for _ in range(3):
        await seen.step()
    if (settling := runner.checkpoints.settle()) is not None:
        await settling
    with pytest.raises(StoreError, match="state key 'text'.*not valid Unicode"):
        runner.checkpoints.fork(store.list(runner.run_id)[1].id, state_updates={"text": BAD})
    assert runner.checkpoints.branch == "fork-1"
    runner.state_manager.load({"text": "fixed"}, signal=True)
    for _ in range(4):
        await seen.step()
    assert await seen.stored_as_seen(store) == [1, 2, 3, 3, 4, 5, 6]
