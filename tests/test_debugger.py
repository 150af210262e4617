"""The one debugger (`runtime.debug.Debugger`), driven directly as a local studio drives it and hosting
an agent's own run as the debug server does: stepping, the four breakpoint kinds and their one form,
edits, approvals, replay and fork, and a run held for whoever attached."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest
from py_trees.common import Status
from pydantic import BaseModel

from runtime import Agent
from runtime.debug.breakpoints import Breakpoint, BreakpointError
from runtime.debug.debugger import APPROVAL_RESOLVED, Debugger
from runtime.debug.edits import EditRefused
from runtime.debug.stops import RunState
from runtime.engine.behaviour import Behaviour
from runtime.memory.checkpoint import InMemoryCheckpointStore

ROOT = Path(__file__).resolve().parent.parent
LOOP = "Calculator/Calculator.loop"
TOOLS, DONE = f"{LOOP}/Calculator.tools", f"{LOOP}/Calculator.done"


def sample(name: str, *, store=None) -> Debugger:
    """A sample tree's runner with a debugger watching it, its run begun (the input is state at tick 0)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "sample_trees" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    agent = module.build()
    debugger = Debugger(agent.make_runner(checkpointer=store), agent=agent)
    debugger.watch()
    debugger.begin(getattr(module, "INPUT", None))
    return debugger


async def stops_to_the_end(debugger: Debugger) -> list[tuple[int, str, str | None, int | None]]:
    """(tick, kind, breakpoint label, hits) of every stop a continuing run makes, to its end."""
    stops = []
    while not debugger.runner.finished:
        stop = await debugger.continue_()
        if stop.kind == "finished":
            break
        stops.append((stop.tick, stop.kind, stop.breakpoint.label if stop.breakpoint else None, stop.hits))
    return stops


class Flag(BaseModel):
    flag: bool = False
    tick: int = 0


class Flags(Behaviour):
    """Writes `flag` true, true, false, true at ticks 1 to 4, then succeeds."""

    PATTERN = (True, True, False, True)

    def update(self) -> Status:
        tick = self.read_state("tick")
        self.write_state({"flag": self.PATTERN[tick], "tick": tick + 1})
        return Status.SUCCESS if tick + 1 == len(self.PATTERN) else Status.RUNNING


def flags() -> Debugger:
    debugger = Debugger(Agent(Flags("flags"), state_schema=Flag).make_runner())
    debugger.watch()
    debugger.begin()
    return debugger


# -- stepping ------------------------------------------------------------------------------
async def test_a_step_is_one_tick_and_says_what_it_changed():
    debugger = sample("react_calculator")
    assert debugger.run_state == RunState.READY and debugger.runner.tick_count == 0
    report = await debugger.step()
    assert report.tick == 1 and debugger.runner.tick_count == 1
    assert debugger.last_stop.kind == "step" and debugger.message.startswith("stepped: ")
    assert debugger.run_state == RunState.PAUSED


async def test_step_into_stops_before_every_node_in_tree_order_then_ends_the_tick():
    debugger = sample("react_calculator")
    seen = []
    while (report := await debugger.step_into()) is not None and not report.completed:
        seen.append(debugger.last_stop.node)
    assert seen == ["Calculator", LOOP, f"{LOOP}/Calculator.llm"]  # the model's call runs on: the tick ends
    assert debugger.last_stop.node is None and debugger.runner.tick_count == 1


async def test_pause_ends_a_wait_for_async_work_without_a_tick():
    debugger = sample("text_pipeline")
    await debugger.step()  # Normalize now sleeps 200 ms
    running = asyncio.create_task(debugger.continue_())
    while debugger.run_state != RunState.WAITING:
        await asyncio.sleep(0)
    assert "Normalize" in debugger.message
    debugger.pause()
    stop = await running
    assert stop.kind == "paused" and stop.tick == 1 and debugger.run_state == RunState.PAUSED


async def test_a_finished_run_does_not_step_and_says_so():
    debugger = sample("text_pipeline")
    assert (await debugger.continue_()).kind == "finished"
    assert await debugger.step() is None
    assert debugger.run_state == RunState.FINISHED and debugger.message.startswith("the run has finished")


