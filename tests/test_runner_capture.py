"""The engine's capture/load seam: what checkpoints are built on, usable without them.

A runner's own state captured between ticks, loaded into a fresh runner over a fresh
tree (with the state manager's snapshot), continues the run exactly: the same final
state and the same events. A checkpointer is anything with `attach(runner)`.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated

from py_trees.common import Status
from pydantic import BaseModel

from runtime.engine import ReactiveRunner, RunnerState, RuntimeEventBus
from runtime.node import AsyncNode, LoopUntilSuccess, Node, Sequence, StateCondition


class State(BaseModel):
    n: int = 0
    slow: int = 0
    trace: Annotated[list[str], operator.add] = []


class Count(Node):
    def update(self) -> Status:
        n = self.read_state("n") + 1
        self.write_state({"n": n, "trace": [f"count {n}"]})
        return Status.FAILURE if n % 3 == 0 else Status.SUCCESS


class SlowCount(AsyncNode):
    async def update_async(self) -> Status:
        await asyncio.sleep(0)
        self.write_state({"slow": self.read_state("slow") + 1, "trace": ["slow"]})
        return Status.SUCCESS


def tree():
    return LoopUntilSuccess("loop", Sequence("seq", memory=True, children=[
        Count("count"), SlowCount("slow"), StateCondition("enough", key="slow", op=">=", value=4)]),
        max_iterations=10)


def comparable(events) -> list[tuple]:
    return [(e.type, e.tick, e.node, {k: v for k, v in e.payload.items() if k != "duration_ms"})
            for e in events if e.type != "run.started"]


async def run_recording(runner: ReactiveRunner) -> list:
    events = []
    runner.event_bus.subscribe(events.append)
    await runner.run()
    return events


async def test_a_captured_runner_loaded_into_a_fresh_one_continues_the_same_run():
    runner = ReactiveRunner(tree(), State, event_bus=RuntimeEventBus(history=0))
    captures: list[tuple[RunnerState, dict]] = []
    runner.add_tick_hook(after=lambda r, report: captures.append((r.capture(), r.state_manager.snapshot())))
    events = await run_recording(runner)
    assert runner.status == Status.SUCCESS
    final = runner.state_manager.snapshot()
    assert any(c.statuses["loop/seq/slow"] == "RUNNING" for c, _ in captures)  # async work in flight
    assert any(c.resume for c, _ in captures) and any(c.positions for c, _ in captures)
    for captured, state in captures[:-1]:
        again = ReactiveRunner(tree(), State, event_bus=RuntimeEventBus(history=0))
        again.state_manager.restore(state)
        again.load(captured)
        resumed = await run_recording(again)
        assert again.tick_count == runner.tick_count
        assert again.state_manager.snapshot() == final, f"state differs after loading tick {captured.tick}"
        assert comparable(resumed) == comparable(e for e in events if e.seq > captured.event_position)


async def test_capture_of_some_paths_holds_only_their_statuses_and_positions():
    runner = ReactiveRunner(tree(), State)
    await runner.run(max_ticks=2)
    part = runner.capture(["loop/seq", "no/such/node"])
    assert set(part.statuses) == {"loop/seq"} and set(part.positions) <= {"loop/seq"}
    whole = runner.capture()
    assert set(whole.statuses) == set(runner.nodes)
    assert part.resume == whole.resume  # resume data: always every node that keeps some
    assert (whole.tick, whole.run_id) == (runner.tick_count, runner.run_id)


class CountingRecorder:
    """A checkpointer from outside the checkpoint package: the runner knows only the protocol."""

    def __init__(self):
        self.ticks: list[tuple[int, dict]] = []

    def attach(self, runner):
        self.runner = runner
        return self

    def after_tick(self, report):
        self.ticks.append((report.tick, dict(report.changed)))


async def test_the_runner_records_into_any_checkpointer_through_its_protocol():
    recorder = CountingRecorder()
    runner = ReactiveRunner(tree(), State, checkpointer=recorder)
    assert runner.checkpoints is recorder and recorder.runner is runner
    await runner.run()
    assert [tick for tick, _ in recorder.ticks] == list(range(1, runner.tick_count + 1))
    assert recorder.ticks[0][1]["loop"] == (Status.INVALID, Status.RUNNING)  # what each tick changed


async def test_capture_by_places_holds_the_positions_of_the_composites_among_them_and_their_parents():
    runner = ReactiveRunner(tree(), State)
    await runner.run(max_ticks=2)
    order = list(runner.nodes)
    leaves = [i for i, path in enumerate(order) if not runner.nodes[path].children]
    touched = {path for path in {order[i] for i in leaves} | {order[i].rpartition("/")[0] for i in leaves}
               if path in runner.nodes and runner.nodes[path].children}
    by_places = runner.capture(places=leaves)
    assert by_places.touched == touched and by_places.statuses == {}
    assert by_places.positions == {p: i for p, i in runner.capture().positions.items() if p in touched}
    assert by_places.resume == runner.capture().resume
