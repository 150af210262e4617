"""An attached client while the run continues at full speed (#34.4): the server sends what changed in
coalesced updates, never a message a tick; the run does not wait for a client that reads slowly; and
every event the run published reaches the client or is counted in `dropped_events`."""

from __future__ import annotations

import asyncio
import gc
import json
import math
import re

import pytest
from py_trees.common import Status
from pydantic import BaseModel
from pydantic_core import to_jsonable_python
from tui_fixtures import ROOT, session_on, until
from websockets.asyncio.client import connect

from runtime import Agent
from runtime.debug import PROTOCOL_VERSION, DebugServer
from runtime.debug.past import RunPast
from runtime.debug.protocol import encode, events_json, events_of, frame
from runtime.debug.ticks import TickBacklog, events_in, tick_events
from runtime.engine.behaviour import Behaviour
from runtime.engine.events import TICK_TELEMETRY, RuntimeEvent, RuntimeEventBus
from runtime.engine.record import TickReport, TickTelemetry
from runtime.engine.runner import ReactiveRunner
from runtime.memory.checkpoint import open_store
from studio.session import RunState

TOKEN = "full-speed-token"
TICKS = 2000


class Count(BaseModel):
    count: int = 0


class CountUp(Behaviour):
    """One state write and one log event a tick, for TICKS ticks: a run that never waits."""

    def update(self) -> Status:
        count = self.read_state("count") + 1
        self.write_state({"count": count})
        self.emit("log", {"count": count})
        return Status.SUCCESS if count >= TICKS else Status.RUNNING


async def test_a_run_at_full_speed_sends_few_updates_to_a_client_that_reads_nothing_until_it_ends():
    runner = Agent(CountUp("count"), state_schema=Count).make_runner()
    server = DebugServer(runner, "127.0.0.1:0", token=TOKEN)
    await server.listen()
    try:
        async with connect(server.url, max_size=None) as ws:  # reads nothing while the run goes on
            await ws.send(encode({"type": "hello", "protocol": PROTOCOL_VERSION, "token": TOKEN}))
            assert json.loads(await ws.recv())["type"] == "welcome"
            before = runner.event_bus.position  # what the welcome carried
            assert await asyncio.wait_for(server.run(), 60) == Status.SUCCESS  # attached: it continued at once
            published = runner.event_bus.position
            closing = asyncio.create_task(server.close())
            messages = [json.loads(text) async for text in ws]  # now read, up to the server's goodbye
            await closing
    finally:
        await server.close()
    updates = [message for message in messages if message["type"] == "update"]
    assert [message["type"] for message in messages if message["type"] != "update"] == ["finished", "bye"]
    assert len(updates) < TICKS // 10  # a tick takes far less than the 20 ms an update waits for more
    assert (updates[-1]["tick"], updates[-1]["status"]) == (TICKS, "SUCCESS")
    assert updates[-1]["report"]["tick"] == TICKS  # the report is the last tick's
    state = [value for update in updates for namespace, key, value in update.get("state", ()) if key == "count"]
    assert state[-1] == TICKS
    events = [event for update in updates for event in sorted(  # the ticks' own telemetry rebuilt beside the others
        [*events_of(update.get("events")), *tick_events(update.get("ticks", ()))],
        key=lambda event: event.seq)]
    dropped = sum(update.get("dropped_events", 0) for update in updates)
    seqs = [event.seq for event in events]
    assert seqs == sorted(set(seqs)) and seqs[-1] == published  # each once, in order, the newest kept
    assert len(events) + dropped == published - before  # every event delivered, or counted as dropped
    assert [event.payload["count"] for event in events if event.type == "log"][-1] == TICKS
    assert [event.type for event in events[-2:]] == ["tick.completed", "run.completed"]


def test_an_update_is_encoded_as_pydantic_would_have_it_and_nan_is_never_a_bare_token():
    """Events, statuses, sets, models, bytes and a dict keyed by tuples: the JSON the client gets is what
    converting the whole message with pydantic first gives; NaN and the infinities arrive as strings,
    which a strict JSON parser (a browser's, jq) reads, never as bare tokens it refuses (#32)."""
    event = RuntimeEvent(7, "log", 1.5, 3, "count", "run1", {"status": Status.RUNNING, "seen": {"a"}})
    message = {"type": "update", "events": [event], "state": [["", "count", Count(count=2)]], "raw": b"x",
               "pairs": {(1, 2): "x"}}
    assert json.loads(encode(message)) == to_jsonable_python(message, fallback=repr)
    odd = encode({"type": "update", "state": [["", "loss", math.nan], ["", "top", math.inf], ["", "low", -math.inf]]})
    assert json.loads(odd, parse_constant=lambda token: pytest.fail(f"bare {token} in {odd}"))["state"] == [
        ["", "loss", "NaN"], ["", "top", "Infinity"], ["", "low", "-Infinity"]]
    lone = encode({"type": "update", "state": [["", "name", "a\udc80b"]]})  # not UTF-8: escaped, still sent
    assert json.loads(lone)["state"] == [["", "name", "a\udc80b"]]


