"""The debug client bounds every wait on its server (#32): a server that keeps the connection alive
(it answers pings) but never answers a request fails that request in one line naming the server and
the request, and a message over the client's size limit closes the connection, said as such, instead
of being read into memory whole (a hostile server could send a gigabyte)."""

from __future__ import annotations

import asyncio
import json

import pytest
from websockets.asyncio.server import ServerConnection, serve

from runtime.debug import DebugClient, DebugError

BOUND = 30  # seconds any wait below gets before the test fails (the client's own bounds are far shorter)


async def _served(handler):
    server = await serve(handler, "127.0.0.1", 0)
    return server, f"127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def test_a_request_the_server_never_answers_fails_naming_the_server_and_the_request():
    held: list[int] = []

    async def handler(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send(json.dumps({"type": "welcome"}))
        async for text in ws:
            request = json.loads(text)
            if request["type"] == "step":  # held: answered only after the next request, too late
                held.append(request["id"])
                continue
            for late in held:
                await ws.send(json.dumps({"type": "ok", "re": late}))
            await ws.send(json.dumps({"type": "ok", "re": request["id"], "tick": 7}))

    server, address = await _served(handler)
    async with server:
        client = await DebugClient.connect(address, "t", reply_timeout=0.5)
        with pytest.raises(DebugError) as refused:
            await asyncio.wait_for(client.request("step"), BOUND)
        assert refused.value.code == "timeout"
        assert str(refused.value).startswith(f"{address}: no answer to step within 0.5s"), refused.value
        client.reply_timeout = BOUND  # (a loaded machine may take more than 0.5 s to answer the ping)
        assert (await asyncio.wait_for(client.request("ping"), BOUND))["tick"] == 7  # the connection goes on
        assert client.received == 0  # the step's late answer is no message of the run
        await client.close()


async def test_a_message_over_the_limit_ends_the_connection_said_as_too_large():
    async def handler(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send(json.dumps({"type": "welcome"}))
        await ws.recv()  # the request, answered with a message over the limit
        await ws.send(json.dumps({"type": "update", "state": "x" * 5000}))
        await ws.wait_closed()  # (until the client or the server ends it: the server's exit waits for this)

    server, address = await _served(handler)
    async with server:
        client = await DebugClient.connect(address, "t", max_frame=4096)
        with pytest.raises(DebugError, match=r"the server sent a message over 4,096 bytes \(the limit\)"):
            await asyncio.wait_for(client.request("resync"), BOUND)
        assert await asyncio.wait_for(client.next_message(), BOUND) is None
        assert client.ended.code == "too_large"
        await client.close()


async def test_a_welcome_over_the_limit_is_refused_as_too_large():
    async def handler(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send(json.dumps({"type": "welcome", "picture": "x" * 5000}))
        await ws.wait_closed()  # (until the client or the server ends it: the server's exit waits for this)

    server, address = await _served(handler)
    async with server:
        with pytest.raises(DebugError, match="over 4,096 bytes") as refused:
            await asyncio.wait_for(DebugClient.connect(address, "t", max_frame=4096), BOUND)
    assert refused.value.code == "too_large"
