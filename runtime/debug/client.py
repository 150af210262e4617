"""`DebugClient`: the protocol's client side, for any Python front end (the studio's remote session).

Requests are answered in order (`await client.request("step")` returns the `ok` fields or
raises `DebugError`); everything else the server sends (updates, pauses, the end of the
run) arrives through `await client.next_message()`, None once the connection is gone (`ended`
says why). The server sends in order, so `request_marked` also says how many of those messages
came before the answer: what happened before the request was served, as against what it caused.

Every wait on the server is bounded, as a peer may be no debug server or a hung one: the handshake
and the welcome by the heartbeat, each answer by `reply_timeout` (a server that answers pings but
never the request), and a message by its size (`MAX_SERVER_FRAME`: a larger one closes the
connection, said as such, instead of being read into memory whole).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

from pydantic_core import from_json
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake
from websockets.frames import CloseCode

from .protocol import MAX_SERVER_FRAME, PROTOCOL_VERSION, frame, parse_address

REPLY_TIMEOUT = 60.0  # seconds a request waits for its answer (the server answers each at once; replay, fork and
# checkpoint read a store first)


class DebugError(Exception):
    """The server refused a request or the connection; `code` is the protocol's error code."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message


class DebugClient:
    def __init__(self, ws: ClientConnection, welcome: dict[str, Any], *, address: str = "the debug server",
                 reply_timeout: float = REPLY_TIMEOUT, max_frame: int = MAX_SERVER_FRAME):
        self.ws = ws
        self.welcome = welcome
        self.address = address
        self.reply_timeout = reply_timeout
        self.max_frame = max_frame
        self.ended: DebugError | None = None  # why the connection ended, once it has
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future] = {}
        self._given_up: set[int] = set()  # requests whose answer came too late: dropped when it comes
        self._messages: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.received = 0  # messages `next_message` delivers, counted as they arrive
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, address: str, token: str, *, heartbeat: float = 10.0, client: str = "jianmu",
                      hold_end: bool = False, reply_timeout: float = REPLY_TIMEOUT,
                      max_frame: int = MAX_SERVER_FRAME) -> DebugClient:
        """Connect and say hello; raises `DebugError` (refused, or not a debug server: an HTTP server,
        a peer that sends no welcome within `heartbeat` seconds, something else than one, or a message
        over `max_frame` bytes) or `OSError` (nobody listening). `hold_end`: the run, once finished,
        waits for this client to continue or leave (to be replayed, forked or read) instead of returning
        to its caller at once."""
        host, port = parse_address(address)
        host = f"[{host}]" if ":" in host else host
        ping = max(heartbeat / 2, 0.05)
        try:
            ws = await connect(f"ws://{host}:{port}", max_size=max_frame, ping_interval=ping, ping_timeout=ping,
                               open_timeout=heartbeat, close_timeout=ping)
        except ValueError as exc:  # a host no resolver takes (a bad IPv6 address, a label too long)
            raise ValueError(f"debug address {address!r}: {exc}") from None
        except InvalidHandshake as exc:
            raise DebugError("handshake", f"not a debug server (the WebSocket handshake failed: {exc})") from None
        except TimeoutError:
            raise DebugError("timeout", f"no WebSocket handshake within {heartbeat}s: not a debug server") from None
        try:
            await ws.send(frame({"type": "hello", "id": 0, "protocol": PROTOCOL_VERSION, "token": token,
                                 "client": client, "hold_end": hold_end}), text=True)
            reply = _message(await asyncio.wait_for(ws.recv(), heartbeat))
        except TimeoutError:
            await ws.close()
            raise DebugError("timeout", f"no welcome within {heartbeat}s of the hello: not a debug server") from None
        except ConnectionClosed as exc:
            raise _closed(exc, "the debug server closed the connection", max_frame) from None
        except DebugError:
            await ws.close()
            raise
        if reply.get("type") != "welcome":
            await ws.close()
            raise DebugError(str(reply.get("code", "refused")), str(reply.get("message", "refused")))
        return cls(ws, reply, address=address, reply_timeout=reply_timeout, max_frame=max_frame)

    async def request(self, message_type: str, **fields: Any) -> dict[str, Any]:
        return (await self.request_marked(message_type, **fields))[0]

    async def request_marked(self, message_type: str, **fields: Any) -> tuple[dict[str, Any], int]:
        """The answer and the count of unasked messages the server sent before it (`received` then)."""
        request_id = next(self._ids)
        answer = self._waiting[request_id] = asyncio.get_running_loop().create_future()
        try:
            await self.ws.send(frame({"type": message_type, "id": request_id, **fields}), text=True)
        except ConnectionClosed:
            self._waiting.pop(request_id, None)
            raise DebugError("closed", "the debug connection is closed") from None
        try:
            reply, before = await asyncio.wait_for(asyncio.shield(answer), self.reply_timeout)
        except (TimeoutError, asyncio.CancelledError) as exc:  # (cancelled: its answer may still come)
            if self._waiting.pop(request_id, None) is not None:
                self._given_up.add(request_id)
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise DebugError("timeout", f"{self.address}: no answer to {message_type} within "
                                        f"{self.reply_timeout:g}s (the server is connected but does not serve "
                                        "requests)") from None
        if reply["type"] == "error":
            raise DebugError(str(reply.get("code", "error")), str(reply.get("message", "refused")))
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
        closed = DebugError("closed", "the debug connection closed")
        try:
            async for text in self.ws:
                message = _message(text)
                re = message.get("re")
                answer = self._waiting.pop(re, None) if isinstance(re, int) else None
                if isinstance(re, int) and re in self._given_up:
                    self._given_up.discard(re)  # answered after its request gave up: nobody waits
                elif answer is not None:
                    answer.set_result((message, self.received))
                else:
                    self.received += 1
                    self._messages.put_nowait(message)
        except ConnectionClosed as exc:
            closed = _closed(exc, "the debug connection closed", self.max_frame)
        except DebugError as exc:  # a server that breaks the protocol is left
            closed = exc
            await self.ws.close(1002, "protocol error")
        finally:
            self.ended = closed
            for answer in self._waiting.values():
                if not answer.done():
                    answer.set_exception(closed)
            self._waiting.clear()
            self._messages.put_nowait(None)


