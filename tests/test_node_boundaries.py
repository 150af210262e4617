"""Node boundaries: the runner stops inside a tick before a node runs, and resumes from there.

What a debugger's "break before" and "step into" rely on: at the stop the node's
`update()` (or async work) has not run, state and bindings edited there are what it sees,
the tick then finishes as one tick, and a runner asked for no boundary runs as before.
"""

from __future__ import annotations

import asyncio

import pytest
from py_trees.common import ParallelPolicy, Status
from pydantic import BaseModel

from runtime.engine import EventType, NodeBoundary, ReactiveRunner, RuntimeEventBus
from runtime.memory.checkpoint import CheckpointError, InMemoryCheckpointStore
from runtime.node import AsyncNode, Node, Parallel, Sequence


class State(BaseModel):
    question: str = "2+2"
    other: str = "3+3"
    answer: str = ""
    log: list[str] = []


class Note(Node):
    """Appends its name to `log`."""

    def update(self) -> Status:
        self.write_state({"log": [*self.read_state("log"), self.name]}, signal=False)
        return Status.SUCCESS


class Answer(Node):
    """Copies its `question` port into `answer` (the node a user wants to stop before)."""

    input_ports = ("question",)

    def update(self) -> Status:
        self.write_state({"answer": f"answered {self.read_port('question')}",
                          "log": [*self.read_state("log"), self.name]}, signal=False)
        return Status.SUCCESS


class AsyncAnswer(AsyncNode):
    async def update_async(self) -> Status:
        await asyncio.sleep(0)
        self.write_state({"answer": f"async {self.read_state('question')}"}, signal=False)
        return Status.SUCCESS


def tree() -> Sequence:
    return Sequence("root", memory=False, children=[
        Note("first"),
        Sequence("inner", memory=False, children=[Answer("answer"), Note("last")]),
    ])


def runner_for(root, **kwargs) -> ReactiveRunner:
    return ReactiveRunner(root, State, event_bus=RuntimeEventBus(history=0), **kwargs)


async def test_stop_before_holds_the_tick_before_the_nodes_update():
    runner = runner_for(tree())
    runner.stop_before = ["root/inner/answer"]
    report = await runner.step()
    assert not report.completed
    assert report.paused_at == runner.paused_at == NodeBoundary(1, "root/inner/answer")
    state = runner.state_manager
    assert state.get("log") == ["first"]  # the nodes before it ran, this one did not
    assert state.get("answer") == ""
    assert runner.nodes["root/inner/answer"].status == Status.INVALID  # not even initialised


async def test_state_edited_at_the_stop_is_what_the_node_sees_and_the_tick_finishes_once():
    runner = runner_for(tree())
    runner.stop_before = {"root/inner/answer"}
    await runner.step()
    runner.state_manager.update({"question": "6*7"}, signal=False)
    report = await runner.step()
    assert report.completed and runner.paused_at is None
    assert report.tick == runner.tick_count == 1
    assert runner.state_manager.get("answer") == "answered 6*7"
    assert runner.state_manager.get("log") == ["first", "answer", "last"]
    assert report.status == Status.SUCCESS
    assert report.ticked == ["root/first", "root/inner/answer", "root/inner/last", "root/inner", "root"]
    assert report.state_changes["answer"] == ("", "answered 6*7")


async def test_binding_edited_at_the_stop_is_used_by_the_node():
    runner = runner_for(tree())
    runner.stop_before = {"root/inner/answer"}
    await runner.step()
    runner.nodes["root/inner/answer"].bind(inputs={"question": "other"})
    await runner.step()
    assert runner.state_manager.get("answer") == "answered 3+3"


async def test_stop_before_an_async_node_comes_before_its_task_starts():
    root = Sequence("root", memory=False, children=[Note("first"), AsyncAnswer("ask")])
    runner = runner_for(root)
    runner.stop_before = {"root/ask"}
    await runner.step()
    assert runner.nodes["root/ask"].async_task is None
    runner.state_manager.update({"question": "edited"}, signal=False)
    runner.stop_before = ()
    assert await runner.run() == Status.SUCCESS
    assert runner.state_manager.get("answer") == "async edited"


class SlowAnswer(AsyncNode):
    """Answers once `release` is set: its work stays in flight across the ticks others cause."""

    release: asyncio.Event

    async def update_async(self) -> Status:
        await self.release.wait()
        self.write_state({"answer": "slow"}, signal=False)
        return Status.SUCCESS


class Counter(Node):
    """RUNNING for three ticks, waking the runner each time: ticks while the async node works."""

    def update(self) -> Status:
        self.write_state({"log": [*self.read_state("log"), "count"]})  # signal: another tick comes
        return Status.SUCCESS if len(self.read_state("log")) >= 3 else Status.RUNNING


async def test_a_stop_before_an_async_node_is_not_repeated_while_its_work_is_in_flight():
    slow = SlowAnswer("slow")
    slow.release = asyncio.Event()
    root = Parallel("root", policy=ParallelPolicy.SuccessOnAll(), children=[slow, Counter("count")])
    runner = runner_for(root)
    runner.stop_before = {"root/slow"}
    stops = []
    runner.event_bus.subscribe(lambda e: stops.append(e.tick), types=[EventType.TICK_PAUSED])
    report = await runner.step()
    assert report.paused_at == NodeBoundary(1, "root/slow")  # before its work started
    for _ in range(3):  # the counter's ticks: the slow node is ticked, its work still in flight
        report = await runner.step()
        assert report.completed and report.paused_at is None
    slow.release.set()
    assert await asyncio.wait_for(runner.run(), timeout=5) == Status.SUCCESS
    assert runner.state_manager.get("answer") == "slow"
    assert stops == [1]  # once, before the work; not before asking after it, nor before collecting it


