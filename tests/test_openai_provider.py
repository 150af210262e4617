"""OpenAICompatibleProvider against a real HTTP server on 127.0.0.1, scripted per test."""

import asyncio
import dataclasses
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pytest

from runtime.config import ModelResilienceConfig
from runtime.engine.events import EventType, RuntimeEventBus
from runtime.messages import human, system
from runtime.model import (
    ModelClient,
    ModelConfig,
    ModelConfigurationError,
    ModelConnectionError,
    ModelHTTPError,
    ModelResponseError,
    ModelTimeoutError,
    OpenAICompatibleProvider,
    Usage,
)

API_KEY = "sk-test-SECRET-0123456789"
TOOLS = [{"type": "function", "function": {"name": "calc", "parameters": {"type": "object"}}}]
CHOICE = {"type": "function", "function": {"name": "calc"}}


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


async def _head(writer, status: int, content_type: str, length: int | None = None) -> None:
    lines = [f"HTTP/1.1 {status} X", f"Content-Type: {content_type}", "Connection: close"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    await writer.drain()


def raw_reply(text: str, status: int = 200) -> Reply:
    async def reply(request, writer):
        data = text.encode()
        await _head(writer, status, "application/json", len(data))
        writer.write(data)
        await writer.drain()

    return reply


def json_reply(obj: dict, status: int = 200) -> Reply:
    return raw_reply(json.dumps(obj), status)


def sse_reply(chunks: list[dict]) -> Reply:
    async def reply(request, writer):
        await _head(writer, 200, "text/event-stream")
        for chunk in chunks:
            writer.write(f"data: {json.dumps(chunk)}\n\n".encode())
            await writer.drain()
            await asyncio.sleep(0.001)
        writer.write(b"data: [DONE]\n\n")
        await writer.drain()

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


@pytest.fixture
async def server():
    fake = FakeServer()
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
async def provider(server):
    p = OpenAICompatibleProvider(server.url, API_KEY, timeout=5, default_model="test-model")
    yield p
    await p.aclose()


def fast(**kwargs) -> ModelResilienceConfig:
    return ModelResilienceConfig(backoff_initial=0.01, backoff_max=0.01, **kwargs)


async def test_plain_json_completion_and_the_request_body(server, provider):
    server.script(json_reply(completion("The answer is 4.")))
    config = ModelConfig(
        temperature=0.3, max_tokens=50, tools=TOOLS, tool_choice=CHOICE, extra_params={"seed": 7}
    )

    response = await provider.complete([system("be brief"), human("2+2?")], config)

    assert response.message.role == "assistant"
    assert response.message.content == "The answer is 4."
    assert response.usage == Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15)
    assert response.model == "served-model"
    assert response.finish_reason == "stop"
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.body == {
        "model": "test-model",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "2+2?"}],
        "stream": False,
        "tools": TOOLS,
        "tool_choice": CHOICE,
        "temperature": 0.3,
        "max_tokens": 50,
        "seed": 7,
    }


async def test_unset_options_are_not_sent(server, provider):
    server.script(json_reply(completion("ok")))
    await provider.complete([human("q")], ModelConfig(model="explicit"))
    assert server.requests[0].body == {
        "model": "explicit",
        "messages": [{"role": "user", "content": "q"}],
        "stream": False,
    }


async def test_tool_calls_in_a_json_reply_keep_parse_errors(server, provider):
    server.script(
        json_reply(
            completion(
                None,
                [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "calc", "arguments": '{"expr": "2+2"}'},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "calc", "arguments": '{"expr": 2+'},
                    },
                ],
            )
        )
    )

    response = await provider.complete([human("q")], ModelConfig(tools=TOOLS))

    good, bad = response.tool_calls
    assert (good.id, good.name, good.arguments, good.parse_error) == ("c1", "calc", {"expr": "2+2"}, None)
    assert (bad.id, bad.name, bad.arguments) == ("c2", "calc", {})
    assert "not valid JSON" in bad.parse_error
    assert response.finish_reason == "tool_calls"


async def test_missing_usage_is_estimated(server, provider):
    server.script(json_reply(completion("abcdefgh", usage=None)))
    messages = [human("0123456789ab")]
    response = await provider.complete(messages, ModelConfig())
    assert response.usage == Usage.estimate(messages, response.message)
    assert response.usage == Usage(prompt_tokens=3, completion_tokens=2, total_tokens=5)


async def test_streamed_content_is_merged_and_forwarded(server, provider):
    server.script(
        sse_reply(
            [
                delta_chunk({"role": "assistant", "content": ""}),
                delta_chunk({"content": "Hel"}),
                delta_chunk({"content": "lo, "}),
                delta_chunk({"content": "world"}),
                delta_chunk({}, finish_reason="stop"),
                {
                    "model": "served-model",
                    "choices": [],
                    "usage": {"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7},
                },
            ]
        )
    )
    bus = RuntimeEventBus()
    client = ModelClient(provider)

    response = await client.invoke([human("hi")], ModelConfig(stream=True), event_bus=bus, node="llm")

    assert response.message.content == "Hello, world"
    assert response.finish_reason == "stop"
    assert response.usage == Usage(prompt_tokens=4, completion_tokens=3, total_tokens=7)
    deltas = [e.payload["delta"] for e in bus.history if e.type == EventType.TEXT_DELTA]
    assert deltas == ["Hel", "lo, ", "world"]
    body = server.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


async def test_streamed_tool_call_fragments_merge_by_index(server, provider):
    def tool_delta(index, arguments, call_id=None, name=None):
        fragment = {"index": index, "function": {"arguments": arguments}}
        if call_id:
            fragment.update(id=call_id, type="function")
            fragment["function"]["name"] = name
        return delta_chunk({"tool_calls": [fragment]})

    server.script(
        sse_reply(
            [
                delta_chunk({"role": "assistant", "content": None}),
                tool_delta(0, "", "call_a", "calc"),
                tool_delta(0, '{"ex'),
                tool_delta(1, '{"ci', "call_b", "weather"),
                tool_delta(0, 'pr": "6'),
                tool_delta(1, 'ty": "Pa'),
                tool_delta(0, '*7"}'),
                tool_delta(1, 'ris"}'),
                delta_chunk({}, finish_reason="tool_calls"),
            ]
        )
    )
    deltas: list[str] = []

    response = await provider.complete([human("q")], ModelConfig(stream=True, tools=TOOLS), deltas.append)

    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_a", "calc", {"expr": "6*7"}),
        ("call_b", "weather", {"city": "Paris"}),
    ]
    assert response.message.content is None
    assert response.finish_reason == "tool_calls"
    assert deltas == []
    assert response.usage == Usage.estimate([human("q")], response.message)  # the server sent none


