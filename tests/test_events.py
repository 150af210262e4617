"""RuntimeEventBus, and the events the runner publishes."""

import asyncio
import json

import pytest
from py_trees.common import Status
from py_trees.composites import Sequence
from pydantic import BaseModel, ValidationError
from pydantic_core import to_json

from runtime.engine import EventType, ReactiveRunner, RunContext, RuntimeEvent, RuntimeEventBus
from runtime.node import AsyncNode, Node, Wait


class EvState(BaseModel):
    result: str = ""


class Write(Node):
    def update(self) -> Status:
        self.write_state({"result": "done"})
        return Status.SUCCESS


class Boom(Node):
    def update(self) -> Status:
        raise RuntimeError("kaboom")


# -- the bus ---------------------------------------------------------------------------------
def test_publish_subscribe_with_type_and_predicate_filters():
    bus = RuntimeEventBus()
    everything, typed, filtered = [], [], []
    bus.subscribe(everything.append)
    bus.subscribe(typed.append, types=[EventType.LOG, "custom"])
    sub = bus.subscribe(filtered.append, filter=lambda e: e.node == "a")
    bus.publish("log", {"message": "hi"}, node="a")
    bus.publish("custom", node="b")
    bus.publish(EventType.TICK_STARTED)
    assert [e.type for e in everything] == ["log", "custom", "tick.started"]
    assert [e.type for e in typed] == ["log", "custom"]
    assert [e.type for e in filtered] == ["log"]
    assert filtered[0].payload == {"message": "hi"}
    assert [e.seq for e in everything] == [1, 2, 3]
    sub.close()
    bus.publish("log", node="a")
    assert len(filtered) == 1


def test_events_are_stamped_and_json_serialisable():
    bus = RuntimeEventBus()
    bus.run_id, bus.tick = "r1", 4
    event = bus.publish("x", {"n": 1}, node="root/a")
    assert isinstance(event, RuntimeEvent)
    assert (event.run_id, event.tick, event.node) == ("r1", 4, "root/a")
    assert json.loads(to_json(event))["payload"] == {"n": 1}


def test_an_event_from_outside_is_validated_at_the_edge():
    event = RuntimeEvent.validate({"seq": "3", "type": "log", "time": 1.5, "payload": {"a": 1}})
    assert (event.seq, event.tick, event.node) == (3, 0, None)
    with pytest.raises(ValidationError):
        RuntimeEvent.validate({"seq": "three", "type": "log", "time": 1.5})
    with pytest.raises(ValidationError):
        RuntimeEvent.validate({"seq": 1, "type": "log", "time": 1.5, "payload": ["not", "a", "dict"]})


async def test_default_history_keeps_the_story_and_node_statuses_go_only_to_who_asked():
    runner = ReactiveRunner(Sequence("root", memory=False, children=[Write("w")]), EvState)
    assert not runner.event_bus.wants(EventType.NODE_STATUS)  # nobody asked: the tick builds no diff
    asked = []
    runner.event_bus.subscribe(asked.append, types=[EventType.NODE_STATUS])
    assert await runner.run() == Status.SUCCESS
    kept = {e.type for e in runner.event_bus.history}
    assert {"run.started", "state.changed", "run.completed"} <= kept
    assert not kept & {"node.status", "tick.started", "tick.completed"}
    assert [(e.node, e.payload["new"]) for e in asked] == [("root", "SUCCESS"), ("root/w", "SUCCESS")]


def test_a_history_asked_to_keep_ticks_keeps_them():
    bus = RuntimeEventBus(history=10, history_ticks=True)
    assert bus.wants(EventType.NODE_STATUS)
    bus.publish(EventType.NODE_STATUS, {"old": "INVALID", "new": "SUCCESS"}, node="a")
    assert [e.type for e in bus.history] == ["node.status"]


def test_history_is_bounded():
    bus = RuntimeEventBus(history=3)
    for i in range(5):
        bus.publish("e", {"i": i})
    assert [e.payload["i"] for e in bus.history] == [2, 3, 4]


def test_wants_reflects_listeners():
    bus = RuntimeEventBus(history=0)
    assert not bus.wants("log")
    assert bus.publish("log") is None
    sub = bus.subscribe(lambda e: None, types=["log"])
    assert bus.wants("log")
    assert not bus.wants("tick.started")
    sub()
    assert not bus.wants("log")
    bus.subscribe(lambda e: None)
    assert bus.wants("anything")
    assert RuntimeEventBus(history=10).wants("anything")
    assert not RuntimeEventBus(history=10).wants(EventType.NODE_STATUS)


def test_failing_subscriber_does_not_stop_delivery():
    bus = RuntimeEventBus()
    got = []

    def broken(event):
        raise RuntimeError("listener bug")

    bus.subscribe(broken)
    bus.subscribe(lambda e: 1 / 0, filter=lambda e: e.payload["x"])  # a broken filter too
    bus.subscribe(got.append)
    bus.publish("e", {})
    assert len(got) == 1


