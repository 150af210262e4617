"""How the SQLite store keeps a run small, and stays readable when a write fails or a row is damaged."""

from __future__ import annotations

import random
import re
import string
import time

import pytest
from conftest import rows, tamper

from runtime import ModelClient, ReActConfig, ReActState, ScriptedProvider, create_react_node, human, tool
from runtime.engine.events import RuntimeEvent
from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import CheckpointError, CheckpointRecord, StoreError, open_store

ROUNDS = 5


def _text(seed: str, size: int = 300) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(string.ascii_lowercase + " ") for _ in range(size))


@tool
def lookup(round: int) -> str:
    """A long observation."""
    return _text(f"observation {round}")


def _react():
    script = [{"content": _text(f"thought {i}"), "tool_calls": [{"name": "lookup", "arguments": {"round": i}}]}
              for i in range(ROUNDS)]
    client = ModelClient.resolve(ScriptedProvider([*script, {"content": "done"}]))
    return create_react_node(name="A", model_client=client, tools=[lookup],
                             config=ReActConfig(max_iterations=ROUNDS + 2))


async def test_messages_replies_tool_results_and_configs_are_stored_once(store):
    runner = ReactiveRunner(_react(), ReActState, checkpointer=store)
    await runner.run(input_data={"messages": [human("Look it all up.")]})
    messages = runner.state_manager.get("messages")
    assert len(messages) == 2 + 2 * ROUNDS
    reply = store.get_io(runner.run_id, "model", "A/A.loop/A.llm", 2, 0)
    assert reply.response["message"] == messages[2 * 2 + 1].model_dump(mode="json")
    observation = store.get_io(runner.run_id, "tool", "A/A.loop/A.tools", 3, 0).response  # the reply's call
    assert observation == _text("observation 2") == messages[2 * 2 + 2].content
    (items,), = rows(store, "SELECT count(*) FROM items")
    # each message once (a recorded reply is the same item as the history's message), the system
    # prompt the node sends with every call once, each tool result once, one config for all calls
    assert items == len(messages) + 1 + ROUNDS + 1


def _record(tick: int, base: int | None, parent: int | None) -> CheckpointRecord:
    return CheckpointRecord(run_id="r", branch="main", parent_id=parent, base_id=base, tick=tick, time=time.time(),
                            status="RUNNING", source="loop", event_position=tick, wake=False,
                            statuses={"root": "RUNNING"}, resume={},
                            state={"": {f"note{tick}": ["v", _text(f"note {tick}")]}})


def _event(tick: int) -> tuple[str, RuntimeEvent]:
    return "main", RuntimeEvent(seq=tick, type="log", time=time.time(), tick=tick, run_id="r",
                                payload={"text": _text(f"event {tick}")})


def test_a_failed_save_leaves_every_later_checkpoint_and_event_readable(store_name, monkeypatch):
    """Deltas and events are compressed as streams continued row by row: a save whose
    transaction failed must not leave the next row continuing a segment never stored."""
    store = open_store(store_name)
    first = store.save(_record(1, None, None), [_event(1)])
    second = store.save(_record(2, first, first), [_event(2)])
    original = store._write_events

    def failing(tx, events, *marker):
        yield from original(tx, events, *marker)
        raise store._DRIVER_ERROR("disk I/O error")

    monkeypatch.setattr(store, "_write_events", failing)
    with pytest.raises(StoreError, match=re.escape(f"{store.location}: disk I/O error")):
        store.save(_record(3, first, second), [_event(3)])
    monkeypatch.undo()
    fourth = store.save(_record(4, first, second), [_event(4)])
    store.close()

    store = open_store(store_name)
    assert [c.id for c in store.list("r")] == [first, second, fourth]
    assert store.get(fourth).state[""] == {f"note{t}": _text(f"note {t}") for t in (1, 2, 4)}
    assert [(e.tick, e.payload["text"]) for _, e in store.events("r")] == [
        (t, _text(f"event {t}")) for t in (1, 2, 4)]
    store.close()


def test_a_damaged_row_is_named(store_name):
    store = open_store(store_name)
    first = store.save(_record(1, None, None), [_event(1)])
    second = store.save(_record(2, first, first), [_event(2)])
    tamper(store, "UPDATE checkpoints SET data = ? WHERE id = ?", (b"\xff" * 40, second))
    tamper(store, "UPDATE events SET data = ? WHERE id = (SELECT max(id) FROM events)", (b"\xff" * 40,))
    store.close()
    store = open_store(store_name)
    where = re.escape(store.location)
    assert store.get(first).tick == 1  # rows before the damage read back
    with pytest.raises(StoreError, match=rf"{where}: checkpoint {second} is corrupt"):
        store.get(second)
    with pytest.raises(StoreError, match=rf"{where}: run r: event batch \d+ is corrupt"):
        store.events("r")
    store.close()


@pytest.mark.parametrize("base", ["NULL", "id + 1"])
def test_a_checkpoint_whose_chain_cannot_be_found_is_named_not_unknown(store_name, base):
    """A damaged header (its full record's id lost or wrong): the one-line StoreError naming the
    checkpoint, not "unknown checkpoint" as if it had never been saved; the others read back."""
    store = open_store(store_name)
    first = store.save(_record(1, None, None), [_event(1)])
    second = store.save(_record(2, first, first), [_event(2)])
    tamper(store, f"UPDATE checkpoints SET base_id = {base} WHERE id = ?", (second,))
    store.close()
    store = open_store(store_name)
    assert store.get(first).tick == 1
    with pytest.raises(StoreError, match=rf"{re.escape(store.location)}: checkpoint {second} is corrupt"):
        store.get(second)
    with pytest.raises(CheckpointError, match=f"unknown checkpoint id {second + 1} in"):
        store.get(second + 1)
    store.close()


async def test_moving_through_the_past_shows_each_checkpoints_own_history(store_name):
    """One store object reads the items of every checkpoint of two runs (what it keeps read
    is reused): each shows what a store opened afresh reads for that checkpoint, nothing of
    the other run or of a later tick."""
    store = open_store(store_name)
    runs = []
    for task in ("Look it all up.", "Look it all up again."):
        runner = ReactiveRunner(_react(), ReActState, checkpointer=store)
        await runner.run(input_data={"messages": [human(task)]})
        runs.append(runner.run_id)
    ids = {run_id: [c.id for c in store.list(run_id)] for run_id in runs}
    every = [*ids[runs[0]], *ids[runs[1]]]
    seen = {i: store.get(i).state for i in [*every, *reversed(every)]}
    store.close()
    fresh = open_store(store_name)
    assert all(fresh.get(i).state == seen[i] for i in reversed(every))
    fresh.close()
    first, second = (seen[ids[run_id][-1]][""]["messages"] for run_id in runs)
    assert first[0]["content"] == "Look it all up." and second[0]["content"] == "Look it all up again."
