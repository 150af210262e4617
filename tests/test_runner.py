"""ReactiveRunner: event-driven ticking, step(), hooks, suspension and run/step scopes."""

import asyncio
import time
from typing import Annotated

import py_trees
import pytest
from py_trees.common import Status
from py_trees.composites import Sequence
from pydantic import BaseModel

from runtime.engine import ReactiveRunner, TickReport
from runtime.node import AsyncNode, Node, Wait
from runtime.state import Ephemeral, InteractionKeys


class RunState(BaseModel):
    result: str = ""
    count: int = 0
    per_run: Annotated[int, Ephemeral(scope="run")] = 0
    per_step: Annotated[list[str], Ephemeral(scope="step")] = []


class Sleeper(AsyncNode):
    def __init__(self, name: str, delay: float = 0.05):
        super().__init__(name=name)
        self.delay = delay

    async def update_async(self) -> Status:
        await asyncio.sleep(self.delay)
        self.write_state({"result": self.name})
        return Status.SUCCESS


class Bump(Node):
    """Increments the run-scoped counter and the plain counter."""

    def update(self) -> Status:
        self.write_state({"per_run": self.read_state("per_run") + 1, "count": self.read_state("count") + 1,
                          "per_step": [*self.read_state("per_step"), "x"]}, signal=False)
        return Status.SUCCESS


# -- no polling ----------------------------------------------------------------------------
async def test_async_node_finishes_in_few_ticks_at_its_own_pace():
    runner = ReactiveRunner(Sleeper("sleeper", 0.05), RunState)
    started = time.perf_counter()
    assert await runner.run() == Status.SUCCESS
    assert runner.tick_count <= 3  # started, then woken once by the finished task: no polling
    assert time.perf_counter() - started >= 0.045  # it waited for the work, however slow the machine
    assert runner.state_manager.get("result") == "sleeper"


async def test_parallel_async_nodes_do_not_poll():
    from py_trees.common import ParallelPolicy
    from py_trees.composites import Parallel

    root = Parallel("par", policy=ParallelPolicy.SuccessOnAll(synchronise=True),
                    children=[Sleeper("a", 0.03), Sleeper("b", 0.05)])
    runner = ReactiveRunner(root, RunState)
    assert await runner.run() == Status.SUCCESS
    assert runner.tick_count <= 4  # woken by each finished task, never polled


# -- step() ----------------------------------------------------------------------------------
async def test_step_is_one_tick_with_a_report():
    root = Sequence("root", memory=True, children=[Bump("bump"), Sleeper("sleep", 0.05)])
    runner = ReactiveRunner(root, RunState)
    report = await runner.step()
    assert isinstance(report, TickReport)
    assert report.tick == 1 and runner.tick_count == 1
    assert report.status == Status.RUNNING
    assert report.changed["root/bump"] == (Status.INVALID, Status.SUCCESS)
    assert report.changed["root/sleep"] == (Status.INVALID, Status.RUNNING)
    assert report.changed["root"] == (Status.INVALID, Status.RUNNING)
    assert {"count", "per_run", "per_step"} <= set(report.state_keys)
    assert report.state_changes["count"] == (0, 1)

    # nothing can run until the sleeper's task ends: step() blocks until then
    second = asyncio.ensure_future(runner.step())
    await asyncio.sleep(0.01)
    assert not second.done()
    assert runner.tick_count == 1
    report = await asyncio.wait_for(second, timeout=1)
    assert report.tick == 2 and runner.tick_count == 2
    assert report.status == Status.SUCCESS
    assert report.changed == {"root/sleep": (Status.RUNNING, Status.SUCCESS), "root": (Status.RUNNING, Status.SUCCESS)}
    assert report.state_keys == ["result"]


async def test_step_blocks_until_the_async_node_finishes():
    runner = ReactiveRunner(Sleeper("s", 0.2), RunState)
    await runner.step()
    pending = asyncio.ensure_future(runner.step())
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.shield(pending), timeout=0.05)
    assert runner.tick_count == 1
    report = await asyncio.wait_for(pending, timeout=1)
    assert (report.tick, report.status) == (2, Status.SUCCESS)


async def test_run_carries_on_after_steps():
    root = Sequence("root", memory=True, children=[Bump("bump"), Sleeper("sleep", 0.01)])
    runner = ReactiveRunner(root, RunState)
    await runner.step()
    assert await runner.run() == Status.SUCCESS
    assert runner.state_manager.get("count") == 1  # not restarted: bump ran once
    assert runner.tick_count == 2


