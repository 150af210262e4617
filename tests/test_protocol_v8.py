"""Protocol 8: the ticks' `status` as runs and their numbers and times in flat columns read back as the
events they stand for; a peer speaking another version is refused at `hello` in one line."""

from __future__ import annotations

import asyncio
import json

import pytest
from debug_fixtures import TOKEN
from py_trees.common import Status

from runtime import Agent
from runtime.debug import PROTOCOL_VERSION, DebugClient, DebugError, DebugServer
from runtime.debug import server as served
from runtime.debug.protocol import encode
from runtime.debug.ticks import TickBacklog, events_in, tick_events
from runtime.engine.record import TickReport, TickTelemetry
from runtime.node import Log
from studio.cli import main


def _ticks() -> TickBacklog:
    """Five ticks: RUNNING three times (the third changing a status), a new run id, then SUCCESS."""
    backlog = TickBacklog(1000)
    for tick, run_id, status in ((1, "run1", Status.RUNNING), (2, "run1", Status.RUNNING), (3, "run1", Status.RUNNING),
                                 (1, "run2", Status.RUNNING), (2, "run2", Status.SUCCESS)):
        changed = {"root/a": (Status.INVALID, Status.RUNNING)} if tick == 3 else {}
        first = tick * 100 + (10 if run_id == "run2" else 0)
        backlog.add(run_id, TickReport(tick, status, changed=changed, ticked=["root/a", "root"],
                                       returned=[Status.RUNNING, status], state_changes={f"k{tick}": (0, 1)},
                                       duration_ms=0.0421 * tick, telemetry=TickTelemetry(
                                           (first, 1796680018.7176714 + tick), (first + 1, 1796680018.75) if changed else None,
                                           (first + 2, 1796680018.7177553 + tick))))
    return backlog


def test_the_ticks_status_goes_as_runs_and_their_numbers_and_times_as_flat_columns_and_read_back_exactly():
    ticks = json.loads(encode(_ticks().take()))
    assert ticks["status"] == [["RUNNING", 4], ["SUCCESS", 1]]
    assert ticks["runs"] == [["run1", 3], ["run2", 2]]
    assert ticks["started"] == [100, 200, 300, 110, 210] and ticks["completed"] == [102, 202, 302, 112, 212]
    assert ticks["started_at"][0] == 1796680018.7176714 + 1 and ticks["completed_at"][4] == 1796680018.7177553 + 2
    events = tick_events(ticks)
    completed = [event for event in events if event.type == "tick.completed"]
    assert [(event.run_id, event.tick, event.payload["status"]) for event in completed] == [
        ("run1", 1, "RUNNING"), ("run1", 2, "RUNNING"), ("run1", 3, "RUNNING"), ("run2", 1, "RUNNING"),
        ("run2", 2, "SUCCESS")]
    assert [event.payload["duration_ms"] for event in completed] == [round(0.0421 * t, 3) for t in (1, 2, 3, 1, 2)]
    assert [(event.seq, event.time) for event in events if event.type == "tick.started"] == [
        (100, 1796680018.7176714 + 1), (200, 1796680018.7176714 + 2), (300, 1796680018.7176714 + 3),
        (110, 1796680018.7176714 + 1), (210, 1796680018.7176714 + 2)]
    assert [(event.seq, event.node, event.payload) for event in events if event.type == "node.status"] == [
        (301, "root/a", {"old": "INVALID", "new": "RUNNING"})]
    assert events_in(ticks) == len(events) == 11


def test_ticks_whose_status_runs_do_not_cover_every_tick_are_refused():
    ticks = json.loads(encode(_ticks().take()))
    with pytest.raises(ValueError):
        tick_events({**ticks, "status": [["RUNNING", 4]]})


async def test_a_studio_attaching_to_a_server_of_another_version_is_told_so_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(served, "PROTOCOL_VERSION", PROTOCOL_VERSION - 1)  # a server of the version before
    server = DebugServer(Agent(Log("hello", "hi")).make_runner(), "127.0.0.1:0", token=TOKEN)
    await server.listen()
    capsys.readouterr()  # the server's own line
    address = f"127.0.0.1:{server.port}"
    try:
        with pytest.raises(DebugError) as refused:
            await DebugClient.connect(address, TOKEN)
        assert refused.value.code == "version"
        code = await asyncio.to_thread(main, ["attach", address, "--token", TOKEN])
    finally:
        await server.close()
    assert code == 2
    assert capsys.readouterr().err.strip() == (f"jianmu-studio: {address}: protocol {PROTOCOL_VERSION} is not supported: "
                                              f"this server speaks {PROTOCOL_VERSION - 1}")
