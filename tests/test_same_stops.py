"""A local and an attached studio stop at the same places: the same scripted scenarios on every sample
tree, driven through the session interface on a local session (the debugger in this process) and on an
attached one (the sample in its own process, the debugger there driven over the protocol), must make
the same stops (tick, node held before, kind, breakpoint, hits) in the same order (issue #28.2), and,
stepping into ticks, draw the same tree at each: inside a tick, the tick so far (#28.1)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from tui_fixtures import REACT_CALCULATOR, session_on, steady_terminal  # noqa: F401
from tui_fixtures import until as holds

from runtime.debug.children import split_child_path
from runtime.debug.stops import RunState, Stop

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted(path.name for path in (ROOT / "sample_trees").glob("*.py") if "def build(" in path.read_text())
NOT_TREES = {"__init__.py": "the package marker", "mcp_server.py": "the MCP server mcp_tools.py starts, not a tree"}
EVENTS = ("tool.call.completed", "tool.call.failed", "log", "swarm.message.sent", "approval.requested")
LIMIT = 40  # steps a scenario takes at most (large_tree has 10,000 nodes to step into)
CONTINUES = 200  # continues: a breakpoint inside a loop stops every round
LOOP = "Calculator/Calculator.loop"
NOT_DRAWN_ALIKE = {"skill_subagent.py": "a function node's task ends when the event loop gets to run: attached, "
                   "during a command's round trip; locally, scripted steps may tick first (same stops, the "
                   "task's result a tick apart)"}

Seen = tuple[int, str | None, str, str | None, int | None]
Drawn = tuple[list[tuple[str, str, bool, str | None]], list[tuple[str, str]] | None, list[str], list[str]]
Scenario = Callable[..., Awaitable[Any]]


def seen(stop: Stop) -> Seen:
    return (stop.tick, stop.node, stop.kind, stop.breakpoint.label if stop.breakpoint else None, stop.hits)


def drawn(session) -> Drawn:
    """The host's tree as the tree pane draws it (status, the not-yet-ticked mark, a loop's counter), the
    frame's record (inside a tick: what returned in it so far) with the nodes not reached yet, and the
    running leaves (a swarm's agents run on their own, so only the host's)."""
    frame, host = session.frame, (lambda path: split_child_path(path) is None)
    return ([(view.path, view.status.name, view.pending, view.counter) for view in session.node_views()
             if host(view.path)],
            None if frame.returns is None else [(path, status.name) for path, status in frame.returns],
            sorted(frame.pending), [path for path in session.running_nodes() if host(path)])


def test_every_file_in_sample_trees_is_a_tree_here_or_said_why_not():
    files = {path.name for path in (ROOT / "sample_trees").glob("*.py")}
    assert files == set(SAMPLES) | set(NOT_TREES)


async def continue_to_the_end(session) -> list[Seen]:
    """Continue until the run ends, approving what it asks for; every stop on the way."""
    stops = []
    for _ in range(CONTINUES):
        stop = await session.continue_()
        if stop.kind == "finished" or session.run_state == RunState.FINISHED and stop.kind != "breakpoint":
            return stops
        stops.append(seen(stop))
        if session.run_state == RunState.FINISHED:
            return stops
        if stop.kind == "suspended":
            for request in session.pending_approvals():
                session.approve(request.id)
            await holds(lambda: session.run_state != RunState.SUSPENDED)
    raise AssertionError(f"no end after {CONTINUES} continues: {stops}")


async def breakpoints_of_every_kind(session) -> list[Seen]:
    """Before the first leaf, after the last one, and events a sample may publish, to the end."""
    leaves = [view.path for view in session.node_views() if not view.children]
    session.add_node_breakpoint(leaves[0], "before")
    session.add_node_breakpoint(leaves[-1], "after")
    for event_type in EVENTS:
        session.add_event_breakpoint(event_type)
    return await continue_to_the_end(session)


async def stepping_in_and_over(session) -> list[tuple[Seen, Drawn]]:
    """Into, into, over, into, into, over, ...: where each one stops and the tree drawn there, until the end
    or `LIMIT`."""
    stops = []
    for count in range(LIMIT):
        await (session.step() if count % 3 == 2 else session.step_into())
        stops.append((seen(session.last_stop), drawn(session)))
        if session.last_stop.kind in ("suspended", "finished") or session.run_state == RunState.FINISHED:
            break
    return stops


async def into_the_third_tick(session) -> Drawn:
    """`n n s s s s`: held before the answer check in tick 3, the tools having returned in it."""
    for step in (session.step, session.step, *[session.step_into] * 4):
        await step()
    assert (session.last_stop.tick, session.last_stop.node) == (3, f"{LOOP}/Calculator.done")
    return drawn(session)


async def issue_28(session) -> list[Seen]:
    """The issue's four breakpoints: an event, a condition, before the tools, after the answer check."""
    session.add_event_breakpoint("tool.call.completed")
    session.add_condition_breakpoint("rounds >= 2")
    session.add_node_breakpoint(f"{LOOP}/Calculator.tools", "before")
    session.add_node_breakpoint(f"{LOOP}/Calculator.done", "after")
    return await continue_to_the_end(session)


