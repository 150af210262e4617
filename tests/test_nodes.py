"""Built-in nodes of the core: LoopUntilSuccess, Timeout, Wait, AsyncNode lifecycle, injection."""

import asyncio
import time
from typing import Annotated

import py_trees
import pytest
from py_trees.common import Status
from py_trees.composites import Selector, Sequence
from pydantic import BaseModel

from runtime.engine import InjectPayload, ReactiveRunner, RunContext, inject_runtime_deps
from runtime.node import AsyncNode, LoopUntilSuccess, Node, Timeout, Wait
from runtime.node.composites import loop_counter
from runtime.state import Ephemeral, InteractionKeys


class LoopState(BaseModel):
    attempts: int = 0
    result: str = ""
    scratch: Annotated[list[str], Ephemeral(scope="step")] = []
    seen_scratch: list[list[str]] = []


class FailTimes(Node):
    """FAILURE the first `fail` times, then SUCCESS; counts attempts in state."""

    def __init__(self, name: str, fail: int, namespace: str | None = None):
        super().__init__(name=name, namespace=namespace)
        self.fail = fail

    def update(self) -> Status:
        attempts = (self.read_state("attempts") or 0) + 1
        # what the step-scoped scratch held when this iteration started
        seen = (self.read_state("seen_scratch") or []) + [self.read_state("scratch")]
        self.write_state({"attempts": attempts, "seen_scratch": seen,
                          "scratch": [*self.read_state("scratch"), f"try{attempts}"]}, signal=False)
        return Status.FAILURE if attempts <= self.fail else Status.SUCCESS


# -- LoopUntilSuccess -------------------------------------------------------------------------
async def test_loop_retries_until_success_without_external_signal():
    child = FailTimes("child", fail=2)
    loop = LoopUntilSuccess("loop", child, max_iterations=5)
    runner = ReactiveRunner(loop, LoopState)
    statuses = []
    runner.event_bus.subscribe(lambda e: statuses.append((e.payload["old"], e.payload["new"])),
                               types=["node.status"], filter=lambda e: e.node == "loop/child")
    # the child writes with signal=False: only the loop itself can wake the runner
    status = await asyncio.wait_for(runner.run(), timeout=2)
    assert status == Status.SUCCESS
    assert runner.state_manager.get("attempts") == 3
    assert loop.iteration_count == 2
    assert runner.tick_count == 3
    # FAILURE was reset to INVALID by the loop within the tick, then the child ran again
    assert ("INVALID", "SUCCESS") in statuses or ("FAILURE", "SUCCESS") in statuses
    assert runner.state_manager.get(InteractionKeys.TERMINATION) is None


async def test_a_loops_counter_names_the_attempt_it_is_on_or_ended_on():
    """What the studio's tree shows beside a loop: a loop that succeeded on its third attempt
    says 3 (its iteration_count, the failures, is 2); one that used up its attempts says 3/3."""
    loop = LoopUntilSuccess("loop", FailTimes("child", fail=2), max_iterations=5)
    assert loop_counter(loop, loop.status) == "iter 0/5"  # not started
    runner = ReactiveRunner(loop, LoopState)
    assert await asyncio.wait_for(runner.run(), timeout=2) == Status.SUCCESS
    assert loop_counter(loop, loop.status) == "iter 3/5"
    assert loop_counter(loop, Status.RUNNING, 0) == "iter 1/5"  # a past frame: its first attempt, under way

    spent = LoopUntilSuccess("loop", FailTimes("child", fail=100), max_iterations=3)
    assert await asyncio.wait_for(ReactiveRunner(spent, LoopState).run(), timeout=2) == Status.FAILURE
    assert loop_counter(spent, spent.status) == "iter 3/3"
    assert loop_counter(FailTimes("child", fail=0), Status.SUCCESS) is None  # not a loop


