"""An attached client while the run continues at full speed (#34.4): the server sends what changed in
coalesced updates, never a message a tick; the run does not wait for a client that reads slowly; and
every event the run published reaches the client or is counted in `dropped_events`."""

from __future__ import annotations

import asyncio
import json
import math

import pytest
from py_trees.common import Status
from pydantic import BaseModel
from pydantic_core import to_jsonable_python
from websockets.asyncio.client import connect

from runtime import Agent
from runtime.debug import PROTOCOL_VERSION, DebugServer
from runtime.debug.protocol import encode
from runtime.engine.behaviour import Behaviour
from runtime.engine.events import RuntimeEvent

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
    events = [event for update in updates for event in update.get("events", ())]
    dropped = sum(update.get("dropped_events", 0) for update in updates)
    seqs = [event["seq"] for event in events]
    assert seqs == sorted(set(seqs)) and seqs[-1] == published  # each once, in order, the newest kept
    assert len(events) + dropped == published - before  # every event delivered, or counted as dropped
    assert [event["payload"]["count"] for event in events if event["type"] == "log"][-1] == TICKS


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
