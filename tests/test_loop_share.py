"""Runs in one event loop take turns (runtime/engine/loop_share.py): a run whose ticks never wait
for anything lets the loop's other coroutines run between them, and runs side by side share it."""

import asyncio
import contextvars
import time

import pytest
from py_trees.common import ParallelPolicy, Status
from py_trees.composites import Parallel
from pydantic import BaseModel

from runtime.engine import ReactiveRunner, loop_share
from runtime.memory.checkpoint import InMemoryCheckpointStore
from runtime.node import AsyncNode, Node


class Counted(BaseModel):
    count: int = 0
    seen: list[int] = []


class Spin(Node):
    """Ticks again at once (a signalled write) until it has run `ticks` times: a run that never waits."""

    def __init__(self, ticks: int, busy: float = 0.0):
        super().__init__(name="spin")
        self.ticks, self.busy = ticks, busy

    def update(self) -> Status:
        if self.busy:
            time.sleep(self.busy)  # a tick this long at least: its CPU, as far as the loop can tell
        count = self.read_state("count") + 1
        self.write_state({"count": count}, signal=count < self.ticks)
        return Status.SUCCESS if count >= self.ticks else Status.RUNNING


async def _ticks_seen_beside(runs: list[ReactiveRunner]) -> list[tuple[int, ...]]:
    """Run `runs` at once; meanwhile another coroutine notes their tick counts each time it gets the loop."""
    seen = []

    async def watch() -> None:
        while True:
            seen.append(tuple(r.tick_count for r in runs))
            await asyncio.sleep(0)

    watcher = asyncio.create_task(watch())
    await asyncio.sleep(0)
    assert await asyncio.gather(*(r.run() for r in runs)) == [Status.SUCCESS] * len(runs)
    watcher.cancel()
    return seen


@pytest.fixture
def no_slice(monkeypatch):
    """Every tick after an iteration's first waits for the next iteration: the turns made visible
    without depending on how fast the machine is."""
    monkeypatch.setattr(loop_share, "SLICE", 0.0)


async def test_a_run_that_never_waits_lets_another_coroutine_run_between_its_ticks(no_slice):
    runner = ReactiveRunner(Spin(50), Counted, checkpointer=InMemoryCheckpointStore())
    seen = await _ticks_seen_beside([runner])
    assert runner.tick_count == 50
    between = {ticks for (ticks,) in seen if 0 < ticks < 50}
    assert len(between) >= 40  # the watcher ran between (nearly) every two ticks


async def test_ticks_longer_than_the_slice_yield_at_the_default_slice():
    busy = 2 * loop_share.SLICE
    runner = ReactiveRunner(Spin(10, busy=busy), Counted)
    seen = await _ticks_seen_beside([runner])
    assert len({ticks for (ticks,) in seen if 0 < ticks < 10}) >= 8


async def test_runs_side_by_side_take_turns(no_slice):
    first, second = ReactiveRunner(Spin(30), Counted), ReactiveRunner(Spin(30), Counted)
    seen = await _ticks_seen_beside([first, second])
    # neither ran to its end while the other stood still: their ticks interleave
    assert any(0 < a < 30 and 0 < b < 30 for a, b in seen)
    assert max(abs(a - b) for a, b in seen) <= 2


async def test_runs_started_at_once_take_turns_before_their_fresh_starts(no_slice):
    """(A fresh start takes a full record of the run, its input saved: 50 started at once held the loop
    ~10 ms, each run's start in the same iteration.)"""
    runs = [ReactiveRunner(Spin(3), Counted, checkpointer=InMemoryCheckpointStore()) for _ in range(3)]
    tasks = [asyncio.create_task(r.run()) for r in runs]
    await asyncio.sleep(0)  # (one iteration: each task's first step)
    assert [r.run_id is not None for r in runs] == [True, False, False]
    assert await asyncio.gather(*tasks) == [Status.SUCCESS] * 3


async def test_a_run_cancelled_in_line_leaves_the_others_going(no_slice):
    runs = [ReactiveRunner(Spin(20), Counted) for _ in range(3)]
    tasks = [asyncio.create_task(r.run()) for r in runs]
    while runs[1].tick_count < 5:
        await asyncio.sleep(0)
    tasks[1].cancel()
    done = await asyncio.gather(*tasks, return_exceptions=True)
    assert done[0] == done[2] == Status.SUCCESS
    assert isinstance(done[1], asyncio.CancelledError)