# -- breakpoints: one semantics -------------------------------------------------------------
async def test_the_four_kinds_stop_where_the_run_makes_them_true():
    """Issue #28's scenario: an event, a condition, before the tools and after the answer check, which
    returns FAILURE in tick 3 before the loop starts its second round (the record of the tick)."""
    debugger = sample("react_calculator")
    debugger.add_event_breakpoint("tool.call.completed")
    debugger.add_condition_breakpoint("rounds >= 2")
    debugger.add_node_breakpoint(TOOLS, "before")
    debugger.add_node_breakpoint(DONE, "after")
    assert await stops_to_the_end(debugger) == [
        (2, "breakpoint", f"before {TOOLS}", 1),
        (2, "breakpoint", "event tool.call.completed", 1),  # the call completed after tick 2, before tick 3
        (3, "breakpoint", f"after {DONE} changes status", 1),  # its FAILURE, though the loop reset it
        (4, "breakpoint", "when rounds >= 2", 1),
        (5, "breakpoint", f"before {TOOLS}", 2),
        (6, "breakpoint", f"after {DONE} changes status", 2)]


async def test_a_condition_stops_each_time_it_becomes_true_not_while_it_stays_true():
    debugger = flags()
    bp = debugger.add_condition_breakpoint("flag")
    assert await stops_to_the_end(debugger) == [(1, "breakpoint", "when flag", 1), (4, "breakpoint", "when flag", 2)]
    assert bp.hits == 2


async def test_a_condition_true_when_set_or_enabled_waits_for_its_next_change_to_true():
    debugger = flags()
    await debugger.step()  # flag is true now
    bp = debugger.add_condition_breakpoint("flag")
    debugger.set_breakpoint(bp, enabled=False)
    debugger.set_breakpoint(bp, enabled=True)  # still true: armed, not fired
    assert await stops_to_the_end(debugger) == [(4, "breakpoint", "when flag", 1)]


async def test_a_disabled_breakpoint_neither_stops_nor_counts_and_a_removed_one_is_gone():
    debugger = sample("react_calculator")
    off = debugger.add_node_breakpoint(TOOLS)
    debugger.set_breakpoint(off, enabled=False)
    assert debugger.runner.stop_before == frozenset()
    gone = debugger.add_event_breakpoint("model.call.completed")
    debugger.remove_breakpoint(gone)
    assert debugger.breakpoints == [off]
    assert await stops_to_the_end(debugger) == [] and off.hits == 0


def test_bad_breakpoints_are_refused_with_one_line():
    debugger = sample("react_calculator")
    refusals = [(lambda: debugger.add_node_breakpoint("Calculator/Nope"), "no node at path 'Calculator/Nope'"),
                (lambda: debugger.add_node_breakpoint(TOOLS, "during"), "stops 'before' the node runs or 'after'"),
                (lambda: debugger.add_event_breakpoint("  "), "needs an event type"),
                (lambda: debugger.add_condition_breakpoint("nope > 1"), "no state key 'nope'"),
                (lambda: debugger.add_condition_breakpoint("rounds >"), "syntax error"),
                (lambda: debugger.breakpoint(99), "no breakpoint 99")]
    for add, reason in refusals:
        with pytest.raises(BreakpointError, match=reason) as refused:
            add()
        assert "\n" not in str(refused.value)
    assert debugger.breakpoints == []


def test_one_form_for_the_breakpoints_file_and_the_protocol():
    debugger = sample("react_calculator")
    added = [debugger.add_node_breakpoint(TOOLS, "after"), debugger.add_event_breakpoint("log"),
             debugger.add_condition_breakpoint("rounds >= 2")]
    debugger.set_breakpoint(added[1], enabled=False)
    assert [bp.to_json() for bp in added] == [
        {"kind": "node", "node": TOOLS, "when": "after", "enabled": True},
        {"kind": "event", "event": "log", "enabled": False},
        {"kind": "condition", "condition": "rounds >= 2", "enabled": True}]
    assert [bp.describe()["id"] for bp in added] == [1, 2, 3] and added[0].describe()["hits"] == 0
    again = [Breakpoint.from_json(bp.to_json()) for bp in added]
    assert [bp.to_json() for bp in again] == [bp.to_json() for bp in added]
    old = Breakpoint.from_json({"kind": "event", "event_type": "log", "enabled": False})  # a file from before
    assert old.to_json() == {"kind": "event", "event": "log", "enabled": False}
    assert Breakpoint.from_json({"kind": "node", "node": TOOLS}).on == "before"
    for bad, reason in (({"kind": "node", "node": TOOLS, "when": "sideways"}, "not 'sideways'"),
                        ({"kind": "watch"}, "node, event or condition, not 'watch'"),
                        ({"kind": "node", "node": TOOLS, "enabled": "yes"}, "true or false")):
        with pytest.raises(BreakpointError, match=reason):
            Breakpoint.from_json(bad)