async def served_to_one_client() -> list[dict]:
    """The counter's run served to one attached client to its end: every message the client received."""
    runner = Agent(CountUp("count"), state_schema=Count).make_runner()
    server = DebugServer(runner, "127.0.0.1:0", token=TOKEN)
    await server.listen()
    try:
        async with connect(server.url, max_size=None) as ws:
            await ws.send(encode({"type": "hello", "protocol": PROTOCOL_VERSION, "token": TOKEN}))
            assert json.loads(await ws.recv())["type"] == "welcome"
            assert await asyncio.wait_for(server.run(), 60) == Status.SUCCESS
            closing = asyncio.create_task(server.close())
            messages = [json.loads(text) async for text in ws]
            await closing
    finally:
        await server.close()
    return messages


async def test_while_a_client_is_attached_no_tick_telemetry_event_is_built(monkeypatch):
    """The server has the runner number a tick's telemetry, not build it (an object per event, per
    changed node); the client gets it all the same, rebuilt from an update's `ticks`."""
    built: list[str] = []
    emit = RuntimeEventBus.emit
    monkeypatch.setattr(RuntimeEventBus, "emit", lambda bus, event: (built.append(event.type), emit(bus, event)))
    messages = await served_to_one_client()
    assert "log" in built and not TICK_TELEMETRY & set(built)
    received = [event.type for message in messages for event in tick_events(message.get("ticks", ()))]
    assert received.count("tick.completed") == TICKS
    assert received.count("node.status") == 2  # the counter started RUNNING, ended SUCCESS


async def test_an_attached_run_that_records_nothing_hands_the_server_its_ticks_through_no_hook(monkeypatch):
    """The runner hands the server each tick's report as it ends (`number_telemetry`'s sink), not through an
    after-tick hook (its machinery a tick, a fifth of what watching a small tree's tick cost); every tick
    still reaches the client, the last one's report with it."""
    hooks: list[object] = []
    add_tick_hook = ReactiveRunner.add_tick_hook
    monkeypatch.setattr(ReactiveRunner, "add_tick_hook",
                        lambda runner, before=None, after=None: (hooks.append(after), add_tick_hook(runner, before, after))[1])
    messages = await served_to_one_client()
    assert [after for after in hooks if after is not None] == []
    received = [event.tick for message in messages for event in tick_events(message.get("ticks", ()))
                if event.type == "tick.completed"]
    assert received == list(range(1, TICKS + 1))
    assert [message["report"]["tick"] for message in messages if "report" in message][-1] == TICKS


@pytest.mark.parametrize("name", ["react_calculator", "text_pipeline"])
async def test_an_attached_studio_logs_the_events_a_local_one_logs(name, tmp_path):
    """The same tree run to its end in a local studio and in one attached to it in its own process: the
    same events, numbered alike, in the same order, each stamped in its tick or between ticks alike
    (the ticks' telemetry rebuilt from the numbers the server sent)."""
    async def logged(kind: str) -> list[tuple]:
        folder = tmp_path / kind
        folder.mkdir()
        async with session_on(kind, ROOT / "sample_trees" / f"{name}.py", folder) as session:
            await session.continue_()
            await until(lambda: session.run_state == RunState.FINISHED)
            return [(e.event.seq, e.type, e.node, e.event.tick, e.between, e.event.payload) for e in session.events]

    def steady(log: list[tuple]) -> list[tuple]:  # a tick's duration is the one thing that differs
        return [(*head, {key: value for key, value in payload.items() if key != "duration_ms"})
                for *head, payload in log]

    local, attached = await logged("local"), await logged("remote")
    assert steady(attached) == steady(local)
    if name == "react_calculator":  # its loop's round returns FAILURE and is reset in the same tick: node.returned
        assert {entry[1] for entry in attached} >= TICK_TELEMETRY