async def test_loop_resets_step_scope_at_each_iteration():
    loop = LoopUntilSuccess("loop", FailTimes("child", fail=2), max_iterations=5)
    runner = ReactiveRunner(loop, LoopState)
    runner.state_manager.update({"scratch": ["left over"]})
    assert await asyncio.wait_for(runner.run(), timeout=2) == Status.SUCCESS
    # a fresh run reset it before the first iteration, the loop before every other one
    assert runner.state_manager.get("seen_scratch") == [[], [], []]
    assert runner.state_manager.get("scratch") == ["try3"]


async def test_loop_resets_step_scope_in_every_namespace_under_it():
    loop = LoopUntilSuccess("loop", FailTimes("child", fail=1, namespace="agent"), max_iterations=5,
                            namespace="agent")
    runner = ReactiveRunner(loop, LoopState)
    assert await asyncio.wait_for(runner.run(), timeout=2) == Status.SUCCESS
    assert runner.state_manager.get("seen_scratch", "agent") == [[], []]

    # the child lives in another namespace than the loop: reset all the same (seed 000)
    other = LoopUntilSuccess("loop", FailTimes("child", fail=1, namespace="agent"), max_iterations=5,
                             namespace="other")
    untouched = Sequence("outside", memory=True, children=[FailTimes("bystander", fail=0, namespace="side"), other])
    runner = ReactiveRunner(untouched, LoopState)
    assert await asyncio.wait_for(runner.run(), timeout=2) == Status.SUCCESS
    assert runner.state_manager.get("seen_scratch", "agent") == [[], []]
    assert runner.state_manager.get("scratch", "side") == ["try1"]  # not under the loop: kept


async def test_loop_limit_writes_termination_and_fails():
    loop = LoopUntilSuccess("loop", FailTimes("child", fail=100), max_iterations=3)
    runner = ReactiveRunner(loop, LoopState)
    assert await asyncio.wait_for(runner.run(), timeout=2) == Status.FAILURE
    assert runner.state_manager.get("attempts") == 3
    term = runner.state_manager.get(InteractionKeys.TERMINATION)
    assert term["reason"] == "max_iterations"
    assert term["max_iterations"] == 3
    assert term["node"] == "loop"


async def test_loop_termination_is_written_in_its_namespace_and_cleared_by_the_next_run():
    loop = LoopUntilSuccess("loop", FailTimes("child", fail=100), max_iterations=2, namespace="agent")
    runner = ReactiveRunner(loop, LoopState)
    assert await asyncio.wait_for(runner.run(), timeout=2) == Status.FAILURE
    assert runner.state_manager.get(InteractionKeys.TERMINATION) is None
    assert runner.state_manager.get(InteractionKeys.TERMINATION, "agent")["reason"] == "max_iterations"
    loop.decorated.fail = 0
    assert await asyncio.wait_for(runner.run(), timeout=2) == Status.SUCCESS
    assert runner.state_manager.get(InteractionKeys.TERMINATION, "agent") is None


async def test_loop_abort_condition():
    budget = {"left": 2}

    def spent() -> bool:
        return budget["left"] <= 0

    class Spend(Node):
        def update(self) -> Status:
            budget["left"] -= 1
            return Status.FAILURE

    loop = LoopUntilSuccess("loop", Spend("spend"), max_iterations=10, abort_condition=spent)
    runner = ReactiveRunner(loop, LoopState)
    assert await asyncio.wait_for(runner.run(), timeout=2) == Status.FAILURE
    term = runner.state_manager.get(InteractionKeys.TERMINATION)
    assert term["reason"] == "aborted"
    assert budget["left"] == 0


