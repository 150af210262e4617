"""A large tree's full records leave INVALID statuses out; its paths are stored once (`TreePaths`).

What is read back is what was saved: every path with its status (INVALID where the record
listed none), through this store object or one opened afresh; a restore continues the same
run and the stored events are those a subscriber saw. A record whose paths are gone is a
damaged store, said so.
"""

from __future__ import annotations

import asyncio

import py_trees
import pytest
from conftest import rows, tamper
from py_trees.common import Status
from pydantic import BaseModel

from runtime.engine import RuntimeEventBus
from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import SQLiteCheckpointStore, StoreError
from runtime.memory.checkpoint.runner_checkpoints import TREE_PATHS_FROM
from runtime.node import AsyncNode, Sequence


class State(BaseModel):
    done: int = 0


class Pause(AsyncNode):
    output_ports = ("done",)

    async def update_async(self) -> Status:
        await asyncio.sleep(0)
        self.write_port("done", int(self.read_port("done", default=0)) + 1)
        return Status.SUCCESS


def large_tree() -> py_trees.behaviour.Behaviour:
    """Two stages of TREE_PATHS_FROM leaves, each after a pause: most nodes INVALID for a while."""
    return Sequence("root", memory=True, children=[
        Sequence(f"stage{stage}", memory=True, children=[
            Pause(f"pause{stage}"), *(py_trees.behaviours.Success(f"s{stage}.l{i}") for i in range(TREE_PATHS_FROM))])
        for stage in range(2)])


async def recorded(store):
    bus = RuntimeEventBus(history=0)
    runner = ReactiveRunner(large_tree(), State, event_bus=bus, checkpointer=store)
    seen: list = []
    bus.subscribe(lambda event: seen.append((runner.checkpoints.branch, event)))
    await runner.run()
    return runner, seen


async def test_a_large_trees_full_record_keeps_only_the_statuses_not_invalid(store):
    runner, _ = await recorded(store)
    infos = store.list(runner.run_id)
    first = store.get(infos[0].id)  # the fresh run's input: every node INVALID
    assert first.statuses == dict.fromkeys(runner.nodes, "INVALID")
    assert len(rows(store, "SELECT data FROM checkpoints WHERE id = ?", (infos[0].id,))[0][0]) < 200
    mid = store.get(infos[1].id)  # the first pause running, nothing else begun
    assert mid.statuses["root/stage0/pause0"] == "RUNNING" and mid.statuses["root/stage1/s1.l5"] == "INVALID"
    assert list(mid.statuses) == list(runner.nodes)


async def test_a_store_opened_afresh_reads_the_tree_and_restores_the_same_run(tmp_path):
    store = SQLiteCheckpointStore(tmp_path / "runs.db")
    runner, seen = await recorded(store)
    infos = store.list(runner.run_id)
    again = SQLiteCheckpointStore(tmp_path / "runs.db")
    for info in infos:
        assert again.get(info.id).statuses == store.get(info.id).statuses
    assert again.events(runner.run_id) == seen
    fresh = ReactiveRunner(large_tree(), State, checkpointer=again)
    fresh.restore(infos[1].id)
    assert fresh.capture().statuses == dict(again.get(infos[1].id).statuses)
    assert await fresh.run() == Status.SUCCESS
    assert fresh.state_manager.get("done") == 2
    assert again.get(again.list(runner.run_id, branch="main")[-1].id).statuses == store.get(infos[-1].id).statuses
    store.close()
    again.close()


async def test_a_record_whose_tree_paths_are_gone_is_a_damaged_store(tmp_path):
    store = SQLiteCheckpointStore(tmp_path / "runs.db")
    runner, _ = await recorded(store)
    tamper(store, "DELETE FROM meta WHERE key LIKE 'paths:%'")
    again = SQLiteCheckpointStore(tmp_path / "runs.db")
    with pytest.raises(StoreError, match="tree paths"):
        again.get(store.list(runner.run_id)[0].id)
    store.close()
    again.close()


async def test_records_written_whole_as_before_still_read_and_restore(tmp_path, monkeypatch):
    """A store written before TreePaths (every status in each full record, no `p`) reads as it did."""
    from runtime.memory.checkpoint import runner_checkpoints

    monkeypatch.setattr(runner_checkpoints, "TREE_PATHS_FROM", 10**9)  # writes as main did
    store = SQLiteCheckpointStore(tmp_path / "old.db")
    runner, seen = await recorded(store)
    assert not rows(store, "SELECT key FROM meta WHERE key LIKE 'paths:%'")
    monkeypatch.undo()
    again = SQLiteCheckpointStore(tmp_path / "old.db")
    infos = again.list(runner.run_id)
    assert again.get(infos[0].id).statuses == dict.fromkeys(runner.nodes, "INVALID")
    assert again.events(runner.run_id) == seen
    fresh = ReactiveRunner(large_tree(), State, checkpointer=again)
    fresh.restore(infos[1].id)
    assert await fresh.run() == Status.SUCCESS and fresh.state_manager.get("done") == 2
    store.close()
    again.close()
