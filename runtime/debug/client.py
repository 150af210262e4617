"""`DebugClient`: the protocol's client side, for any Python front end (the studio's remote session).

Requests are answered in order (`await client.request("step")` returns the `ok` fields or
raises `DebugError`); everything else the server sends (updates, pauses, the end of the
run) arrives through `await client.next_message()`, None once the connection is gone. The
server sends in order, so `request_marked` also says how many of those messages came before
the answer: what happened before the request was served, as against what it caused.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from .protocol import PROTOCOL_VERSION, encode, parse_address


class DebugError(Exception):
    """The server refused a request or the connection; `code` is the protocol's error code."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message


class DebugClient:
    def __init__(self, ws: ClientConnection, welcome: dict[str, Any]):
        self.ws = ws
        self.welcome = welcome
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future] = {}
        self._messages: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.received = 0  # messages `next_message` delivers, counted as they arrive
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, address: str, token: str, *, heartbeat: float = 10.0,
                      client: str = "jianmu", hold_end: bool = False) -> DebugClient:
        """Connect and say hello; raises `DebugError` (refused) or `OSError` (nobody listening).
        `hold_end`: the run, once finished, waits for this client to continue or leave (to be replayed,
        forked or read) instead of returning to its caller at once."""
        host, port = parse_address(address)
        host = f"[{host}]" if ":" in host else host
        ping = max(heartbeat / 2, 0.05)
        ws = await connect(f"ws://{host}:{port}", max_size=None, ping_interval=ping, ping_timeout=ping,
                           open_timeout=heartbeat)
        await ws.send(encode({"type": "hello", "id": 0, "protocol": PROTOCOL_VERSION, "token": token,
                              "client": client,
                              "hold_end": hold_end}))
        try:
            reply = json.loads(await ws.recv())
        except ConnectionClosed:
            raise DebugError("closed", "the debug server closed the connection") from None
        if reply.get("type") != "welcome":
            await ws.close()
            raise DebugError(reply.get("code", "refused"), reply.get("message", "refused"))
        return cls(ws, reply)

    async def request(self, message_type: str, **fields: Any) -> dict[str, Any]:
        return (await self.request_marked(message_type, **fields))[0]

    async def request_marked(self, message_type: str, **fields: Any) -> tuple[dict[str, Any], int]:
        """The answer and the count of unasked messages the server sent before it (`received` then)."""
        request_id = next(self._ids)
        answer = self._waiting[request_id] = asyncio.get_running_loop().create_future()
        try:
            await self.ws.send(encode({"type": message_type, "id": request_id, **fields}))
        except ConnectionClosed:
            self._waiting.pop(request_id, None)
            raise DebugError("closed", "the debug connection is closed") from None
        reply, before = await answer
        if reply["type"] == "error":
            raise DebugError(reply["code"], reply["message"])
        return reply, before

    async def next_message(self) -> dict[str, Any] | None:
        """The next unsolicited server message; None once the connection has closed."""
        message = await self._messages.get()
        if message is None:
            self._messages.put_nowait(None)  # every later call sees the end too
        return message

    async def close(self) -> None:
        await self.ws.close()
        await asyncio.gather(self._reader, return_exceptions=True)

    async def _read(self) -> None:
        try:
            async for text in self.ws:
                message = json.loads(text)
                answer = self._waiting.pop(message.get("re"), None) if "re" in message else None
                if answer is not None:
                    answer.set_result((message, self.received))
                else:
                    self.received += 1
                    self._messages.put_nowait(message)
        except ConnectionClosed:
            pass
        finally:
            for answer in self._waiting.values():
                if not answer.done():
                    answer.set_exception(DebugError("closed", "the debug connection closed"))
            self._waiting.clear()
            self._messages.put_nowait(None)


__all__ = ["DebugClient", "DebugError"]