async def test_loop_checks_abort_before_ticking_its_child(caplog):
    """Seed 000: once the budget is spent, the sync node after the spender must not run again."""
    spent = {"tokens": 0}
    ticked: list[str] = []

    class AsyncSpend(AsyncNode):
        async def update_async(self) -> Status:
            spent["tokens"] += 100
            return Status.SUCCESS

    class Check(Node):
        def update(self) -> Status:
            ticked.append(self.name)
            return Status.FAILURE

    body = Sequence("body", memory=True, children=[AsyncSpend("spend"), Check("check")])
    loop = LoopUntilSuccess("loop", body, max_iterations=10,
                            abort_condition=lambda: "budget_exhausted" if spent["tokens"] >= 100 else False)
    runner = ReactiveRunner(loop, LoopState)
    with caplog.at_level("ERROR", logger="runtime.node.composites"):
        assert await asyncio.wait_for(runner.run(), timeout=2) == Status.FAILURE
    assert ticked == []  # aborted before the sequence got to it
    assert runner.state_manager.get(InteractionKeys.TERMINATION)["reason"] == "budget_exhausted"
    assert [r.levelname for r in caplog.records] == ["ERROR"] and "loop" in caplog.records[0].getMessage()


async def test_loop_checks_abort_before_the_first_tick_of_its_child():
    ticked: list[str] = []

    class Work(Node):
        def update(self) -> Status:
            ticked.append(self.name)
            return Status.SUCCESS

    loop = LoopUntilSuccess("loop", Work("work"), abort_condition=lambda: True)
    runner = ReactiveRunner(loop, LoopState)
    assert await asyncio.wait_for(runner.run(), timeout=2) == Status.FAILURE
    assert ticked == []  # true from the start: the child never ran
    assert runner.state_manager.get(InteractionKeys.TERMINATION)["reason"] == "aborted"


async def test_a_host_cap_in_the_run_context_caps_any_loop():
    loop = LoopUntilSuccess("loop", py_trees.behaviours.Failure("fail"), max_iterations=10)
    runner = ReactiveRunner(loop, LoopState, RunContext(max_iterations_hard_limit=3))
    assert await asyncio.wait_for(runner.run(), timeout=2) == Status.FAILURE
    term = runner.state_manager.get(InteractionKeys.TERMINATION)
    assert (term["reason"], term["iterations"], term["max_iterations"]) == ("max_iterations", 3, 3)
    assert loop_counter(loop, loop.status) == "iter 3/3"


async def test_termination_of_previous_run_is_cleared_on_fresh_run():
    child = FailTimes("child", fail=2)
    loop = LoopUntilSuccess("loop", child, max_iterations=2)
    runner = ReactiveRunner(loop, LoopState)
    assert await runner.run() == Status.FAILURE
    assert runner.state_manager.get(InteractionKeys.TERMINATION) is not None
    assert await asyncio.wait_for(runner.run(), timeout=2) == Status.SUCCESS
    assert runner.state_manager.get(InteractionKeys.TERMINATION) is None


def test_loop_rejects_zero_iterations():
    with pytest.raises(ValueError, match="max_iterations"):
        LoopUntilSuccess("loop", FailTimes("c", 0), max_iterations=0)


async def test_loop_with_async_child_retries():
    class AsyncFlaky(AsyncNode):
        calls = 0

        async def update_async(self) -> Status:
            AsyncFlaky.calls += 1
            await asyncio.sleep(0.001)
            return Status.SUCCESS if AsyncFlaky.calls >= 3 else Status.FAILURE

    loop = LoopUntilSuccess("loop", AsyncFlaky("flaky"), max_iterations=5)
    runner = ReactiveRunner(loop, LoopState)
    assert await asyncio.wait_for(runner.run(), timeout=2) == Status.SUCCESS
    assert AsyncFlaky.calls == 3


# -- Timeout -------------------------------------------------------------------------------
class SlowWriter(AsyncNode):
    def __init__(self, name: str, delay: float, status: Status = Status.SUCCESS):
        super().__init__(name=name)
        self.delay = delay
        self.result_status = status
        self.cancelled = False

    async def update_async(self) -> Status:
        try:
            await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        self.write_state({"result": "written"})
        return self.result_status