def test_the_protocol_docs_say_what_a_tick_s_telemetry_carries():
    """docs/protocol.md names the version the server speaks and every column of the ticks' telemetry,
    and ticks with every column rebuild to the events they stand for, in the order published."""
    text = (ROOT / "docs" / "protocol.md").read_text()
    assert f"# The Jianmu debug protocol, version {PROTOCOL_VERSION}\n" in text
    assert f"`PROTOCOL_VERSION` is {PROTOCOL_VERSION}." in text
    section = text.split("### A tick's telemetry", 1)[1].split("\n### ", 1)[0]
    documented = set(re.findall(r"^- `(\w+)`", section, re.M)) | set(re.findall(r", `(\w+)`", section))
    backlog = TickBacklog(100)
    backlog.add("run1", TickReport(4, Status.RUNNING, changed={"root/loop": (Status.INVALID, Status.RUNNING)},
                                   ticked=["root/loop/done", "root/loop"], returned=[Status.FAILURE, Status.RUNNING],
                                   unseen=[(0, Status.INVALID)], state_changes={"count": (1, 2)}, duration_ms=1.5,
                                   telemetry=TickTelemetry((10, 1.0), (12, 1.0), (13, 1.0), (11, 1.0))))
    backlog.add("run1", TickReport(5, Status.SUCCESS, ticked=["root/loop"], returned=[Status.SUCCESS],
                                   telemetry=TickTelemetry((15, 2.0), None, (16, 2.0))))
    ticks = json.loads(encode(backlog.take()))
    assert set(ticks) == documented
    events = tick_events(ticks)
    assert [(event.seq, event.type, event.node, event.tick) for event in events] == [
        (10, "tick.started", None, 4), (11, "node.returned", "root/loop/done", 4), (12, "node.status", "root/loop", 4),
        (13, "tick.completed", None, 4), (15, "tick.started", None, 5), (16, "tick.completed", None, 5)]
    assert events[3].payload == {"status": "RUNNING", "duration_ms": 1.5, "changed": {"root/loop": ["INVALID", "RUNNING"]},
                                 "state_keys": ["count"], "ticked": 2}
    assert {event.run_id for event in events} == {"run1"} and events_in(ticks) == len(events)


def test_events_in_columns_read_back_as_they_were_and_columns_that_do_not_line_up_are_refused():
    events = [RuntimeEvent(1, "log", 1.5, 1, None, "run1", {"count": 1}), RuntimeEvent(2, "state.changed", 1.75, 1, "n",
                                                                                        "run1", {"keys": ["count"]}),
              RuntimeEvent(3, "run.started", 2.0, 0, None, "run2", {})]
    columns = json.loads(encode(events_json(events)))
    assert columns["runs"] == [["run1", 2], ["run2", 1]] and events_of(columns) == events
    for field, value in (("seq", [1, 2]), ("payload", [{}, {}, "x"]), ("runs", [["run1", 4]])):
        with pytest.raises(ValueError):
            events_of({**columns, field: value})


def test_the_ticks_kept_for_a_slow_client_are_the_newest_limit_events_worth_and_the_others_are_counted():
    """A client that does not read while the run ticks on: the server keeps the newest ticks' telemetry, up to
    its limit in events (a tick that changed many statuses weighs as many), and says how many it let go."""
    backlog = TickBacklog(10)
    many = {f"n{i}": (Status.INVALID, Status.RUNNING) for i in range(5)}
    for tick in range(1, 6):  # 2, 7, 2, 2, 2 events
        backlog.add("run1", TickReport(tick, Status.RUNNING, changed=many if tick == 2 else {}, ticked=["n0"],
                                       returned=[Status.RUNNING], telemetry=TickTelemetry(
                                           (tick * 10, 1.0), (tick * 10 + 1, 1.0) if tick == 2 else None, (tick * 10 + 9, 1.0))))
    events = tick_events(json.loads(encode(backlog.take())))
    assert [event.tick for event in events if event.type == "tick.completed"] == [3, 4, 5]
    assert backlog.dropped == 9 and not backlog