# -- hooks -----------------------------------------------------------------------------------
async def test_sync_and_async_tick_hooks():
    calls = []

    def before(runner, tick):
        calls.append(("before", tick))

    async def after(runner, report):
        await asyncio.sleep(0)
        calls.append(("after", report.tick, report.status))

    runner = ReactiveRunner(Sleeper("s", 0.01), RunState)
    remove = runner.add_tick_hook(before=before, after=after)
    assert await runner.run() == Status.SUCCESS
    assert calls == [("before", 1), ("after", 1, Status.RUNNING), ("before", 2), ("after", 2, Status.SUCCESS)]
    remove()
    calls.clear()
    await runner.run()
    assert calls == []


async def test_async_before_hook_holds_the_tick():
    gate = asyncio.Event()
    entered = []

    async def before(runner, tick):
        entered.append(tick)
        if tick == 2:
            await gate.wait()

    runner = ReactiveRunner(Sleeper("s", 0.001), RunState)
    runner.add_tick_hook(before=before)
    run = asyncio.ensure_future(runner.run())
    await asyncio.sleep(0.05)  # the task finished long ago: tick 2 is due but held
    assert entered == [1, 2]
    assert runner.tick_count == 1
    assert not run.done()
    gate.set()
    assert await asyncio.wait_for(run, timeout=1) == Status.SUCCESS
    assert runner.tick_count == 2


# -- max_ticks, run scope, step scope -----------------------------------------------------
async def test_run_scope_reset_on_fresh_run_kept_on_continue():
    root = Sequence("root", memory=True, children=[Bump("bump"), Sleeper("sleep", 0.01), Bump("bump")])
    runner = ReactiveRunner(root, RunState)
    sm = runner.state_manager
    sm.update({"per_run": 10, "per_step": ["old"], "count": 100})

    assert await runner.run(max_ticks=1) == Status.RUNNING
    assert not runner.suspended
    assert sm.get("per_run") == 1  # reset by the fresh run, then bumped
    run_id = runner.run_id

    assert await runner.run() == Status.SUCCESS  # the same run goes on
    assert runner.run_id == run_id
    assert sm.get("per_run") == 2  # kept while the run continued
    assert sm.get("per_step") == ["x", "x"]
    assert sm.get("count") == 102

    assert await runner.run() == Status.SUCCESS  # a fresh run
    assert runner.run_id != run_id
    assert sm.get("per_run") == 2
    assert sm.get("count") == 104
    assert sm.get("per_step") == ["x", "x"]


async def test_input_data_is_written_on_a_fresh_run():
    runner = ReactiveRunner(Bump("b"), RunState)
    assert await runner.run(input_data={"result": "given"}) == Status.SUCCESS
    assert runner.state_manager.get("result") == "given"


# -- suspension ----------------------------------------------------------------------------
class Approval(AsyncNode):
    def __init__(self, name: str):
        super().__init__(name=name)
        self.request_id: str | None = None
        self.attempts = 0

    async def update_async(self) -> Status:
        self.attempts += 1
        if self.request_id is None:
            self.request_id = self.interaction.request("approval", {"tool": "rm", "args": ["-rf"]})
            return Status.RUNNING
        answer = self.interaction.response(self.request_id)
        if answer is None:
            return Status.RUNNING
        self.write_state({"result": f"approved={answer}"})
        return Status.SUCCESS if answer else Status.FAILURE


async def test_suspend_and_resume():
    node = Approval("approve")
    runner = ReactiveRunner(Sequence("root", memory=True, children=[node]), RunState)
    events = []
    runner.event_bus.subscribe(events.append, types=["run.suspended", "run.completed"])

    status = await asyncio.wait_for(runner.run(), timeout=1)
    assert status == Status.RUNNING
    assert runner.suspended
    pending = runner.interaction.pending()
    assert list(pending) == [node.request_id]
    assert pending[node.request_id]["kind"] == "approval"
    assert pending[node.request_id]["payload"] == {"tool": "rm", "args": ["-rf"]}
    assert pending[node.request_id]["node"] == "root/approve"
    assert [e.type for e in events] == ["run.suspended"]
    assert node.request_id in events[0].payload["pending"]

    # still suspended: running again without an answer returns straight away
    assert await asyncio.wait_for(runner.run(), timeout=1) == Status.RUNNING
    assert runner.suspended

    runner.resume(node.request_id, True)
    assert not runner.suspended
    assert await asyncio.wait_for(runner.run(), timeout=1) == Status.SUCCESS
    assert runner.state_manager.get("result") == "approved=True"
    assert events[-1].type == "run.completed"


