"""A large tree's statuses are stored packed (schema 6): one letter a node, each record the runs
that differ from the previous record's, not a mapping of every path.

What a user depends on: every checkpoint reads back the statuses the run had then, on every kind
of store, across delta chains and periodic full records; the `node.status` events rebuilt from
the packings are those a subscriber saw; a restore continues from them; a store written with
schema 5 (statuses by path) is upgraded on open and reads, and shows in the past view, exactly
as the same run stored packed.
"""

from __future__ import annotations

import py_trees
from conftest import rows, tamper
from hypothesis import given
from hypothesis import strategies as st
from py_trees.common import Status
from pydantic import BaseModel

from runtime.debug.past import RunPast
from runtime.engine import RuntimeEventBus
from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import SCHEMA_VERSION, SQLiteCheckpointStore
from runtime.memory.checkpoint.runfile import copy_run
from runtime.memory.checkpoint.runner_checkpoints import TREE_PATHS_FROM
from runtime.memory.checkpoint.statuses import ChainStatuses, applied, changed_places, pack, runs

STATUSES = st.sampled_from(list(Status))


@given(st.integers(0, 300).flatmap(lambda n: st.tuples(st.lists(STATUSES, min_size=n, max_size=n),
                                                       st.lists(STATUSES, min_size=n, max_size=n))))
def test_runs_written_over_the_previous_packing_give_the_new_one(pair):
    old, new = map(pack, pair)
    assert len(new) == len(pair[1]) and all(new[i] == s.value[0] for i, s in enumerate(pair[1]))
    assert applied(old, runs(old, new)) == new
    assert applied("I" * len(new), runs(None, new)) == new
    assert changed_places(old, new) == [i for i, (a, b) in enumerate(zip(*pair, strict=True)) if a != b]
    assert runs(new, new) == [] and runs(None, "I" * len(new)) == []


@given(st.lists(st.lists(STATUSES, min_size=40, max_size=40), min_size=1, max_size=6))
def test_a_chain_of_packed_records_reads_back_each_ticks_statuses(ticks):
    paths = [f"root/n{i}" for i in range(40)]
    chain, before = ChainStatuses(), None
    for i, statuses in enumerate(ticks):
        packed = pack(statuses)
        record = {"s": {}, "sp": runs(before, packed), **({"p": "paths:t"} if i == 0 else {})}
        changes = chain.add(record, lambda key: paths, len(paths))
        assert chain.statuses() == {p: s.value for p, s in zip(paths, statuses, strict=True)}
        old = ticks[i - 1] if i else [Status.INVALID] * 40
        assert changes == [(p, a.value, b.value) for p, a, b in zip(paths, old, statuses, strict=True) if a != b]
        before = packed


class State(BaseModel):
    pass


class Flip(py_trees.behaviour.Behaviour):
    """RUNNING then SUCCESS (or the other way round), over and over: a new status every tick."""

    def __init__(self, name: str, phase: int):
        super().__init__(name)
        self.flips = phase

    def update(self) -> Status:
        self.flips += 1
        return Status.SUCCESS if self.flips % 2 else Status.RUNNING


def churning_tree() -> py_trees.behaviour.Behaviour:
    """Over TREE_PATHS_FROM nodes: sequences stepping through flipping leaves (their positions move)
    beside leaves that never change (runs with gaps)."""
    policy = py_trees.common.ParallelPolicy.SuccessOnAll(synchronise=False)
    branches = TREE_PATHS_FROM // 10 + 1
    return py_trees.composites.Parallel("root", policy=policy, children=[
        py_trees.composites.Sequence(f"seq{b}", memory=b % 2 == 0, children=[
            Flip(f"f{b}.{i}", b + i) if i % 3 else py_trees.behaviours.Success(f"s{b}.{i}") for i in range(9)])
        for b in range(branches)])


