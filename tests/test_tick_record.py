"""The record of a tick: what every node returned, each time, in order (issue #28 point 1).

The statuses at a tick's end are a summary; a debugger that reads only them misses a node a
loop resets in the same tick (the ReAct round's `done` returning FAILURE), a node ticked twice,
a parallel's child stopped when its sibling decided. The record keeps each return, the
`node.returned` events show the ones the end does not, and a held tick has its record so far.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import py_trees
from py_trees.common import ParallelPolicy, Status
from pydantic import BaseModel

from runtime.engine import EventType, ReactiveRunner, Returns, RuntimeEventBus, TickReport
from runtime.node import AsyncNode, LoopUntilSuccess, Node, Parallel, Sequence

S, F, R, INVALID = Status.SUCCESS, Status.FAILURE, Status.RUNNING, Status.INVALID


class Round(BaseModel):
    rounds: int = 0


class Attempt(Node):
    """FAILURE in the first round of its loop, SUCCESS after (what a ReAct round's `done` does)."""

    def update(self) -> Status:
        rounds = self.read_state("rounds") + 1
        self.write_state({"rounds": rounds}, signal=False)
        return S if rounds >= 2 else F


def _loop() -> LoopUntilSuccess:
    return LoopUntilSuccess("loop", Sequence("round", memory=True, children=[
        py_trees.behaviours.Success("think"), Attempt("done")]), max_iterations=5)


def _watched(root, state=Round) -> tuple[ReactiveRunner, list]:
    bus = RuntimeEventBus(history=0)
    seen: list = []
    bus.subscribe(seen.append, types=[EventType.NODE_RETURNED, EventType.NODE_STATUS])
    return ReactiveRunner(root, state, event_bus=bus), seen


def _returns(report: TickReport) -> list[tuple[str, Status]]:
    return list(report.returns)


async def test_a_loop_round_that_fails_is_recorded_though_the_loop_resets_it_in_the_same_tick():
    runner, seen = _watched(_loop())
    first = await runner.step()
    assert _returns(first) == [("loop/round/think", S), ("loop/round/done", F), ("loop/round", F), ("loop", R)]
    # the end of the tick shows none of it: the loop reset its round for the next one
    assert runner.nodes["loop/round/done"].status == INVALID and "loop/round/done" not in first.changed
    assert [(first.ticked[i], end) for i, end in first.unseen] == [
        ("loop/round/think", INVALID), ("loop/round/done", INVALID), ("loop/round", INVALID)]
    assert first.moved("loop/round/done") and first.moved("loop")
    returned = [(e.tick, e.node, e.payload) for e in seen if e.type == EventType.NODE_RETURNED]
    assert returned == [(1, "loop/round/think", {"status": "SUCCESS", "end": "INVALID"}),
                        (1, "loop/round/done", {"status": "FAILURE", "end": "INVALID"}),
                        (1, "loop/round", {"status": "FAILURE", "end": "INVALID"})]
    # ... published in order, before the tick's node.status events
    assert [e.type for e in seen][:3] == [EventType.NODE_RETURNED] * 3
    second = await runner.step()  # the retry
    assert _returns(second) == [("loop/round/think", S), ("loop/round/done", S), ("loop/round", S), ("loop", S)]
    assert second.unseen == [] and second.returns.of("loop/round/done") == [S]


class Twice(py_trees.decorators.Decorator):
    """Ticks its child twice in one tick (a retry inside the tick), then says what the second gave."""

    def tick(self) -> Iterator[py_trees.behaviour.Behaviour]:
        if self.status != R:
            self.initialise()
        yield from self.decorated.tick()
        yield from self.decorated.tick()
        self.status = self.decorated.status
        yield self

    def update(self) -> Status:
        return self.decorated.status


class Flip(Node):
    def __init__(self, name: str):
        super().__init__(name)
        self.calls = 0

    def update(self) -> Status:
        self.calls += 1
        return F if self.calls % 2 else S


async def test_a_node_ticked_twice_in_one_tick_has_both_returns_the_first_unseen():
    runner, seen = _watched(Twice("twice", Flip("flip")))
    report = await runner.step()
    assert _returns(report) == [("twice/flip", F), ("twice/flip", S), ("twice", S)]
    assert report.returns.of("twice/flip") == [F, S] and report.returns.last()["twice/flip"] == S
    assert [(report.ticked[i], report.returned[i], end) for i, end in report.unseen] == [("twice/flip", F, S)]
    assert report.moved("twice/flip")
    assert [(e.node, e.payload) for e in seen if e.type == EventType.NODE_RETURNED] == [
        ("twice/flip", {"status": "FAILURE", "end": "SUCCESS"})]


class Slow(AsyncNode):
    async def update_async(self) -> Status:
        await asyncio.Event().wait()  # never finishes: the parallel stops it
        return S


async def test_a_parallel_child_stopped_when_its_sibling_decides_keeps_its_running_return():
    root = Parallel("fan", policy=ParallelPolicy.SuccessOnOne(), children=[Slow("slow"), py_trees.behaviours.Success("quick")])
    runner, seen = _watched(root)
    report = await runner.step()
    assert _returns(report) == [("fan/slow", R), ("fan/quick", S), ("fan", S)]
    assert runner.nodes["fan/slow"].status == INVALID  # stopped as the parallel succeeded
    assert [(e.node, e.payload["status"], e.payload["end"]) for e in seen if e.type == EventType.NODE_RETURNED] == [
        ("fan/slow", "RUNNING", "INVALID")]


async def test_a_decorator_returns_after_its_child_and_an_async_node_runs_then_succeeds():
    class Quick(AsyncNode):
        async def update_async(self) -> Status:
            return S

    root = Sequence("root", memory=True, children=[py_trees.decorators.Inverter("not", Quick("quick"))])
    runner, _ = _watched(root)
    first = await runner.step()
    assert _returns(first) == [("root/not/quick", R), ("root/not", R), ("root", R)]
    second = await runner.step()
    assert _returns(second) == [("root/not/quick", S), ("root/not", F), ("root", F)]
    assert second.unseen == []  # every return is its node's last and the end shows it


async def test_a_held_tick_has_its_returns_so_far_and_the_finished_tick_all_of_them():
    runner, _ = _watched(_loop())
    assert runner.held_returns is None  # between ticks
    into = await runner.step_into()  # before the root
    assert into.paused_at.path == "loop" and list(runner.held_returns) == []
    stops = []
    while not into.completed:
        stops.append((into.paused_at.path, list(runner.held_returns)))
        into = await runner.step_into()
    assert stops[-1] == ("loop/round/done", [("loop/round/think", S)])  # done not reached yet
    assert _returns(into) == [("loop/round/think", S), ("loop/round/done", F), ("loop/round", F), ("loop", R)]
    assert runner.held_returns is None


async def test_a_runner_stopped_before_a_node_in_run_keeps_the_record_so_far():
    """`run()` ticks undetailed; a tick held at a breakpoint still records what returned before it."""
    runner = ReactiveRunner(_loop(), Round)
    runner.stop_before = {"loop/round/done"}
    await runner.run()
    assert runner.paused_at.path == "loop/round/done"
    assert list(runner.held_returns) == [("loop/round/think", S)]


def test_unseen_returns_are_found_without_a_loop_when_every_return_is_shown():
    returns = Returns(["a", "b", "a"], [F, S, S])
    assert returns.unseen([S, S, S]) == [0]
    assert Returns(["a", "b"], [S, R]).unseen([S, R]) == []
    assert Returns(["a", "b"], [S, R]).unseen([S, INVALID]) == [1]