async def test_a_stop_is_reached_again_on_every_tick_that_visits_the_node():
    runner = runner_for(tree())
    runner.stop_before = {"root/inner/last"}
    stops = []
    for _ in range(4):
        report = await runner.step()
        stops.append((report.tick, report.paused_at and report.paused_at.path))
        runner.start_fresh() if report.completed else None
    assert stops == [(1, "root/inner/last"), (1, None), (1, "root/inner/last"), (1, None)]


async def test_step_into_visits_every_boundary_in_traversal_order():
    runner = runner_for(tree())
    visited, logs = [], []
    while True:
        report = await runner.step_into()
        if report.completed:
            break
        visited.append(report.paused_at.path)
        logs.append(list(runner.state_manager.get("log")))
    assert visited == ["root", "root/first", "root/inner", "root/inner/answer", "root/inner/last"]
    assert logs == [[], [], ["first"], ["first"], ["first", "answer"]]
    assert report.tick == 1 and report.status == Status.SUCCESS
    assert report.ticked == ["root/first", "root/inner/answer", "root/inner/last", "root/inner", "root"]


async def test_step_over_after_step_into_finishes_the_tick_and_the_next_tick_runs_through():
    runner = runner_for(Sequence("root", memory=False, children=[Note("first"), Note("second")]))
    assert (await runner.step_into()).paused_at.path == "root"
    assert (await runner.step_into()).paused_at.path == "root/first"
    report = await runner.step()
    assert report.completed and report.tick == 1
    runner.start_fresh()
    assert (await runner.step()).completed  # no boundary left behind by step_into
    assert all("tick" not in vars(node) for node in runner.nodes.values())


async def test_run_stops_at_a_boundary_and_the_next_run_resumes_that_tick():
    bus = RuntimeEventBus(history=0)
    paused = []
    bus.subscribe(paused.append, types=[EventType.TICK_PAUSED])
    runner = ReactiveRunner(tree(), State, event_bus=bus)
    runner.stop_before = {"root/inner/answer"}
    assert await runner.run() == Status.INVALID  # held inside the first tick, nothing finished yet
    assert [(e.node, e.tick) for e in paused] == [("root/inner/answer", 1)]
    runner.state_manager.update({"question": "1+1"}, signal=False)
    assert await runner.run() == Status.SUCCESS
    assert runner.tick_count == 1
    assert runner.state_manager.get("answer") == "answered 1+1"


async def test_a_held_tick_is_checkpointed_only_once_it_ends():
    store = InMemoryCheckpointStore()
    runner = runner_for(tree(), checkpointer=store)
    runner.stop_before = {"root/inner/answer"}
    await runner.step()
    assert runner.checkpoints.head is None or store.get(runner.checkpoints.head).tick == 0
    runner.state_manager.update({"question": "9-1"}, signal=False)
    await runner.step()
    head = store.get(runner.checkpoints.head)
    assert head.tick == 1
    assert head.state[""]["answer"] == "answered 9-1"


async def test_a_fresh_run_or_a_stop_abandons_the_held_tick():
    runner = runner_for(tree())
    runner.stop_before = {"root/inner/answer"}
    await runner.step()
    runner.stop()
    assert runner.paused_at is None
    runner.stop_before = ()
    assert await runner.run() == Status.SUCCESS
    assert runner.state_manager.get("log")[-3:] == ["first", "answer", "last"]


async def _trajectory(runner: ReactiveRunner) -> list:
    steps = []
    runner.start_fresh()
    for _ in range(3):
        report = await runner.step()
        steps.append((report.tick, report.status, report.ticked, report.changed, report.state_changes))
        runner.start_fresh()
    return steps


async def test_a_runner_with_no_boundary_runs_exactly_as_before():
    plain = runner_for(tree())
    cleared = runner_for(tree())
    cleared.stop_before = {"root/inner/answer", "root/first"}
    cleared.stop_before = ()
    assert all("tick" not in vars(node) for node in cleared.nodes.values())  # nothing wrapped any more
    plain_steps = await _trajectory(plain)
    assert all(step[2] for step in plain_steps)
    assert await _trajectory(cleared) == plain_steps


async def test_restoring_a_checkpoint_abandons_the_held_tick_and_a_refused_restore_keeps_it():
    store = InMemoryCheckpointStore()
    runner = runner_for(tree(), checkpointer=store)
    assert await runner.run() == Status.SUCCESS
    first = store.list(runner.run_id)[0].id
    runner.start_fresh()
    runner.stop_before = {"root/inner/answer"}
    await runner.step()
    with pytest.raises(CheckpointError):
        runner.restore(10_000)
    assert runner.paused_at is not None  # nothing lost by a restore that did not fit
    runner.restore(first)
    assert runner.paused_at is None and runner.tick_count == 0
    runner.stop_before = ()
    assert await runner.run() == Status.SUCCESS
    assert runner.state_manager.get("log") == ["first", "answer", "last"]