def test_a_slow_client_s_backlog_lets_the_oldest_ticks_go_as_they_come_and_keeps_the_newest_in_order():
    """Ticks passed over are let go in bulk, later: what an update takes is still the newest `limit` events'
    worth, with the blocks of the ticks that changed a status at their own tick's place."""
    backlog = TickBacklog(40)
    for tick in range(1, 1001):
        changed = {"n0": (Status.INVALID, Status.RUNNING)} if tick % 7 == 0 else {}
        backlog.add("run1", TickReport(tick, Status.RUNNING, changed=changed, ticked=["n0"], returned=[Status.RUNNING],
                                       state_changes={f"k{tick}": (0, 1)}, telemetry=TickTelemetry(
                                           (tick * 10, 1.0), (tick * 10 + 1, 1.0) if changed else None, (tick * 10 + 9, 1.0))))
    ticks = json.loads(encode(backlog.take()))
    events = tick_events(ticks)
    kept = [event.tick for event in events if event.type == "tick.completed"]
    assert kept == list(range(kept[0], 1001)) and len(events) <= 40 < len(events) + 3
    assert [event.tick for event in events if event.type == "node.status"] == [t for t in kept if t % 7 == 0]
    assert ticks["state_keys"] == [f"k{t}" for t in kept]
    assert backlog.dropped + len(events) == 1000 * 2 + 1000 // 7 and not backlog


def test_the_backlog_is_the_runner_s_sink_it_wakes_its_reader_once_an_update_and_keeps_the_last_report():
    """The runner hands each tick to `TickBacklog.add` itself (no other call a tick): the first tick after a
    take wakes the reader, the others do not, and the last tick's report is taken once."""
    woken: list[int] = []
    backlog = TickBacklog(100, lambda: woken.append(1))
    reports = [TickReport(tick, Status.RUNNING, ticked=["n0"], returned=[Status.RUNNING],
                          telemetry=TickTelemetry((tick * 10, 1.0), None, (tick * 10 + 1, 1.0))) for tick in (1, 2, 3)]
    for report in reports[:2]:
        backlog.add("run1", report)
    assert len(woken) == 1 and backlog.take_last() is reports[1] and backlog.take_last() is None
    backlog.add("run1", reports[2])
    assert len(woken) == 2 and [event.tick for event in tick_events(backlog.take())] == [1, 1, 2, 2, 3, 3]


def test_a_frame_is_the_message_s_json_in_utf8_a_lone_surrogate_escaped():
    """The server sends the serializer's bytes as they are; a string without UTF-8 goes escaped."""
    assert json.loads(frame({"text": "é", "nan": math.nan})) == {"text": "é", "nan": "NaN"}
    message = {"text": "é", "bad": "\ud800"}
    assert frame(message).decode() == encode(message) and json.loads(frame(message)) == message


def test_the_backlog_keeps_no_object_a_tick_for_the_garbage_collector_to_walk():
    """A run at full speed keeps an update's 20 ms of ticks: an object each (a tuple, a list) is what has
    the collector walk the whole heap every few hundred ticks; numbers and names in columns are not."""
    report = TickReport(1, Status.RUNNING, ticked=["n0"], returned=[Status.RUNNING], state_changes={"count": (1, 2)},
                        telemetry=TickTelemetry((10, 1.0), None, (11, 1.0)))
    backlog = TickBacklog(100_000)
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(1000):
        backlog.add("run1", report)
    assert len(gc.get_objects()) - before < 50


async def test_a_recording_run_s_rows_are_summed_up_from_its_ticks_not_decoded_from_the_store(tmp_path):
    """Each timeline row says what its checkpoint changed since its parent: the tick that saved it
    knows, so the server does not decode a checkpoint per row (more than a small tree's tick), and
    says what a row read from the store says."""
    store = open_store(str(tmp_path / "runs.db"))
    decoded: list[int] = []
    get = store.get
    store.get = lambda checkpoint_id, **kw: (decoded.append(checkpoint_id), get(checkpoint_id, **kw))[1]
    runner = Agent(CountUp("count"), state_schema=Count).make_runner(checkpointer=store)
    server = DebugServer(runner, "127.0.0.1:0", token=TOKEN)
    await server.listen()
    try:
        async with connect(server.url, max_size=None) as ws:
            await ws.send(encode({"type": "hello", "protocol": PROTOCOL_VERSION, "token": TOKEN}))
            rows = json.loads(await ws.recv())["checkpoints"]

            async def read() -> None:  # (as a studio does: a client that reads nothing is dropped at its keepalive)
                rows.extend([row async for text in ws for row in json.loads(text).get("checkpoints", ())])

            reading = asyncio.create_task(read())
            assert await asyncio.wait_for(server.run(), 60) == Status.SUCCESS
            await server.close()
            await reading
    finally:
        await server.close()
    infos = store.list(runner.run_id)
    assert [row["id"] for row in rows] == [info.id for info in infos] and len(infos) == TICKS + 1
    assert len(decoded) < len(rows) / 10  # the newest checkpoint, for its marks, once an update at most
    from_the_store = RunPast(runner)
    assert [row["summary"] for row in rows] == [from_the_store.summary(info) for info in infos]
    store.close()