async def test_timeout_fails_slow_child_and_cancels_it():
    child = SlowWriter("slow", delay=5)
    timeout = Timeout("limit", child, duration=0.05)
    runner = ReactiveRunner(timeout, LoopState)
    started = time.perf_counter()
    status = await asyncio.wait_for(runner.run(), timeout=4)  # the child alone would take 5 s
    assert status == Status.FAILURE
    assert time.perf_counter() - started >= 0.045
    await asyncio.sleep(0)  # let the cancellation land
    assert child.cancelled
    assert child.status == Status.INVALID
    assert runner.state_manager.get("result") == ""


async def test_timeout_passes_fast_child_status_through():
    for child_status in (Status.SUCCESS, Status.FAILURE):
        child = SlowWriter("fast", delay=0.005, status=child_status)
        runner = ReactiveRunner(Timeout("limit", child, duration=1), LoopState)
        assert await asyncio.wait_for(runner.run(), timeout=10) == child_status
        assert runner.state_manager.get("result") == "written"


async def test_timeout_timer_does_not_outlive_the_node():
    runner = ReactiveRunner(Timeout("limit", SlowWriter("fast", 0.001), duration=0.05), LoopState)
    # step() keeps the runner live, so a timer left armed would wake it at the deadline
    assert (await runner.step()).status == Status.RUNNING
    assert (await asyncio.wait_for(runner.step(), timeout=1)).status == Status.SUCCESS
    await asyncio.sleep(0.1)
    assert not runner._wake.is_set()


def test_timeout_rejects_bad_duration():
    with pytest.raises(ValueError, match="duration"):
        Timeout("t", Wait("w"), duration=0)


# -- Wait / AsyncNode lifecycle --------------------------------------------------------------
async def test_wait_succeeds_after_duration():
    runner = ReactiveRunner(Wait("w", duration=0.03), LoopState)
    started = time.perf_counter()
    assert await runner.run() == Status.SUCCESS
    assert time.perf_counter() - started >= 0.025
    assert runner.tick_count <= 3


async def test_cancelled_task_late_writes_are_dropped():
    class Stubborn(AsyncNode):
        async def update_async(self) -> Status:
            try:
                await asyncio.sleep(5)
            finally:
                self.write_state({"result": "late"})  # runs after cancellation (pitfall 6)
            return Status.SUCCESS

    child = Stubborn("stubborn")
    runner = ReactiveRunner(Timeout("limit", child, duration=0.02), LoopState)
    assert await asyncio.wait_for(runner.run(), timeout=2) == Status.FAILURE
    await asyncio.sleep(0.01)
    assert runner.state_manager.get("result") == ""


async def test_async_node_returning_running_is_restarted():
    class ThreeCalls(AsyncNode):
        calls = 0

        async def update_async(self) -> Status:
            ThreeCalls.calls += 1
            return Status.SUCCESS if ThreeCalls.calls == 3 else Status.RUNNING

    runner = ReactiveRunner(ThreeCalls("n"), LoopState)
    assert await asyncio.wait_for(runner.run(), timeout=2) == Status.SUCCESS
    assert ThreeCalls.calls == 3


async def test_async_node_returning_garbage_fails_with_error():
    class Garbage(AsyncNode):
        async def update_async(self):
            return "yes"

    node = Garbage("g")
    runner = ReactiveRunner(node, LoopState)
    assert await runner.run() == Status.FAILURE
    assert "not a py_trees Status" in node.last_error.error


async def test_stopping_the_runner_cancels_async_tasks():
    child = SlowWriter("slow", delay=5)
    runner = ReactiveRunner(Sequence("seq", memory=True, children=[child]), LoopState)
    assert await runner.run(max_ticks=1) == Status.RUNNING
    task = child.async_task
    runner.stop()
    await asyncio.sleep(0)
    assert task.cancelled()
    assert child.status == Status.INVALID