async def test_429_is_retried(server, provider):
    server.script(
        json_reply({"error": {"message": "rate limited"}}, status=429), json_reply(completion("ok"))
    )
    bus = RuntimeEventBus()
    client = ModelClient(provider, resilience=fast(max_retries=2))

    response = await client.invoke([human("q")], event_bus=bus)

    assert response.message.content == "ok"
    assert len(server.requests) == 2
    failed = [e.payload for e in bus.history if e.type == EventType.MODEL_CALL_FAILED]
    assert len(failed) == 1 and failed[0]["will_retry"] is True and "429" in failed[0]["error"]
    assert "rate limited" in failed[0]["error"]


async def test_repeated_500_falls_back_to_the_next_model(server, provider):
    server.responder = lambda request: (
        json_reply(completion("from backup", model="backup"))
        if request.body["model"] == "backup"
        else raw_reply("internal error", status=500)
    )
    client = ModelClient(
        provider, model="primary", resilience=fast(max_retries=1, fallback_models=["backup"])
    )

    response = await client.invoke([human("q")], ModelConfig(tools=TOOLS, tool_choice=CHOICE))

    assert response.message.content == "from backup"
    assert server.models == ["primary", "primary", "backup"]
    assert server.requests[-1].body["model"] == "backup"
    assert all(r.body["tool_choice"] == CHOICE and r.body["tools"] == TOOLS for r in server.requests)


async def test_timeouts_are_retried_then_raised_quickly(server):
    server.responder = lambda request: slow_reply(5)
    provider = OpenAICompatibleProvider(server.url, API_KEY, timeout=0.2, default_model="m")
    client = ModelClient(provider, resilience=fast(max_retries=1))
    began = time.monotonic()

    with pytest.raises(ModelTimeoutError, match="timed out after 0.2s"):
        await client.invoke([human("q")])

    assert time.monotonic() - began < 2
    assert len(server.requests) == 2
    await client.aclose()


async def test_per_call_timeout_wins_over_the_provider_timeout(server, provider):
    server.script(slow_reply(5))
    with pytest.raises(ModelTimeoutError, match="after 0.1s"):
        await provider.complete([human("q")], ModelConfig(timeout=0.1))


async def test_api_key_is_sent_but_never_reported(server, provider):
    async def echo_key(request, writer):
        await json_reply({"error": f"invalid key: {request.headers['authorization']}"}, status=401)(
            request, writer
        )

    server.responder = lambda request: echo_key
    bus = RuntimeEventBus()
    client = ModelClient(provider, resilience=fast())

    with pytest.raises(ModelHTTPError) as info:
        await client.invoke([human("q")], event_bus=bus)

    assert server.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    assert info.value.status == 401
    assert "invalid key" in str(info.value)
    assert API_KEY not in str(info.value) and API_KEY not in repr(info.value)
    assert API_KEY not in repr(provider)
    assert API_KEY not in json.dumps([dataclasses.asdict(e) for e in bus.history])
    assert len(server.requests) == 1  # 401 is not retried


@pytest.mark.parametrize(
    "reply",
    [
        raw_reply("<html>gateway</html>"),
        json_reply({"choices": []}),
        json_reply({"choices": [{"index": 0}]}),
        json_reply({"choices": [{"message": {"content": ["not", "text"]}}]}),
        json_reply(completion(None, [{"id": "c", "function": {"arguments": "{}"}}])),
    ],
)
async def test_garbage_is_a_response_error(server, provider, reply):
    server.script(reply)
    with pytest.raises(ModelResponseError):
        await provider.complete([human("q")], ModelConfig())


async def test_stream_without_choices_is_a_response_error(server, provider):
    server.script(sse_reply([{"unexpected": True}]))
    with pytest.raises(ModelResponseError, match="without any choice"):
        await provider.complete([human("q")], ModelConfig(stream=True))


async def test_unreachable_endpoint_is_a_connection_error(server):
    provider = OpenAICompatibleProvider(server.url, API_KEY, default_model="m")
    await server.stop()
    with pytest.raises(ModelConnectionError) as info:
        await provider.complete([human("q")], ModelConfig())
    assert API_KEY not in str(info.value)
    await provider.aclose()


async def test_missing_model_name_says_what_to_set(server):
    provider = OpenAICompatibleProvider(server.url)
    with pytest.raises(ModelConfigurationError, match="JIANMU_MODEL"):
        await provider.complete([human("q")], ModelConfig())
    assert server.requests == []
    await provider.aclose()