async def condition_true_false_true(session) -> list[Seen]:
    """`len(messages) % 2 == 0` is false, true, false, true as the conversation grows: two stops."""
    session.add_condition_breakpoint("len(messages) % 2 == 0")
    return await continue_to_the_end(session)


async def pause_while_it_waits(session) -> list[Seen]:
    """Continue a run that waits for work outlasting the test and pause it there, twice: it stops at
    once, at the tick it waits after, and no tick is made for the pause."""
    stops = []
    for _ in range(2):
        running = asyncio.create_task(session.continue_())
        await holds(lambda: session.run_state == RunState.WAITING)
        session.pause()
        stops.append(seen(await running))
    return stops


async def both(tree: Path, tmp_path: Path, scenario: Scenario) -> tuple[Any, Any]:
    """The scenario's stops on a local session and on an attached one."""
    results = []
    for kind in ("local", "remote"):
        (tmp_path / kind).mkdir()
        async with session_on(kind, tree, tmp_path / kind) as session:
            results.append(await scenario(session))
            if kind == "local":
                session.runner.stop()  # cancels work still in flight (the attached one goes with its process)
    return results[0], results[1]


@pytest.mark.parametrize("sample", SAMPLES)
@pytest.mark.parametrize("scenario", [breakpoints_of_every_kind, stepping_in_and_over])
async def test_every_sample_stops_at_the_same_places_local_and_attached(sample, scenario, tmp_path):
    local, attached = await both(ROOT / "sample_trees" / sample, tmp_path, scenario)
    assert local, "the scenario made no stop at all"
    if scenario is stepping_in_and_over and sample in NOT_DRAWN_ALIKE:  # the stops only
        local, attached = [stop for stop, _ in local], [stop for stop, _ in attached]
    assert attached == local


async def test_the_issue_s_breakpoints_stop_at_the_same_ticks_local_and_attached(tmp_path):
    local, attached = await both(REACT_CALCULATOR, tmp_path, issue_28)
    tools, done = f"{LOOP}/Calculator.tools", f"{LOOP}/Calculator.done"
    assert local == [(2, tools, "breakpoint", f"before {tools}", 1),
                     (2, None, "breakpoint", "event tool.call.completed", 1),
                     (3, None, "breakpoint", f"after {done} changes status", 1),  # its FAILURE in round 1
                     (4, None, "breakpoint", "when rounds >= 2", 1),
                     (5, tools, "breakpoint", f"before {tools}", 2),
                     (6, None, "breakpoint", f"after {done} changes status", 2)]
    assert attached == local


async def test_a_condition_stops_each_time_it_becomes_true_local_and_attached(tmp_path):
    local, attached = await both(REACT_CALCULATOR, tmp_path, condition_true_false_true)
    assert [(kind, hits) for _, _, kind, _, hits in local] == [("breakpoint", 1), ("breakpoint", 2)]
    assert attached == local


async def test_a_pause_while_the_run_waits_stops_it_at_once_local_and_attached(tmp_path):
    local, attached = await both(ROOT / "tests" / "waiting_tree.py", tmp_path, pause_while_it_waits)
    assert local == [(1, None, "paused", None, None), (1, None, "paused", None, None)]
    assert attached == local


async def test_paused_inside_a_tick_an_attached_studio_draws_the_tick_so_far_as_a_local_one(tmp_path):
    """The issue's `n n s s s s`: the tools returned SUCCESS in this tick (not RUNNING, the tick before's
    end), the nodes not reached yet are marked so, nothing runs; attached as locally (#28.1). The model
    call the loop's memory passed by in this tick (it finished in tick 2) is drawn as it is, SUCCESS,
    not as a node still to come."""
    local, attached = await both(REACT_CALCULATOR, tmp_path, into_the_third_tick)
    lines, returns, pending, running = local
    tools, done, llm = f"{LOOP}/Calculator.tools", f"{LOOP}/Calculator.done", f"{LOOP}/Calculator.llm"
    assert (tools, "SUCCESS", False, None) in lines and returns == [(tools, "SUCCESS")]
    assert (llm, "SUCCESS", False, None) in lines
    assert pending == sorted(["Calculator", LOOP, done]) and running == []
    assert attached == local