async def test_stream_iterates_events_published_after_it_was_opened():
    bus = RuntimeEventBus()
    stream = bus.stream(types=["log"])
    bus.publish("log", {"i": 1})  # published before the consumer first awaits
    bus.publish("other")
    bus.publish("log", {"i": 2})
    received = []
    async for event in stream:
        received.append(event.payload["i"])
        if len(received) == 2:
            break
    assert received == [1, 2]


async def test_stream_with_a_concurrent_consumer_sees_a_whole_run():
    bus = RuntimeEventBus(history=0)
    runner = ReactiveRunner(Sequence("root", memory=True, children=[Wait("w", 0.01)]), EvState,
                            context=RunContext(runtime_event_bus=bus))
    types = []

    async def consume():
        async for event in bus.stream(types=["run.started", "run.completed"]):
            types.append(event.type)
            if event.type == "run.completed":
                return

    consumer = asyncio.ensure_future(consume())
    await asyncio.sleep(0)  # the consumer is listening
    assert await runner.run() == Status.SUCCESS
    await asyncio.wait_for(consumer, timeout=1)
    assert types == ["run.started", "run.completed"]


async def test_stream_unsubscribes_when_closed():
    bus = RuntimeEventBus(history=0)
    stream = bus.stream(types=["log"])
    assert bus.wants("log")
    bus.publish("log")
    async for _ in stream:
        break
    await stream.aclose()
    assert not bus.wants("log")


# -- events of a run ----------------------------------------------------------------------
async def test_runner_emits_the_lifecycle_events():
    root = Sequence("root", memory=True, children=[Write("write"), Wait("wait", 0.01)])
    runner = ReactiveRunner(root, EvState)
    events = []
    runner.event_bus.subscribe(events.append)
    assert await runner.run() == Status.SUCCESS
    types = [e.type for e in events]
    assert types[0] == "run.started"
    assert types[-1] == "run.completed"
    for required in ("tick.started", "tick.completed", "node.status", "state.changed"):
        assert required in types
    assert types.count("tick.started") == types.count("tick.completed") == runner.tick_count
    assert all(e.run_id == runner.run_id for e in events)
    ticks = [e.tick for e in events if e.type == "tick.started"]
    assert ticks == list(range(1, runner.tick_count + 1))
    state_changed = next(e for e in events if e.type == "state.changed")
    assert state_changed.payload["keys"] == ["result"]
    assert state_changed.tick == 1
    statuses = [(e.node, e.payload["old"], e.payload["new"]) for e in events if e.type == "node.status"]
    assert ("root/write", "INVALID", "SUCCESS") in statuses
    assert ("root/wait", "RUNNING", "SUCCESS") in statuses
    assert next(e for e in events if e.type == "run.completed").tick == runner.tick_count
    completed = [e for e in events if e.type == "tick.completed"]
    assert completed[-1].payload["status"] == "SUCCESS"
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs)


async def test_runner_emits_run_failed_and_node_error():
    runner = ReactiveRunner(Sequence("root", memory=True, children=[Boom("boom")]), EvState)
    events = []
    runner.event_bus.subscribe(events.append, types=["node.error", "run.failed", "run.completed"])
    assert await runner.run() == Status.FAILURE
    assert [e.type for e in events] == ["node.error", "run.failed"]
    error = events[0]
    assert error.node == "root/boom"
    assert "kaboom" in error.payload["traceback"]
    assert error.tick == 1 and error.run_id == runner.run_id


async def test_failing_subscriber_does_not_break_the_run():
    runner = ReactiveRunner(Sequence("root", memory=True, children=[Write("w"), Wait("wait", 0.005)]), EvState)

    def broken(event):
        raise RuntimeError("observer bug")

    runner.event_bus.subscribe(broken)
    runner.state_manager.subscribe(lambda change: 1 / 0)
    assert await runner.run() == Status.SUCCESS
    assert runner.state_manager.get("result") == "done"


async def test_node_emits_through_its_bus():
    class Emitter(AsyncNode):
        async def update_async(self) -> Status:
            self.emit("custom.thing", {"k": 1})
            return Status.SUCCESS

    runner = ReactiveRunner(Sequence("root", memory=True, children=[Emitter("em")]), EvState)
    got = []
    runner.event_bus.subscribe(got.append, types=["custom.thing"])
    await runner.run()
    assert got[0].node == "root/em"
    assert got[0].payload == {"k": 1}
    assert got[0].run_id == runner.run_id


async def test_each_run_has_its_own_run_id():
    runner = ReactiveRunner(Write("w"), EvState)
    started = []
    runner.event_bus.subscribe(started.append, types=["run.started"])
    await runner.run()
    await runner.run()
    assert len({e.run_id for e in started}) == 2
    assert all(e.payload["fresh"] for e in started)


def test_the_tick_path_s_event_types_are_plain_strings_equal_to_their_members():
    """The runner reads them every tick: a module constant, a plain str, not a StrEnum member (~100 ns a read)."""
    from runtime.engine import events

    for name in ("TICK_STARTED", "TICK_COMPLETED", "TICK_PAUSED", "NODE_STATUS", "NODE_RETURNED", "STATE_CHANGED"):
        constant = getattr(events, name)
        assert type(constant) is str and constant == EventType[name] and name in events.__all__
