"""A continue at full speed (#34.4): ticks nobody reads the reports of are ticked as `runner.run()` ticks
them and the debug server is told of changes once an update, while a continue stops where, and with the
state, a step would give, a pause stops between ticks, and every tick's events reach the client."""

from __future__ import annotations

from py_trees.common import Status
from test_attached_full_speed import TICKS, Count, CountUp

from runtime import Agent
from runtime.debug.controller import DebugController
from runtime.debug.debugger import Debugger
from runtime.debug.protocol import events_of
from runtime.debug.ticks import events_in, tick_events
from runtime.engine.record import TickReport
from runtime.engine.runner import ReactiveRunner


def counter() -> Debugger:
    debugger = Debugger(Agent(CountUp("count"), state_schema=Count).make_runner())
    debugger.watch()
    debugger.begin()
    return debugger


async def test_a_condition_on_tick_1234_of_a_fast_continue_stops_there_with_the_state_steps_give():
    continued, stepped = counter(), counter()
    continued.add_condition_breakpoint("count == 1234")
    stop = await continued.continue_()
    for _ in range(1234):
        await stepped.step()
    assert (stop.kind, stop.tick, stop.breakpoint.hits) == ("breakpoint", 1234, 1)
    assert continued.runner.paused_at is None  # between ticks, as a step leaves it
    assert continued.runner.state_manager.snapshot() == stepped.runner.state_manager.snapshot()
    assert continued.runner.statuses() == stepped.runner.statuses() == {"count": Status.RUNNING}
    assert (await continued.continue_()).kind == "finished" and continued.runner.tick_count == TICKS


async def test_a_continue_nobody_reads_builds_no_tick_detail_until_a_breakpoint_or_a_listener_needs_it(monkeypatch):
    detailed = []
    changes = ReactiveRunner._status_changes
    monkeypatch.setattr(ReactiveRunner, "_status_changes", lambda runner, *tick: (detailed.append(runner.tick_count),
                                                                                  changes(runner, *tick))[1])
    debugger = counter()
    debugger.add_listener(lambda kind, data: None, ticks=False)  # as the debug server listens
    assert (await debugger.continue_(max_ticks=100)).tick == 100 and detailed == []
    debugger.add_node_breakpoint("count", "after")  # it reads each tick's changes: each tick has them
    stop = await debugger.continue_()
    assert (stop.kind, stop.tick) == ("breakpoint", TICKS) and len(detailed) == TICKS - 100
    debugger.remove_breakpoint(stop.breakpoint)
    reports: list[TickReport] = []
    listening = counter()
    listening.add_listener(lambda kind, data: reports.append(data) if kind == "tick" else None)
    await listening.continue_(max_ticks=3)
    assert [(report.tick, report.ticked, report.changed) for report in reports] == [
        (1, ["count"], {"count": (Status.INVALID, Status.RUNNING)}), (2, ["count"], {}), (3, ["count"], {})]


async def test_pause_while_continuing_fast_stops_between_ticks():
    debugger = counter()
    sm = debugger.runner.state_manager
    sm.subscribe(lambda change: debugger.pause() if sm.get("count") == 500 else None)  # asked inside tick 500
    stop = await debugger.continue_()
    assert (stop.kind, stop.tick, debugger.runner.tick_count, sm.get("count")) == ("paused", 500, 500, 500)
    assert debugger.runner.paused_at is None
    assert (await debugger.continue_()).kind == "finished" and sm.get("count") == TICKS


async def test_a_fast_continue_tells_the_server_once_an_update_and_sends_every_tick_s_events_in_order():
    debugger = Debugger(Agent(CountUp("count"), state_schema=Count).make_runner())
    wakeups: list[bool] = []
    controller = DebugController(debugger, wakeups.append)
    controller.attach()
    debugger.begin()
    await debugger.continue_(max_ticks=200)  # nothing sealed meanwhile: one wakeup, not several a tick
    assert wakeups == [False]
    controller.seal()
    await debugger.continue_(max_ticks=50)
    controller.seal()
    assert wakeups == [False, False]
    updates = [message for message in controller.outbox if message["type"] == "update"]
    ticks = [event for update in updates for event in tick_events(update["ticks"])]
    assert [event.tick for event in ticks if event.type == "tick.completed"] == list(range(1, 251))
    logged = [event.payload["count"] for update in updates for event in events_of(update["events"]) if event.type == "log"]
    assert logged == list(range(1, 251))
    events = sorted([*(seq for update in updates for seq in update["events"]["seq"]),
                     *(event.seq for event in ticks)])
    assert events == list(range(events[0], events[0] + len(events)))  # none missing: each number once
    controller.detach()


async def test_a_continue_nothing_can_stop_between_ticks_steps_the_runner_once_a_batch_not_once_a_tick(monkeypatch):
    """With no breakpoint and no listener of ticks (the debug server's continue), the runner ticks on
    until the debugger lets the loop run: a step's setup is made once a batch (#34.4)."""
    drives = []
    drive = ReactiveRunner._drive
    monkeypatch.setattr(ReactiveRunner, "_drive", lambda runner, *args, **kwargs: (drives.append(1),
                                                                                   drive(runner, *args, **kwargs))[1])
    debugger = counter()
    debugger.add_listener(lambda kind, data: None, ticks=False)
    stop = await debugger.continue_()
    assert (stop.kind, debugger.runner.tick_count) == ("finished", TICKS)
    assert len(drives) < TICKS // 4  # a batch a yield to the loop (5 ms), a tick taking far less
    drives.clear()
    debugger = counter()
    debugger.add_condition_breakpoint("count == 1500")  # a condition is looked at after every tick
    assert (await debugger.continue_()).tick == 1500 and len(drives) == 1500


async def test_events_past_the_server_s_backlog_between_two_updates_are_counted_dropped_exactly_and_the_newest_sent(
        monkeypatch):
    """The bus keeps the server's events (`RuntimeEventBus.batch`): past EVENT_BACKLOG of them between two
    updates, the oldest go, each counted in the update's `dropped_events`; none dropped otherwise."""
    monkeypatch.setattr("runtime.debug.controller.EVENT_BACKLOG", 100)
    debugger = Debugger(Agent(CountUp("count"), state_schema=Count).make_runner())
    controller = DebugController(debugger, lambda urgent: None)
    controller.attach()
    debugger.begin()
    await debugger.continue_(max_ticks=30)  # a log event a tick: under the limit
    controller.seal()
    await debugger.continue_(max_ticks=200)  # 200 more, and as many state.changed: 300 past the limit
    controller.seal()
    first, second = [message for message in controller.outbox if message["type"] == "update"]
    assert "dropped_events" not in first
    logged = [event.payload["count"] for event in events_of(second["events"]) if event.type == "log"]
    kept_ticks = events_in(second["ticks"])  # the ticks' telemetry: 400 events, the newest 100 kept
    assert kept_ticks == 100 and len(second["events"]["seq"]) == 100
    assert second["dropped_events"] == 300 + 400 - kept_ticks
    assert logged == list(range(181, 231))  # the newest, each tick's two events
    controller.detach()
