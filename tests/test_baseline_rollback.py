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

from runtime.debug import Debugger
from runtime.engine.record import Returns
from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import StoreError, runner_checkpoints
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


def _seen(runner: ReactiveRunner) -> tuple[dict, dict, dict]:
    """The runner's state, statuses and composite positions now."""
    captured = runner.capture()
    return runner.state_manager.snapshot(), dict(captured.statuses), dict(captured.positions)


def _read(checkpoint) -> tuple[dict, dict, dict]:
    """A checkpoint's state, statuses and composite positions."""
    positions = {path: entry["child"] for path, entry in checkpoint.resume.items() if "child" in entry}
    return checkpoint.state, checkpoint.statuses, positions


def _returns(returns: Returns | None) -> tuple[list[str], list[str]] | None:
    return None if returns is None else (list(returns.paths), [status.value for status in returns.statuses])


class Seen:
    """The runner's state, statuses and positions after each tick, and what its nodes returned in
    it, by (branch, tick): what its checkpoints must read back."""

    def __init__(self, runner: ReactiveRunner):
        self.runner = runner
        self.at: dict[tuple[str, int], tuple[dict, dict, dict, tuple | None]] = {}

    async def step(self) -> None:
        report = await self.runner.step()
        self.at[self.runner.checkpoints.branch, self.runner.tick_count] = (*_seen(self.runner),
                                                                           _returns(report.returns))

    async def refused(self) -> None:
        """A step whose save is refused, naming the key; the run goes on once `text` is fixed."""
        with pytest.raises(StoreError, match="state key 'text'.*not valid Unicode"):
            await self.runner.step()
        Debugger(self.runner).edit_state(None, "text", "fixed")

    async def stored_as_seen(self, store) -> list[int]:
        """Every checkpoint the store holds reads back as the run was at its tick; returns their ticks."""
        if (settling := self.runner.checkpoints.settle()) is not None:
            await settling
        ticks = []
        for info in store.list(self.runner.run_id):
            checkpoint = store.get(info.id)
            assert (*_read(checkpoint), _returns(checkpoint.returns)) == self.at[checkpoint.branch, checkpoint.tick], \
                (checkpoint.branch, checkpoint.tick)
            ticks.append(checkpoint.tick)
        return ticks


@pytest.mark.parametrize("packed", [False, True])  # (its statuses packed, as a large tree's are)
@pytest.mark.parametrize("bad", [3, 5])  # (full_every 3: tick 3's record a delta, tick 5's a full one)
async def test_a_run_that_goes_on_after_a_refused_save_stores_what_it_had_at_each_tick(store, bad, packed,
                                                                                        monkeypatch):
    if packed:
        monkeypatch.setattr(runner_checkpoints, "TREE_PATHS_FROM", 1)
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
    state, statuses, positions = _seen(runner)
    if (settling := runner.checkpoints.settle()) is not None:
        await settling
    end = store.get(runner.checkpoints.save(status="ERROR"))  # as the CLI records a stopped run's end
    assert (end.tick, end.status) == (3, "ERROR")
    assert _read(end) == ({**state, "": {**state[""], "text": ""}}, statuses, positions)  # its last stored text


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
