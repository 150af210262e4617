"""Issue 13.5: a model call is bounded: a deadline for the whole call, a stream must end,
a size cap, odd shapes are `ModelResponseError`s, streaming into state stays linear.

Hangs are guarded with `asyncio.timeout(LIMIT)`; nothing here asserts how long anything took.
"""

from __future__ import annotations

import asyncio

import pytest
from openai_server import (
    _head,
    completion,
    delta_chunk,
    json_reply,
    keepalive_reply,
    raw_reply,
    sse_reply,
)
from py_trees.common import Status

from runtime import ModelClient, ReActConfig, ReactiveRunner, ReActState, ScriptedProvider, human
from runtime.config import ModelResilienceConfig
from runtime.model import (
    ModelConfig,
    ModelResponseError,
    ModelStreamError,
    ModelTimeoutError,
    OpenAICompatibleProvider,
)
from runtime.node import SimpleLLMNode

LIMIT = 20


@pytest.fixture
async def provider(server):
    p = OpenAICompatibleProvider(server.url, "sk-bounds", timeout=5, default_model="m", max_response_bytes=50_000)
    yield p
    await p.aclose()


def drip_reply(body: bytes, interval: float = 0.05):
    """A JSON answer sent one byte at a time: every read is on time, the whole never is."""
    async def reply(request, writer):
        await _head(writer, 200, "application/json", len(body))
        for byte in body:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(interval)

    return reply


@pytest.mark.parametrize("reply, stream", [
    (keepalive_reply(), True),
    (drip_reply(b'{"choices": [{"message": {"content": "' + b"x" * 200 + b'"}}]}'), False),
])
async def test_the_timeout_is_a_deadline_for_the_whole_call(server, provider, reply, stream):
    server.script(reply)
    async with asyncio.timeout(LIMIT):
        with pytest.raises(ModelTimeoutError, match="timed out after 0.3s"):
            await provider.complete([human("q")], ModelConfig(timeout=0.3, stream=stream))


async def test_a_stream_that_stops_without_done_or_finish_reason_is_an_error(server, provider):
    server.script(sse_reply([delta_chunk({"content": "The answer is "})], done=False))
    with pytest.raises(ModelStreamError, match=r"stopped before its end \(no \[DONE\], no finish reason\) "
                                                 r"after 14 characters"):
        await provider.complete([human("q")], ModelConfig(stream=True))


async def test_a_stream_with_a_finish_reason_but_no_done_is_an_answer(server, provider):
    server.script(sse_reply([delta_chunk({"content": "110"}), delta_chunk({}, "stop")], done=False))
    response = await provider.complete([human("q")], ModelConfig(stream=True))
    assert (response.message.content, response.finish_reason) == ("110", "stop")


@pytest.mark.parametrize("reply, stream", [
    (json_reply(completion("x" * 60_000)), False),
    (sse_reply([delta_chunk({"content": "x" * 1000})] * 60), True),
])
async def test_responses_over_the_size_cap_are_refused_with_a_clear_error(server, provider, reply, stream):
    server.script(reply)
    with pytest.raises(ModelResponseError, match=r"larger than max_response_bytes=50,000 \(raise it with "
                                                 r"OpenAICompatibleProvider\(max_response_bytes=\.\.\.\)\)"):
        await provider.complete([human("q")], ModelConfig(stream=stream))


def endless_line_reply(piece: bytes = b"x" * 10_000, interval: float = 0.01):
    """An SSE stream whose first line never ends: a reader that waits for its end holds all of it."""
    async def reply(request, writer):
        await _head(writer, 200, "text/event-stream")
        writer.write(b'data: {"choices": [{"delta": {"content": "')
        while True:
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(interval)

    return reply


async def test_a_stream_line_that_never_ends_is_cut_off_by_the_size_cap(server, provider):
    server.script(endless_line_reply())
    async with asyncio.timeout(LIMIT):
        with pytest.raises(ModelResponseError, match=r"larger than max_response_bytes=50,000"):
            await provider.complete([human("q")], ModelConfig(stream=True))  # not held until the deadline