# -- exceptions at node level ----------------------------------------------------------------
async def test_selector_falls_through_failing_nodes():
    class Boom(Node):
        def update(self) -> Status:
            raise RuntimeError("sync boom")

    class AsyncBoom(AsyncNode):
        async def update_async(self) -> Status:
            raise KeyError("async boom")

    class Plain(py_trees.behaviour.Behaviour):
        def update(self) -> Status:
            raise ValueError("plain boom")

    class Ok(Node):
        def update(self) -> Status:
            self.write_state({"result": "ok"})
            return Status.SUCCESS

    nodes = [Boom("boom"), AsyncBoom("aboom"), Plain("plain")]
    root = Selector("sel", memory=True, children=[*nodes, Ok("ok")])
    runner = ReactiveRunner(root, LoopState)
    errors, failed = [], []
    runner.event_bus.subscribe(errors.append, types=["node.error"])
    runner.event_bus.subscribe(lambda e: failed.append(e.node), types=["node.status"],
                               filter=lambda e: e.payload["new"] == "FAILURE")
    assert await asyncio.wait_for(runner.run(), timeout=2) == Status.SUCCESS
    assert runner.state_manager.get("result") == "ok"
    assert failed == ["sel/boom", "sel/aboom", "sel/plain"]
    assert [e.node for e in errors] == ["sel/boom", "sel/aboom", "sel/plain"]
    for event, word in zip(errors, ["sync boom", "async boom", "plain boom"], strict=True):
        assert word in event.payload["error"]
        assert "Traceback" in event.payload["traceback"]
        assert word in event.payload["traceback"]
        assert event.run_id == runner.run_id
        assert event.tick >= 1
    assert "sync boom" in nodes[0].last_error.traceback


async def test_py_trees_own_leaves_tick_without_their_debug_lines(monkeypatch, capsys):
    """py_trees' own plain leaves run the Jianmu leaf tick too: the same statuses and `terminate`
    calls, without the debug lines py_trees' tick and stop format at every leaf whether or not
    anything prints them (most of a large tree's tick)."""
    terminated = []
    leaves = [py_trees.behaviours.Success("ok"), py_trees.behaviours.Failure("no")]
    for leaf in leaves:
        monkeypatch.setattr(leaf, "terminate", lambda status, leaf=leaf: terminated.append((leaf.name, status)))
    runner = ReactiveRunner(Selector("sel", memory=False, children=leaves[::-1]), LoopState)
    monkeypatch.setattr(py_trees.logging, "level", py_trees.logging.Level.DEBUG)  # py_trees prints them now
    assert await runner.run() == Status.SUCCESS
    assert [leaf.status for leaf in leaves] == [Status.SUCCESS, Status.FAILURE]
    assert terminated == [("no", Status.FAILURE), ("ok", Status.SUCCESS)]
    printed = capsys.readouterr().out
    assert "Selector.stop()" in printed and "Success.update()" in printed  # the composite's, the leaf's own
    assert not [line for line in printed.splitlines() if ".tick()" in line or ".stop(" in line
                if "Success" in line or "Failure" in line]


async def test_a_py_trees_leaf_that_raises_is_a_node_failure():
    leaf = py_trees.behaviours.Success("ok")

    def boom() -> Status:
        raise RuntimeError("py_trees boom")

    leaf.update = boom
    runner = ReactiveRunner(Selector("sel", memory=True, children=[leaf]), LoopState)
    errors = []
    runner.event_bus.subscribe(errors.append, types=["node.error"])
    assert await runner.run() == Status.FAILURE
    assert [e.node for e in errors] == ["sel/ok"] and "py_trees boom" in leaf.last_error.error


