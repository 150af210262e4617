"""OpenAICompatibleProvider against a real HTTP server on 127.0.0.1, scripted per test."""

import asyncio
import dataclasses
import json

import pytest
from openai_server import (
    completion,
    delta_chunk,
    json_reply,
    raw_reply,
    slow_reply,
    sse_reply,
)

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
    }  # no "stream": False either: only what the API defines, and only when set


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
    server.responder = lambda request: slow_reply(60)
    provider = OpenAICompatibleProvider(server.url, API_KEY, timeout=0.2, default_model="m")
    client = ModelClient(provider, resilience=fast(max_retries=1))

    async with asyncio.timeout(30):  # each attempt would wait a minute if the timeout did not cut it
        with pytest.raises(ModelTimeoutError, match="timed out after 0.2s"):
            await client.invoke([human("q")])

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