# -- edits and approvals ----------------------------------------------------------------------
async def test_state_and_binding_edits_are_checked_recorded_and_refused_while_it_runs():
    debugger = sample("text_pipeline")
    edited = []
    debugger.runner.event_bus.subscribe(lambda event: edited.append(event.payload), types=["state.edited"])
    with pytest.raises(EditRefused, match="state key 'words'"):
        debugger.edit_state(None, "words", "many")
    with pytest.raises(EditRefused, match="no state field 'nope' in PipelineState"):
        debugger.edit_binding("TextPipeline/Normalize", "in", "source_text", "nope")
    debugger.edit_binding("TextPipeline/Normalize", "in", "source_text", "summary")
    debugger.edit_state(None, "summary", "EDITED   Text")
    assert edited == [{"namespace": None, "key": "summary", "old": "", "new": "EDITED   Text"}]
    running = asyncio.create_task(debugger.continue_())
    while not debugger.busy:
        await asyncio.sleep(0)
    with pytest.raises(EditRefused, match="pause the run before editing state"):
        debugger.edit_state(None, "summary", "late")
    assert (await running).kind == "finished"
    assert debugger.runner.state_manager.get("normalized_text") == "edited text"


async def test_an_approval_checks_corrected_arguments_and_leaves_the_run_paused():
    debugger = sample("approval_guard")
    stop = await debugger.continue_()
    assert stop.kind == "suspended" and debugger.run_state == RunState.SUSPENDED
    request = debugger.pending_approvals()[0]
    with pytest.raises(EditRefused, match="arguments must be a JSON object"):
        debugger.approve(request.id, ["to"])
    assert debugger.runner.suspended  # a refused correction decided nothing
    debugger.approve(request.id, {**request.arguments, "to": "dev@example.com"})
    assert debugger.run_state == RunState.PAUSED and debugger.message == APPROVAL_RESOLVED
    assert (await debugger.continue_()).kind == "finished"


# -- restore: replay and fork ------------------------------------------------------------------
async def test_replay_and_fork_go_on_from_a_checkpoint_on_a_new_branch():
    store = InMemoryCheckpointStore()
    debugger = sample("text_pipeline", store=store)
    assert (await debugger.continue_()).kind == "finished"
    first = store.list(debugger.runner.run_id)[0]
    with pytest.raises(EditRefused, match="fork: no state key 'nope'"):
        debugger.fork(first, {"nope": 1})
    assert debugger.branch == "main"  # a refused fork changed nothing
    assert debugger.fork(first, {"text": "Forked   TEXT"}) == f"forked fork-1 from checkpoint {first.id} with 1 edit"
    assert debugger.runner.tick_count == 0 and debugger.run_state == RunState.PAUSED
    assert (await debugger.continue_()).kind == "finished"
    assert debugger.runner.state_manager.get("normalized_text") == "forked text"
    assert debugger.replay(first).startswith(f"replaying checkpoint {first.id} on replay-1")
    assert (await debugger.continue_()).kind == "finished"


# -- hosting the agent's own run ------------------------------------------------------------------
class Count(BaseModel):
    count: int = 0


class CountTo(Behaviour):
    """One state write (and wake) per tick until the count reaches `limit`."""

    def __init__(self, name: str, limit: int):
        super().__init__(name)
        self.limit = limit

    def update(self) -> Status:
        count = self.read_state("count") + 1
        self.write_state({"count": count})
        return Status.SUCCESS if count >= self.limit else Status.RUNNING


class CountCalling(CountTo):
    """`CountTo`, calling `at[count]()` in the tick that reaches `count` (what comes in while the runner ticks
    on, in a continue with nothing to look at between ticks: a pause, a replay's divergence)."""

    def __init__(self, name: str, limit: int, at: dict):
        super().__init__(name, limit)
        self.at = at

    def update(self) -> Status:
        status = super().update()
        if (call := self.at.get(self.read_state("count"))) is not None:
            call()
        return status