async def test_failing_initialise_is_a_node_failure():
    class BadInit(Node):
        def initialise(self) -> None:
            raise RuntimeError("no init")

        def update(self) -> Status:
            return Status.SUCCESS

    class BadLoopInit(LoopUntilSuccess):
        def initialise(self) -> None:
            raise RuntimeError("no loop init")

    root = Selector("sel", memory=True, children=[BadInit("a"), BadLoopInit("l", Wait("w", 0.001)), Wait("ok", 0.001)])
    runner = ReactiveRunner(root, LoopState)
    errors = []
    runner.event_bus.subscribe(errors.append, types=["node.error"])
    assert await asyncio.wait_for(runner.run(), timeout=2) == Status.SUCCESS
    assert [e.node for e in errors] == ["sel/a", "sel/l"]


# -- injection -------------------------------------------------------------------------------
class Probe(AsyncNode):
    async def update_async(self) -> Status:
        await asyncio.sleep(0)
        self.write_state({"result": f"{self.ctx.runtime}:{self.model_client}"})
        return Status.SUCCESS


async def test_injection_at_construction_and_every_run():
    ctx = RunContext(model_client="model-a", runtime="host")
    probe = Probe("probe")
    plain = py_trees.behaviours.Success("plain")
    root = Sequence("root", memory=True, children=[probe, plain])
    runner = ReactiveRunner(root, LoopState, context=ctx)
    assert probe.ctx is ctx
    assert probe.state_manager is runner.state_manager
    assert probe._wake_up is None
    assert ctx.runtime_event_bus is runner.event_bus
    assert not hasattr(plain, "ctx")

    probe.ctx = None  # something clobbered it: the next run injects again
    seen_wake = []
    runner.add_tick_hook(before=lambda r, tick: seen_wake.append(probe._wake_up is not None))
    assert await runner.run() == Status.SUCCESS
    assert all(seen_wake)
    assert runner.state_manager.get("result") == "host:model-a"
    # after the run: a clean-up payload without wake-up
    assert probe._wake_up is None
    assert runner._payload.wake_up is None
    assert probe.ctx is ctx


def test_inject_runtime_deps_skips_plain_nodes():
    payload = InjectPayload(context=RunContext(), state_manager=None, wake_up=None)
    plain = py_trees.behaviours.Success("plain")
    inject_runtime_deps(plain, payload)  # must not raise
    probe = Probe("p")
    inject_runtime_deps(probe, payload)
    assert probe.ctx is payload.context
    with pytest.raises(Exception):  # noqa: B017 - frozen dataclass
        payload.wake_up = print  # type: ignore[misc]


def test_model_client_explicit_first_then_context():
    probe = Probe("p")
    assert probe.model_client is None
    ReactiveRunner(probe, LoopState, context=RunContext(model_client="from-ctx"))
    assert probe.model_client == "from-ctx"
    probe.model_client = "explicit"
    assert probe.model_client == "explicit"


def test_run_context_fields():
    ctx = RunContext()
    for field in ("model_client", "approval_manager", "sandbox", "constraints", "runtime", "prompt_runtime",
                  "runtime_event_bus"):
        assert getattr(ctx, field) is None


# -- paths -----------------------------------------------------------------------------------
async def test_duplicate_sibling_names_get_suffixes_and_events_carry_paths():
    a1, a2, a3 = Wait("A", 0.001), Wait("A", 0.001), Wait("A", 0.001)
    inner = Sequence("inner", memory=True, children=[a3])
    root = Sequence("root", memory=True, children=[a1, a2, inner])
    runner = ReactiveRunner(root, LoopState)
    assert (a1.path, a2.path, a3.path) == ("root/A", "root/A#2", "root/inner/A")
    assert runner.nodes["root/A#2"] is a2
    assert runner.path_of(inner) == "root/inner"
    events = []
    runner.event_bus.subscribe(events.append, types=["node.status"])
    assert await runner.run() == Status.SUCCESS
    assert {"root/A", "root/A#2", "root/inner/A", "root/inner", "root"} <= {e.node for e in events}