def _message(text: str | bytes) -> dict[str, Any]:
    """A server message: a JSON object with a string `type`; anything else is a `DebugError`. Read by
    pydantic's parser (an update of a run at full speed in ~0.6x the time of `json.loads`), or by
    `json.loads` what that one refuses: a lone surrogate escaped (`"\\ud800"`), which a state value may hold."""
    try:
        message = from_json(text)
    except ValueError:
        message = None
    try:
        message = json.loads(text) if message is None else message
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DebugError("bad_message", f"the server sent something not JSON ({exc}): not a debug server") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise DebugError("bad_message", f"the server sent a JSON {type(message).__name__}, not a protocol message "
                                        "(an object with a type): not a debug server")
    return message


def _closed(exc: ConnectionClosed, what: str, max_frame: int) -> DebugError:
    """Why a connection closed: a server message over `max_frame` (this side closed it, 1009), or what the
    server said as it closed."""
    if exc.sent is not None and exc.sent.code == CloseCode.MESSAGE_TOO_BIG:
        return DebugError("too_large", f"the server sent a message over {max_frame:,} bytes (the limit): "
                                       "connection closed")
    return DebugError("closed", f"{what}{_why(exc)}")


def _why(closed: ConnectionClosed) -> str:
    """The close code and reason the server gave, if any (1011: it failed); the reason quoted, as a peer
    may put anything there."""
    frame = closed.rcvd
    if frame is None:
        return ""
    return f" (code {frame.code}{f': {frame.reason!r}' if frame.reason else ''})"


__all__ = ["REPLY_TIMEOUT", "DebugClient", "DebugError"]