def counting(limit: int) -> Debugger:
    debugger = Debugger(Agent(CountCalling("counter", limit, {}), state_schema=Count).make_runner())
    debugger.watch()
    debugger.begin()
    return debugger


async def test_a_plain_continue_stops_at_the_tick_a_pause_a_divergence_or_max_ticks_says():
    debugger = counting(100)
    at = debugger.runner.root.at  # (the agent's copy of the tree)
    at[7] = debugger.pause
    assert ((stop := await debugger.continue_()).kind, stop.tick) == ("paused", 7)
    at[9] = lambda: debugger.runner.event_bus.publish("node.error", {"error": "ReplayDivergence: not recorded"})
    assert ((stop := await debugger.continue_()).kind, stop.tick, stop.message) == (
        "divergence", 9, "ReplayDivergence: not recorded")
    assert ((stop := await debugger.continue_(max_ticks=5)).tick, stop.message) == (14, "stopped after --max-ticks 5")
    assert (await debugger.continue_()).tick == 100


async def test_a_continue_does_not_look_at_each_state_write_a_step_does(monkeypatch):
    """Continuing, the run stops at a request for input itself: the debugger's `state.changed` listener
    (which says one was asked between two steps) is not called each tick, and is back for the steps."""
    debugger = counting(50)
    calls = []
    original = debugger._on_event
    monkeypatch.setattr(debugger, "_on_event", lambda event: (calls.append(event.type), original(event)))
    debugger._subscribe()
    assert (await debugger.continue_(max_ticks=20)).tick == 20
    assert "state.changed" not in calls and debugger.runner.event_bus.wants("state.changed")
    await debugger.step()
    assert calls.count("state.changed") == 1


async def test_a_hosted_run_nobody_attached_to_runs_with_nothing_added_to_the_runner():
    runner = Agent(CountTo("counter", 50), state_schema=Count).make_runner()
    debugger = Debugger(runner)
    subscribed = runner.event_bus.wants("state.changed")
    assert await debugger.run() == Status.SUCCESS and runner.tick_count == 50
    assert runner.stop_before == frozenset() and runner.event_bus.wants("state.changed") == subscribed


async def test_a_hosted_run_holds_where_the_front_end_says_and_returns_when_it_lets_go():
    runner = Agent(CountTo("counter", 20), state_schema=Count).make_runner()
    debugger = Debugger(runner)
    held = []
    debugger.add_listener(lambda kind, data: held.append((data.kind, data.tick)) if kind == "held" else None)
    debugger.attach(paused=True)
    debugger.add_condition_breakpoint("count == 5")
    run = asyncio.create_task(debugger.run())

    async def until_held() -> None:
        while debugger.held is None:
            await asyncio.sleep(0)

    await until_held()
    assert debugger.held.message == "paused before tick 1" and runner.tick_count == 0
    debugger.command("step")
    await asyncio.sleep(0)
    await until_held()
    assert runner.tick_count == 1
    debugger.command("continue")
    await asyncio.sleep(0)
    await until_held()
    assert debugger.held.kind == "breakpoint" and runner.state_manager.get("count") == 5
    debugger.detach()  # the front end is gone: the run goes on, free
    assert await asyncio.wait_for(run, 10) == Status.SUCCESS and runner.tick_count == 20
    assert held == [("paused", 0), ("step", 1), ("breakpoint", 5)]


async def test_a_step_that_cannot_tick_says_what_holds_the_tree_running():
    """py_trees' `Repeat` returns RUNNING with nothing in flight: nothing but a wake from outside moves the
    run, so a step waits; it says so, naming the node, where before the last step's message stayed."""
    import py_trees

    work = py_trees.composites.Sequence("Work", memory=False, children=[py_trees.behaviours.Success("A")])
    debugger = Debugger(Agent(py_trees.decorators.Repeat("Again", child=work, num_success=3)).make_runner())
    debugger.watch()
    debugger.begin()
    await debugger.step()
    stepping = asyncio.create_task(debugger.step())
    for _ in range(10):  # (the step's task starts, finds nothing to tick and waits)
        await asyncio.sleep(0)
    assert not stepping.done()
    assert debugger.message.startswith("waiting for a wake: Again RUNNING, no work in flight")
    assert debugger.run_state == RunState.PAUSED
    debugger.pause()
    assert await stepping is None and debugger.message == "paused" and debugger.runner.tick_count == 1