@pytest.mark.parametrize("end", ["\r\n", "\n", "\r"])  # the three line ends SSE allows
async def test_stream_lines_split_anywhere_are_read_whole(server, provider, end):
    body = (f'data: {{"choices": [{{"delta": {{"content": "caf\u00e9 été"}}}}]}}{end}{end}'
            f'data: {{"choices": [{{"delta": {{}}, "finish_reason": "stop"}}]}}{end}{end}data: [DONE]').encode()

    async def reply(request, writer):  # a byte at a time: lines and UTF-8 characters cut across reads
        await _head(writer, 200, "text/event-stream")
        for byte in body:
            writer.write(bytes([byte]))
            await writer.drain()

    server.script(reply)
    response = await provider.complete([human("q")], ModelConfig(stream=True))
    assert (response.message.content, response.finish_reason) == ("café été", "stop")


def test_the_size_cap_must_be_positive():
    with pytest.raises(ValueError, match="max_response_bytes must be >= 1"):
        OpenAICompatibleProvider("http://127.0.0.1:1/v1", max_response_bytes=0)


@pytest.mark.parametrize("reply", [
    json_reply({"choices": {"0": {"message": {"content": "hi"}}}}),  # choices as a dict
    raw_reply('{"choices": ' + "[" * 200_000 + "]" * 200_000 + "}"),  # 200k-deep JSON
    raw_reply("\x1f\x8b not really gzip", headers={"Content-Encoding": "gzip"}),
    json_reply({"choices": [{"message": {"content": "x", "tool_calls": {"id": "c"}}}]}),
    json_reply({"choices": [{"message": {"tool_calls": [{"function": {"name": ["calc"]}}]}}]}),
    json_reply({"choices": [{"message": {"tool_calls": [{"function": "calc"}]}}]}),
    json_reply({"model": 5, "choices": [{"message": {"content": "hi"}}]}),  # a model name that is not text
    json_reply({"choices": [{"message": {"content": "hi"}, "finish_reason": {"why": "stop"}}]}),
])
async def test_odd_shapes_are_model_response_errors(server, provider, reply):
    server.script(reply)
    with pytest.raises(ModelResponseError):
        await provider.complete([human("q")], ModelConfig())


async def test_odd_stream_chunks_are_model_response_errors(server, provider):
    server.script(sse_reply([{"choices": {"delta": "x"}}]))
    with pytest.raises(ModelResponseError, match="'choices' must be a list, got dict"):
        await provider.complete([human("q")], ModelConfig(stream=True))


async def test_an_odd_shape_is_not_retried(server, provider):
    server.script(json_reply({"choices": "none"}), json_reply(completion("ok")))
    with pytest.raises(ModelResponseError):
        await ModelClient(provider, resilience=ModelResilienceConfig(backoff_initial=0)).invoke([human("q")])
    assert len(server.requests) == 1


async def test_streaming_into_state_ends_with_the_whole_text_and_does_not_rewrite_it_per_delta():
    words = [f"w{i} " for i in range(5000)]
    node = SimpleLLMNode("ask", model_client=ModelClient(ScriptedProvider(["".join(words)])),
                         config=ReActConfig(stream=True))
    runner = ReactiveRunner(node, ReActState)
    writes = []
    runner.state_manager.subscribe(lambda change: writes.append(1) if "streaming_output" in change.changes else None)
    async with asyncio.timeout(LIMIT):
        assert await runner.run(input_data={"messages": [human("count")]}) == Status.SUCCESS
    assert runner.state_manager.get("streaming_output") == "".join(words)
    assert len(writes) < len(words) // 10  # the text is written as it doubles (and a few times a second)


async def test_resolve_passes_the_size_cap_to_the_endpoint(server):
    server.script(json_reply(completion("x" * 2000)))
    client = ModelClient.resolve(base_url=server.url, model="m", max_response_bytes=1000)
    with pytest.raises(ModelResponseError, match="max_response_bytes=1,000"):
        await client.invoke([human("q")])
    await client.aclose()
