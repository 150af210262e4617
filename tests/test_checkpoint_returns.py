"""A tick's returns are kept with its checkpoint, compactly, in every store (issue #28 point 1).

What each node returned in a tick, in order, reads back from the tick's checkpoint as the runner
reported it; the `node.returned` events rebuilt from the record are those a subscriber saw live;
a tick whose returns are the previous tick's costs a few bytes; a record without returns (an
older store's) still reads.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path

import py_trees
from conftest import rows
from py_trees.common import Status
from test_tick_record import Round, _loop

from runtime.engine import EventType, ReactiveRunner, Returns, RuntimeEventBus
from runtime.memory.checkpoint import CheckpointRecord
from runtime.memory.checkpoint.model import TreePaths
from runtime.memory.checkpoint.returns import ReturnsWriter
from runtime.memory.checkpoint.trace import export_run


async def test_each_checkpoint_reads_back_the_returns_of_its_tick(store):
    bus = RuntimeEventBus(history=0)
    live: list = []
    bus.subscribe(live.append, types=[EventType.NODE_RETURNED])
    runner = ReactiveRunner(_loop(), Round, event_bus=bus, checkpointer=store)
    reports: list = []
    runner.add_tick_hook(after=lambda _, report: reports.append(report))
    await runner.run()
    infos = store.list(runner.run_id)
    assert store.get(infos[0].id).returns is None  # the input, before any tick
    assert [list(store.get(info.id).returns) for info in infos[1:]] == [list(report.returns) for report in reports]
    failed = store.get(infos[1].id)
    assert failed.returns.of("loop/round/done") == [Status.FAILURE] and failed.statuses["loop/round/done"] == "INVALID"
    stored = [event for _, event in store.events(runner.run_id) if event.type == EventType.NODE_RETURNED]
    assert stored == live and len(stored) == 3
    trace = io.StringIO()
    export_run(store, runner.run_id, trace)  # a trace exports them with the other events
    assert [json.loads(line)["node"] for line in trace.getvalue().splitlines()
            if json.loads(line)["type"] == "node.returned"] == ["loop/round/think", "loop/round/done", "loop/round"]


def _wide(branches: int) -> py_trees.behaviour.Behaviour:
    return py_trees.composites.Parallel("root", policy=py_trees.common.ParallelPolicy.SuccessOnAll(synchronise=False),
                                        children=[py_trees.composites.Sequence(f"s{b}", memory=False, children=[
                                            py_trees.behaviours.Success(f"l{b}.{i}") for i in range(9)])
                                            for b in range(branches)])


async def test_a_large_trees_returns_are_places_in_its_paths_and_a_repeated_tick_costs_a_few_bytes(store):
    """1,001 nodes returning the same order every tick: after the first, a tick's returns are
    stated as "the same", and no row is written per node."""
    runner = ReactiveRunner(_wide(100), Round, checkpointer=store)
    runner.start_fresh()
    reports = [await runner.step() for _ in range(4)]
    infos = store.list(runner.run_id)
    for info, report in zip(infos, reports, strict=True):
        assert list(store.get(info.id).returns) == list(report.returns)
    assert rows(store, "SELECT count(*) FROM checkpoints")[0][0] == len(infos)
    sizes = [len(row[0]) for row in rows(store, "SELECT data FROM checkpoints WHERE base_id != id ORDER BY id")]
    assert max(sizes[1:]) < 150  # deltas of ticks that changed nothing: the same returns, in a few bytes (the
    # first one carries the run's first record whole as well: row_codec.py)


def test_a_tick_returning_the_previous_ticks_order_is_stated_as_the_same():
    paths = ["a/b", "a/c", "a"]
    writer = ReturnsWriter()
    assert writer.encode(Returns(paths, [Status.SUCCESS, Status.RUNNING, Status.RUNNING]), None, True) == [
        None, paths, "SRR"]
    assert writer.encode(Returns(paths, [Status.SUCCESS, Status.SUCCESS, Status.SUCCESS]), None, False) == [
        None, None, "SSS"]
    assert writer.encode(Returns(paths, [Status.SUCCESS] * 3), None, False) == [None, None, None]
    tree = TreePaths.of(["a", "a/b", "a/c"])
    assert writer.encode(Returns(paths, [Status.SUCCESS] * 3), tree, True) == [tree.key, [1, 2, 0], "SSS"]
    assert writer.encode(None, tree, False) is None
    assert writer.encode(Returns(["a"], [Status.SUCCESS]), tree, False) == [tree.key, [0], "S"]


def test_a_record_without_returns_reads_as_before(store):
    """An older store's records have no returns: they read, with none."""
    record = CheckpointRecord(run_id="old", branch="main", parent_id=None, base_id=None, tick=1, time=time.time(),
                              status="RUNNING", source="loop", event_position=0, wake=False,
                              statuses={"root": "RUNNING"}, resume={}, state={})
    checkpoint = store.get(store.save(record))
    assert checkpoint.returns is None and checkpoint.statuses == {"root": "RUNNING"}


async def test_show_prints_a_checkpoints_returns_in_order(tmp_path):
    from runtime.memory.checkpoint import SQLiteCheckpointStore

    store = SQLiteCheckpointStore(tmp_path / "runs.db")
    runner = ReactiveRunner(_loop(), Round, checkpointer=store)
    await runner.run()
    failed = store.list(runner.run_id)[1].id  # tick 1: the round that failed
    store.close()
    shown = subprocess.run([sys.executable, "-m", "runtime.memory.checkpoint", "show", str(tmp_path / "runs.db"),
                            str(failed)], capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[1])
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["returns"] == [["loop/round/think", "SUCCESS"], ["loop/round/done", "FAILURE"],
                                                   ["loop/round", "FAILURE"], ["loop", "RUNNING"]]
