"""Restoring a checkpoint and running on retraces the original run: same final state, same events.

"Same events" compares each event's type, tick, node and payload (without the tick's
`duration_ms`), ignoring `seq`, `time` and `run_id`, and ignoring `run.started`: every
call of `runner.run()` announces itself, and a resumed run is one more call.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from py_trees.common import Status
from pydantic import BaseModel

from runtime.debug.waiting import in_flight
from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import CheckpointError, InMemoryCheckpointStore, open_store
from runtime.node import AsyncNode, LoopUntilSuccess, Node, Selector, Sequence, StateCondition
from runtime.state import Ephemeral, StateValidationError


class State(BaseModel):
    c0: int = 0
    c1: int = 0
    c2: int = 0
    c3: int = 0
    trace: Annotated[list[str], operator.add] = []
    total: Annotated[int, Ephemeral(scope="run")] = 0


def _count(node, key: str, mod: int) -> Status:
    n = node.read_state(key) + 1
    node.write_state({key: n, "trace": [node.name]})
    return Status.FAILURE if n % mod == 0 else Status.SUCCESS


class Count(Node):
    """Counts its ticks in `key`; fails every `mod`-th time."""

    def __init__(self, key: str, mod: int):
        super().__init__(name=f"count_{key}")
        self.key, self.mod = key, mod

    def update(self) -> Status:
        return _count(self, self.key, self.mod)


class AsyncCount(AsyncNode):
    """The same after yielding to the loop; writes its own namespace too."""

    def __init__(self, key: str, mod: int):
        super().__init__(name=f"async_{key}")
        self.key, self.mod = key, mod

    async def update_async(self) -> Status:
        await asyncio.sleep(0)
        self._require_state().update({"seen": self.read_state(self.key)}, namespace="work")
        return _count(self, self.key, self.mod)


def build(spec) -> object:
    kind = spec[0]
    if kind == "sync":
        return Count(f"c{spec[1]}", spec[2])
    if kind == "async":
        return AsyncCount(f"c{spec[1]}", spec[2])
    if kind == "cond":
        key, at_least = f"c{spec[1]}", spec[2]
        return StateCondition(f"{key}>={at_least}", predicate=lambda s: getattr(s, key) >= at_least)
    if kind == "loop":
        return LoopUntilSuccess("loop", build(spec[2]), max_iterations=spec[1])
    composite = Sequence if kind == "seq" else Selector
    return composite(kind, memory=spec[1], children=[build(child) for child in spec[2]])


leaves = st.one_of(
    st.tuples(st.just("sync"), st.integers(0, 3), st.integers(2, 4)),
    st.tuples(st.just("async"), st.integers(0, 3), st.integers(2, 4)),
    st.tuples(st.just("cond"), st.integers(0, 3), st.integers(0, 3)),
)
trees = st.recursive(leaves, lambda kids: st.one_of(
    st.tuples(st.sampled_from(["seq", "sel"]), st.booleans(), st.lists(kids, min_size=1, max_size=3)),
    st.tuples(st.just("loop"), st.integers(1, 3), kids),
), max_leaves=7)


def _same(event) -> tuple:
    payload = {k: v for k, v in event.payload.items() if k != "duration_ms"}
    return event.type, event.tick, event.node, payload


def _comparable(events) -> list[tuple]:
    return [_same(e) for e in events if e.type != "run.started"]


MAX_TICKS = 150  # some generated trees never finish (a loop restarted by a Sequence without memory)


async def _run(runner: ReactiveRunner, max_ticks: int | None = None) -> list:
    events = []
    sub = runner.event_bus.subscribe(events.append)
    await runner.run(max_ticks)
    sub.close()
    return events


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=st.tuples(st.just("loop"), st.integers(1, 3), trees))
async def test_restoring_any_tick_and_running_on_retraces_the_run(spec):
    store = InMemoryCheckpointStore()
    runner = ReactiveRunner(build(spec), State, checkpointer=store)
    events = await _run(runner, MAX_TICKS)
    final = runner.state_manager.snapshot()
    checkpoints = store.list(runner.run_id)
    assert checkpoints[0].tick == 0 and checkpoints[0].status == "INVALID"
    picked = checkpoints[:-1:max(1, len(checkpoints) // 6)]  # the input (tick 0) and some RUNNING ones
    if runner.finished:
        picked.append(checkpoints[-1])  # a finished run stays finished
    for checkpoint in picked:
        again = ReactiveRunner(build(spec), State, checkpointer=store)
        again.restore(checkpoint.id)
        resumed = await _run(again, MAX_TICKS - checkpoint.tick)
        assert again.run_id == runner.run_id and again.tick_count == runner.tick_count
        assert again.state_manager.snapshot() == final, f"state differs after restoring tick {checkpoint.tick}"
        assert _comparable(resumed) == _comparable(e for e in events if e.seq > checkpoint.event_position)
    store.close()


async def test_restore_puts_back_loop_counts_positions_and_restarts_running_async_work(store):
    def tree():
        return LoopUntilSuccess("loop", Sequence("seq", memory=True, children=[
            Count("c0", 100), AsyncCount("c1", 100), StateCondition("enough", key="c1", op=">=", value=3)]),
            max_iterations=5)

    runner = ReactiveRunner(tree(), State, checkpointer=store)
    await runner.run()
    assert runner.state_manager.get("c1") == 3  # three iterations
    # the checkpoint where the async node of the second iteration was in flight
    target = next(c for c in store.list(runner.run_id) if store.get(c.id).statuses["loop/seq/async_c1"] == "RUNNING"
                  and store.get(c.id).resume["loop"]["data"]["iteration_count"] == 1)
    saved = store.get(target.id)
    assert saved.resume["loop/seq"] == {"child": 1}

    again = ReactiveRunner(tree(), State, checkpointer=store)
    again.restore(target.id)
    loop, seq = again.nodes["loop"], again.nodes["loop/seq"]
    assert loop.iteration_count == 1 and loop.status == Status.RUNNING
    assert seq.current_child is seq.children[1] and seq.status == Status.RUNNING
    async_c1 = again.nodes["loop/seq/async_c1"]
    assert async_c1.status == Status.RUNNING and in_flight(again.nodes) == []  # shown as saved; work starts again
    assert again.tick_count == target.tick and again.run_id == runner.run_id
    assert again.state_manager.snapshot() == saved.state
    await again.run()
    assert again.state_manager.snapshot() == runner.state_manager.snapshot()


async def test_a_fork_of_running_async_work_saves_the_picture_it_came_from_and_retraces_the_run(store):
    """The fork's first checkpoint is its source checkpoint's picture (an async node in flight stays
    RUNNING, not INVALID), so the studio shows the same tree on both, and a fork of that fork runs
    on exactly as the original did."""
    def tree():
        return Sequence("s", memory=True, children=[Count("c0", 100), AsyncCount("c1", 100), Count("c2", 100)])

    runner = ReactiveRunner(tree(), State, checkpointer=store)
    await runner.run()
    final, ticks = runner.state_manager.snapshot(), runner.tick_count
    source = next(c for c in store.list(runner.run_id) if store.get(c.id).statuses.get("s/async_c1") == "RUNNING")
    branch = runner.fork(source.id)
    forked = store.latest(runner.run_id, branch)
    assert store.get(forked.id).statuses == store.get(source.id).statuses
    again = ReactiveRunner(tree(), State, checkpointer=store)
    again.fork(forked.id)
    await again.run()
    assert again.state_manager.snapshot() == final and again.tick_count == ticks


async def test_restore_loads_raw_values_and_keeps_run_scoped_fields(store):
    class Bump(Node):
        def update(self) -> Status:
            self.write_state({"trace": ["x"], "total": self.read_state("total") + 1})
            return Status.SUCCESS

    def tree():
        return Sequence("s", memory=True, children=[Bump("b1"), AsyncCount("c1", 100), Bump("b2")])

    runner = ReactiveRunner(tree(), State, checkpointer=store)
    await runner.run()
    assert runner.state_manager.get("trace") == ["x", "b1", "x"] or runner.state_manager.get("trace")
    final = runner.state_manager.snapshot()
    after_first_tick = store.list(runner.run_id)[1]
    runner.restore(after_first_tick.id)
    assert runner.state_manager.get("trace") == ["x"]  # replaced as saved: no reducer on restore
    assert runner.state_manager.get("total") == 1  # run scope kept, not reset
    await runner.run()
    assert runner.state_manager.snapshot() == final
    # the restored line continues the same run and branch, from the restored checkpoint
    history = store.history(runner.run_id)
    assert [c.branch for c in history] == ["main"] * len(history)
    assert after_first_tick.id in [c.parent_id for c in history]
    assert history[-1].source == "input"


async def test_fork_edits_state_and_bindings_on_a_new_branch(store):
    tree = Sequence("s", memory=True, children=[
        AsyncCount("c1", 100), Count("c0", 100), StateCondition("check", key="c0", op=">=", value=5)])
    runner = ReactiveRunner(tree, State, checkpointer=store)
    assert await runner.run() == Status.FAILURE
    main_head = store.latest(runner.run_id, "main")
    start = store.list(runner.run_id)[1]  # after tick 1: the async counter is in flight
    assert start.status == "RUNNING"

    branch = runner.fork(start.id, state_updates={"c0": 4, "work.note": "edited"})
    assert branch == "fork-1"
    fork_cp = store.latest(runner.run_id, branch)
    assert fork_cp.parent_id == start.id and fork_cp.source == "fork" and fork_cp.id > main_head.id
    assert store.get(fork_cp.id).state[""]["c0"] == 4
    assert await runner.run() == Status.SUCCESS
    assert runner.state_manager.get("c0") == 5
    assert runner.state_manager.get("note", "work") == "edited"
    history = store.history(runner.run_id, branch)
    assert history[0].branch == branch and [c.id for c in history[-2:]] == [start.id, 1]

    assert runner.fork(start.id, binding_changes={"s/check": {"inputs": {"c0": "c2"}}}) == "fork-2"
    assert runner.nodes["s/check"].input_bindings == {"c0": "c2"}
    assert await runner.run() == Status.FAILURE  # c2 stays 0
    runner.restore(fork_cp.id)  # the bindings of that checkpoint's branch come back
    assert runner.nodes["s/check"].input_bindings == {}


async def test_a_bad_edit_is_refused_before_anything_changes(store):
    runner = ReactiveRunner(Count("c0", 100), State, checkpointer=store)
    await runner.run()
    before = runner.state_manager.snapshot()
    with pytest.raises(StateValidationError, match="c0"):
        runner.fork(1, state_updates={"c0": "not a number"})
    with pytest.raises(CheckpointError, match="nowhere"):
        runner.fork(1, binding_changes={"nowhere": {"inputs": {"a": "b"}}})
    with pytest.raises(CheckpointError, match="unknown checkpoint id 999"):
        runner.restore(999)
    assert runner.state_manager.snapshot() == before
    assert store.branches(runner.run_id) == ["main"]


async def test_a_checkpoint_of_another_tree_is_refused(store):
    runner = ReactiveRunner(Sequence("s", memory=False, children=[Count("c0", 100)]), State, checkpointer=store)
    await runner.run()
    other = ReactiveRunner(Count("c1", 100), State, checkpointer=store)
    with pytest.raises(CheckpointError, match="does not fit this tree"):
        other.restore(store.latest(runner.run_id).id)


async def test_recovery_facade_answers_across_a_restore(store_name):
    payments: list[int] = []
    gate = asyncio.Event()  # never set in the first process: it "dies" mid-effect

    class Pay(AsyncNode):
        async def update_async(self) -> Status:
            if self.recovery.status("pay") == "started":  # restored mid-effect: reconcile, do not pay again
                self.recovery.complete("pay", result="reconciled")
                return Status.SUCCESS
            self.recovery.begin("pay", detail={"amount": 5})
            payments.append(5)
            await gate.wait()
            self.recovery.complete("pay", result="paid")
            return Status.SUCCESS

    def tree():
        return Sequence("s", memory=True, children=[Pay("pay"), Count("c0", 100)])

    store = open_store(store_name)
    runner = ReactiveRunner(tree(), State, checkpointer=store)
    await runner.run(max_ticks=1)
    for _ in range(3):
        await asyncio.sleep(0)
    assert runner.nodes["s/pay"].recovery.status("pay") == "started"
    mid = runner.checkpoints.save()
    runner.stop()
    store.close()

    store = open_store(store_name)
    again = ReactiveRunner(tree(), State, checkpointer=store)
    again.restore(mid)
    assert again.nodes["s/pay"].recovery.status("pay") == "started"
    assert await again.run() == Status.SUCCESS
    assert again.nodes["s/pay"].recovery.record("pay")["result"] == "reconciled"
    assert payments == [5]
    store.close()