async def recorded(store, ticks: int = 9, full_every: int = 3):
    """A run of `ticks` ticks with a full record every `full_every`; the statuses after each save and
    every event a subscriber saw."""
    bus = RuntimeEventBus(history=0)
    runner = ReactiveRunner(churning_tree(), State, event_bus=bus, checkpointer=store)
    runner.checkpoints.full_every = full_every
    seen: list = []
    bus.subscribe(lambda event: seen.append((runner.checkpoints.branch, event)))
    saved: dict[int, dict[str, str]] = {}
    taken: dict[int, dict[str, str]] = {}  # a record's statuses when it was taken (an asyncio store writes it later)
    checkpoints = runner.checkpoints
    record_of, noted = checkpoints._record, checkpoints._saved

    def record(*args):
        record, events = record_of(*args)
        taken[id(record)] = {path: status.value for path, status in runner.statuses().items()}
        return record, events

    def written(record, checkpoint_id: int, line) -> None:
        saved[checkpoint_id] = taken.pop(id(record))
        noted(record, checkpoint_id, line)

    checkpoints._record, checkpoints._saved = record, written
    runner.start_fresh()
    await ticked(runner, ticks)
    return runner, saved, seen


async def ticked(runner: ReactiveRunner, ticks: int) -> None:
    for _ in range(ticks):  # (its tree stays RUNNING with nothing pending: each tick comes on a signal)
        runner.signal()
        await runner.step()


def records(store, run_id: str) -> list[dict]:
    """The run's checkpoint records as stored (inflated)."""
    return store._inflate(rows(store, "SELECT id, stream, data FROM checkpoints WHERE run_id = ? ORDER BY id",
                               (run_id,)), "checkpoint")


async def test_every_checkpoint_reads_back_the_statuses_the_run_had_then(store):
    runner, saved, seen = await recorded(store)
    assert len(runner.nodes) >= TREE_PATHS_FROM
    assert [info.id for info in store.list(runner.run_id)] == list(saved)
    for checkpoint_id, statuses in saved.items():
        assert store.get(checkpoint_id).statuses == statuses
    assert store.events(runner.run_id) == seen
    assert sum(event.type == "node.status" for _, event in seen) > 2 * len(runner.nodes)
    stored = records(store, runner.run_id)
    assert all("sp" in data and data["s"] == {} for data in stored)  # packed, no status by path
    assert sum("p" in data for data in stored) >= 3  # full records on the way, chains read across them
    assert any("o" in (data["t"] or {}) for data in stored)  # a full record after a tick: what it changed from
    # after the line's first record, the events are rebuilt from the packings alone
    assert not any("x" in (data["t"] or {}) for data in stored[1:])


async def test_a_restore_from_a_packed_checkpoint_continues_from_its_statuses(store):
    runner, saved, _ = await recorded(store)
    middle = list(saved)[5]
    again = ReactiveRunner(churning_tree(), State, checkpointer=store)
    again.restore(middle)
    assert {path: status.value for path, status in again.statuses().items()} == saved[middle]
    await ticked(again, 2)
    head = store.latest(runner.run_id, again.checkpoints.branch)
    assert store.get(head.id).statuses == {path: status.value for path, status in again.statuses().items()}


def _past(store, run_id: str) -> list:
    """What the past view shows of each checkpoint of the run (its ids left out: a copy has others)."""
    past = RunPast(ReactiveRunner(churning_tree(), State, checkpointer=store))
    out = []
    for info in store.list(run_id):
        shown = past.describe(info.id)
        row = shown.pop("checkpoint")
        out.append([row["tick"], row["status"], row["summary"], shown])
    return out


async def test_a_schema_5_store_is_upgraded_on_open_and_reads_as_the_packed_one(tmp_path):
    packed = SQLiteCheckpointStore(tmp_path / "packed.db")
    runner, saved, seen = await recorded(packed)
    old = SQLiteCheckpointStore(tmp_path / "old.db")
    copy_run(packed, old, runner.run_id)  # statuses by path: a full record's not INVALID, each delta's changes
    assert not any("sp" in data for data in records(old, runner.run_id))
    tamper(old, "UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    old.close()
    old = SQLiteCheckpointStore(tmp_path / "old.db")
    assert rows(old, "SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    assert [old.get(info.id).statuses for info in old.list(runner.run_id)] == list(saved.values())
    assert [event for _, event in old.events(runner.run_id)] == [event for _, event in seen]
    assert _past(old, runner.run_id) == _past(packed, runner.run_id)
    packed.close()
    old.close()