async def test_no_slice_limit_means_no_turns(monkeypatch):
    monkeypatch.setattr(loop_share, "SLICE", None)
    runner = ReactiveRunner(Spin(30), Counted)
    seen = await _ticks_seen_beside([runner])
    assert {ticks for (ticks,) in seen if 0 < ticks < 30} == set()  # one step: the loop held throughout


class Note(AsyncNode):
    """Notes the count after yielding to the loop twice: what it sees depends on how its work and
    the run's ticks interleave."""

    async def update_async(self) -> Status:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        self.write_state({"seen": [*self.read_state("seen"), self.read_state("count")]}, signal=False)
        return Status.SUCCESS


async def test_a_lone_run_with_work_in_flight_keeps_the_order_asyncio_gives_it(monkeypatch):
    """Its ticks and its async work interleave as without turns (the order a restore retraces), even
    when every turn would be taken."""
    outcomes = []
    for slice_ in (None, 0.0):
        monkeypatch.setattr(loop_share, "SLICE", slice_)
        both = Parallel("both", policy=ParallelPolicy.SuccessOnAll(synchronise=True), children=[Note(name="note"), Spin(12)])
        runner = ReactiveRunner(both, Counted)
        await runner.run()
        outcomes.append((runner.tick_count, runner.state_manager.get("seen")))
    assert outcomes[0] == outcomes[1]


async def test_a_line_let_go_one_at_a_time_lets_more_go_once_their_turns_are_quick(monkeypatch):
    """One turn longer than the slice leaves one let go an iteration; quick turns after it grow the
    number let go again (else the loop turns over twice a turn for good, while a line stands)."""
    monkeypatch.setattr(loop_share, "SLICE", 0.2)
    share = loop_share.share_of(asyncio.get_running_loop())
    runs = [_Run() for _ in range(10)]
    for run in runs:
        share.join(run)
    done, iterations = [], []

    async def turns(first: bool) -> None:
        for n in range(20):
            if (waits := share.turn()) is not None:
                await waits
            if first and n == 0:
                time.sleep(loop_share.SLICE)  # the slice spent by one turn: a line forms behind it
            done.append(n)

    async def watch() -> None:
        while len(done) < 200:
            iterations.append(len(done))
            await asyncio.sleep(0)

    watcher = asyncio.create_task(watch())
    await asyncio.gather(*(turns(i == 0) for i in range(10)))
    await watcher
    for run in runs:
        share.leave(run)
    assert len(iterations) < 60  # 200 turns (one an iteration for good: over 300 iterations)


class _Run:
    """A run as its loop's share sees it (joined, side by side with another: every turn is taken)."""


async def test_a_write_of_a_swarms_run_takes_no_turn_though_it_names_no_run(no_slice):
    share = loop_share.share_of(asyncio.get_running_loop())
    runs = [_Run(), _Run()]
    for run in runs:
        share.join(run)
    swarm_run = type("Context", (), {"runtime": object()})()

    def a_stores_turn(context):
        """What a store's write asks in a task started by the run with `context` (it knows no run)."""
        loop_share.runs_as(context)
        return loop_share.take_turn()

    assert loop_share.take_turn() is None  # the iteration's first turn: the slice (none) is spent now
    assert contextvars.copy_context().run(a_stores_turn, swarm_run) is None
    waits = contextvars.copy_context().run(a_stores_turn, None)  # any other run's waits its turn
    assert waits is not None
    await waits
    for run in runs:
        share.leave(run)


async def test_a_postgresql_write_takes_its_turn_before_its_first_statement_only(monkeypatch):
    import contextlib

    from runtime.memory.checkpoint import postgres_async
    from runtime.memory.checkpoint.sql_plan import ONE, Query

    turns, sent = [], []

    async def turn():
        turns.append(len(sent))

    class Cursor:
        async def fetchone(self):
            return (1,)

    class Connection:
        async def execute(self, sql, params):
            sent.append(sql)
            return Cursor()

    def plan():
        yield Query("BEGIN")
        yield Query("SELECT 1", want=ONE)
        yield Query("SELECT 2", want=ONE)
        yield Query("COMMIT")
        return "done"

    store = postgres_async.AsyncPostgresCheckpointStore.__new__(postgres_async.AsyncPostgresCheckpointStore)
    store._size = 1
    store._configure("postgresql://nowhere/none")
    store._connection = lambda: contextlib.nullcontext(Connection())  # (its connections: one that answers all)
    monkeypatch.setattr(postgres_async, "take_turn", lambda: turn())
    assert await store._run_async(plan()) == "done"
    assert sent == ["BEGIN", "SELECT 1", "SELECT 2", "COMMIT"] and turns == [0]  # never inside the transaction