async def test_resume_unknown_request_raises():
    runner = ReactiveRunner(Approval("a"), RunState)
    with pytest.raises(KeyError, match="nope"):
        runner.resume("nope", True)


async def test_fresh_run_forgets_stale_requests():
    node = Approval("approve")
    runner = ReactiveRunner(node, RunState)
    assert await asyncio.wait_for(runner.run(), timeout=1) == Status.RUNNING
    runner.stop()
    node.request_id = None
    assert await asyncio.wait_for(runner.run(), timeout=1) == Status.RUNNING
    assert len(runner.interaction.pending()) == 1
    assert runner.state_manager.get(InteractionKeys.PENDING).keys() == {node.request_id}


# -- the runner survives failures ---------------------------------------------------------
async def test_run_failure_status():
    class No(Node):
        def update(self) -> Status:
            return Status.FAILURE

    runner = ReactiveRunner(No("no"), RunState)
    assert await runner.run() == Status.FAILURE
    assert runner.finished


async def test_wait_node_through_run_is_not_polled():
    runner = ReactiveRunner(Wait("w", 0.05), RunState)
    ticks = []
    runner.add_tick_hook(before=lambda r, tick: ticks.append(time.perf_counter()))
    await runner.run()
    assert len(ticks) == 2
    assert ticks[1] - ticks[0] >= 0.04


# -- the finish hook -------------------------------------------------------------------------
async def test_finish_hook_runs_once_when_the_run_ends_however_it_is_driven():
    for drive in ("run", "step"):
        runner = ReactiveRunner(Sequence("root", memory=False, children=[Sleeper("a", 0.0), Bump("b")]), RunState)
        finished = []

        async def hook(runner, status, finished=finished):
            finished.append((runner.tick_count, status))

        runner.add_finish_hook(hook)
        if drive == "run":
            await runner.run()
        else:
            while not runner.finished:
                assert finished == []  # not called for ticks that leave the run going
                await runner.step()
        assert finished == [(runner.tick_count, Status.SUCCESS)], drive


async def test_a_removed_finish_hook_is_not_called():
    runner = ReactiveRunner(Bump("b"), RunState)
    calls = []
    remove = runner.add_finish_hook(lambda runner, status: calls.append(status))
    remove()
    await runner.run()
    assert calls == []


async def test_reported_statuses_are_the_nodes_now_or_none():
    """The two lists a step's redraw reads instead of every node: the nodes' statuses whenever the
    runner says they are, None while a tick is held, after one not detailed and after one that raised."""
    class Raises(py_trees.behaviour.Behaviour):
        def tick(self):
            raise RuntimeError("boom")
            yield self

        def update(self) -> Status:
            return Status.SUCCESS

    def now(runner):
        return {path: node.status for path, node in runner.nodes.items()}

    def reported(runner):
        found = runner.reported_statuses()
        return None if found is None else dict(zip(*found, strict=True))

    runner = ReactiveRunner(Sequence("root", memory=True, children=[Bump("a"), Sleeper("s", 0.01), Bump("b")]),
                            RunState)
    assert reported(runner) is None  # indexed, nothing reported yet
    runner.stop_before = ["root/b"]
    assert (await runner.step()).completed and reported(runner) == now(runner)  # root and s RUNNING
    assert (await runner.step()).paused_at is not None and reported(runner) is None  # s finished, b not run yet
    assert (await runner.step()).completed and reported(runner) == now(runner)
    assert runner.root.status == Status.SUCCESS
    runner.stop()
    assert reported(runner) == now(runner)
    runner.stop_before = []
    await runner.run(max_ticks=1)  # nobody observes: the tick works out no report
    assert reported(runner) is None
    runner = ReactiveRunner(Sequence("root", memory=True, children=[Bump("a"), Raises("r")]), RunState)
    with pytest.raises(RuntimeError):
        await runner.step()
    assert reported(runner) is None  # the failed tick stopped the tree: nothing reported that
