"""A loopback OpenAI-style HTTP server for the model-client tests, scripted per test.

One request per connection (`Connection: close`); every request is kept with its path,
headers and JSON body, so tests assert exactly what went over the wire. Replies: a JSON
answer with any status and headers (`Retry-After`), a stream (whole, cut short with
`done=False`, or failing with an error event), one that never ends, one that comes late.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: dict


Reply = Callable[[Request, asyncio.StreamWriter], Awaitable[None]]


class FakeServer:
    """A minimal HTTP/1.1 server: one request per connection, answered by `responder`."""

    def __init__(self):
        self.requests: list[Request] = []
        self.responder: Callable[[Request], Reply] = lambda request: json_reply({})
        self._tasks: set[asyncio.Task] = set()

    def script(self, *replies: Reply) -> None:
        queue = list(replies)
        self.responder = lambda request: queue.pop(0)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/v1"

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        self._server.close()
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._tasks.add(asyncio.current_task())
        try:
            _, path, _ = (await reader.readline()).decode().split(" ", 2)
            headers = {}
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, value = line.decode().split(":", 1)
                headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", 0)))
            request = Request(path, headers, json.loads(body))
            self.requests.append(request)
            await self.responder(request)(request, writer)
        except (asyncio.CancelledError, ConnectionError):
            pass
        finally:
            writer.close()

    @property
    def models(self) -> list[str]:
        return [request.body["model"] for request in self.requests]


async def _head(writer, status: int, content_type: str, length: int | None = None,
                headers: dict[str, str] | None = None) -> None:
    lines = [f"HTTP/1.1 {status} X", f"Content-Type: {content_type}", "Connection: close"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    lines.extend(f"{name}: {value}" for name, value in (headers or {}).items())
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    await writer.drain()


def raw_reply(text: str, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    async def reply(request, writer):
        data = text.encode()
        await _head(writer, status, "application/json", len(data), headers)
        writer.write(data)
        await writer.drain()

    return reply


def json_reply(obj: dict, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    return raw_reply(json.dumps(obj), status, headers)


def sse_reply(chunks: list[dict], *, done: bool = True) -> Reply:
    """Each chunk as an SSE `data:` event, then `[DONE]` unless `done=False` (a stream cut short)."""
    async def reply(request, writer):
        await _head(writer, 200, "text/event-stream")
        for chunk in chunks:
            writer.write(f"data: {json.dumps(chunk)}\n\n".encode())
            await writer.drain()
            await asyncio.sleep(0.001)
        if done:
            writer.write(b"data: [DONE]\n\n")
            await writer.drain()

    return reply


def sse_error_reply(chunks: list[dict], error: dict) -> Reply:
    """`chunks`, then an error event in the stream (a server failing mid-answer), then `[DONE]`."""
    async def reply(request, writer):
        await sse_reply([*chunks, {"error": error}])(request, writer)

    return reply


def keepalive_reply(interval: float = 0.02) -> Reply:
    """An SSE stream of keep-alive comments that never ends (each byte on time, no answer ever)."""
    async def reply(request, writer):
        await _head(writer, 200, "text/event-stream")
        while True:
            writer.write(b": keep-alive\n\n")
            await writer.drain()
            await asyncio.sleep(interval)

    return reply


def slow_reply(seconds: float) -> Reply:
    async def reply(request, writer):
        await asyncio.sleep(seconds)
        await json_reply(completion("too late"))(request, writer)

    return reply


def completion(content=None, tool_calls=None, usage=(10, 5), model="served-model") -> dict:
    message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    body = {
        "id": "x",
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}
        ],
    }
    if usage:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return body


def delta_chunk(delta: dict, finish_reason=None) -> dict:
    return {
        "model": "served-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
