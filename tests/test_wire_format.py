"""Issue 12.7-8: what goes over the wire to a strict chat-completions server, and how the client
waits before a retry (the waits it asks for are recorded through an injected sleep)."""

from __future__ import annotations

import email.utils
import logging
import time

import pytest
from mcp.types import Tool as ToolSpec
from openai_server import completion, json_reply, raw_reply, sse_reply

from runtime import Agent, CalculatorTool, ModelClient, ReActConfig, create_react_node, human
from runtime.config import ModelResilienceConfig
from runtime.model import ModelConfig, ModelHTTPError, OpenAICompatibleProvider
from runtime.tools import MCPTool, MCPToolProvider

CALL = {"id": "call_1", "type": "function",
        "function": {"name": "calculator", "arguments": '{"expression": "25 * 4 + 10"}'}}


@pytest.fixture
async def provider(server):
    p = OpenAICompatibleProvider(server.url, "sk-wire", timeout=5, default_model="m")
    yield p
    await p.aclose()


class Waits:
    """An injected `sleep`: records the waits the client asks for and returns at once."""

    def __init__(self):
        self.asked: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)


async def test_a_react_round_trip_sends_only_what_the_api_defines(server, provider):
    server.script(json_reply(completion(None, [CALL])), json_reply(completion("110")))
    root = create_react_node(model_client=ModelClient(provider), tools=[CalculatorTool()],
                             config=ReActConfig(top_k=40, temperature=0.1))
    result = await Agent(root).run({"messages": [human("What is 25 * 4 + 10?")]})
    assert result.final_answer == "110"
    first, second = (request.body for request in server.requests)
    assert set(first) == set(second) == {"model", "messages", "tools", "temperature"}  # no stream, no top_k
    assert [set(message) for message in first["messages"]] == [{"role", "content"}] * 2
    assert first["tools"] == [CalculatorTool().schema()] and first["temperature"] == 0.1
    assistant, tool_message = second["messages"][-2:]
    assert assistant == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "calculator",
                                                          "arguments": '{"expression": "25 * 4 + 10"}'}}]}
    assert tool_message == {"role": "tool", "content": "110", "tool_call_id": "call_1"}


async def test_top_k_goes_only_through_extra_params(server, provider, caplog):
    server.script(json_reply(completion("a")), json_reply(completion("b")))
    with caplog.at_level(logging.WARNING, logger="runtime.model.openai_compatible"):
        await provider.complete([human("q")], ModelConfig(top_k=5))
        await provider.complete([human("q")], ModelConfig(extra_params={"top_k": 5}))
    plain, extra = (request.body for request in server.requests)
    assert "top_k" not in plain and extra["top_k"] == 5
    assert [r.getMessage() for r in caplog.records] == [
        f"{provider.url}: top_k=5 is not sent (chat completions has no top_k); a server that takes it gets it "
        "through extra_params={'top_k': 5}"]


async def test_stream_is_sent_only_when_true(server, provider):
    server.script(sse_reply([{"choices": [{"delta": {"content": "hi"}, "finish_reason": "stop"}]}]))
    await provider.complete([human("q")], ModelConfig(stream=True))
    assert server.requests[0].body["stream"] is True


def test_mcp_tool_schemas_lose_their_schema_dialect():
    spec = ToolSpec(name="now", input_schema={"$schema": "https://json-schema.org/draft/2020-12/schema",
                                              "type": "object", "properties": {"tz": {"type": "string"}}})
    tool = MCPTool(MCPToolProvider("server"), spec)
    assert tool.schema()["function"]["parameters"] == {"type": "object", "properties": {"tz": {"type": "string"}}}


def in_seconds(seconds: float) -> str:
    return email.utils.formatdate(time.time() + seconds, usegmt=True)


@pytest.mark.parametrize("status, headers, wait", [
    (429, {"Retry-After": "3"}, 3.0),
    (503, {"retry-after-ms": "1500"}, 1.5),
    (429, {"retry-after-ms": "250", "Retry-After": "9"}, 0.25),  # the finer one wins
    (429, {"Retry-After": "120"}, 10.0),  # capped by backoff_max
    (429, {"Retry-After": in_seconds(3600)}, 10.0),  # an HTTP date (no Date: this machine's clock), capped too
    (529, {}, 0.5),  # overloaded: retried like 503, with the backoff when no header says otherwise
    (429, {"Retry-After": "soon"}, 0.5),  # unreadable: the backoff
])
async def test_retry_after_is_honoured_and_capped(server, provider, status, headers, wait):
    server.script(json_reply({"error": {"message": "slow down"}}, status, headers), json_reply(completion("ok")))
    waits = Waits()
    client = ModelClient(provider, resilience=ModelResilienceConfig(backoff_initial=0.5, backoff_max=10), sleep=waits)
    assert (await client.invoke([human("q")])).message.content == "ok"
    assert len(server.requests) == 2
    assert waits.asked == [wait]


SENT = 1_700_000_000  # when the server answered, on its own clock: a whole second, long past here


@pytest.mark.parametrize("retry_at, wait", [(SENT + 5, 5.0), (SENT - 30, 0.0)])
async def test_an_http_date_counts_from_the_answers_own_date(server, provider, retry_at, wait):
    """Both dates are the server's: the wait is exact, whatever this machine's clock says
    (counted from it, both dates would be long past and the wait 0)."""
    headers = {"Date": email.utils.formatdate(SENT, usegmt=True),
               "Retry-After": email.utils.formatdate(retry_at, usegmt=True)}
    server.script(json_reply({}, 503, headers), json_reply(completion("ok")))
    waits = Waits()
    await ModelClient(provider, resilience=ModelResilienceConfig(backoff_max=60), sleep=waits).invoke([human("q")])
    assert waits.asked == [wait]


@pytest.fixture
def far_from_gmt(monkeypatch):
    """This machine's local time 8 hours ahead of GMT (the zone the HTTP dates are in)."""
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("retry_after", [
    time.asctime(time.gmtime(SENT + 5)),  # asctime form: no zone written, GMT all the same (RFC 9110)
    email.utils.formatdate(SENT + 5).replace("-0000", "GMT").rsplit(" ", 1)[0],  # no zone at all
])
async def test_an_http_date_without_a_zone_is_gmt(server, provider, far_from_gmt, retry_after):
    headers = {"Date": email.utils.formatdate(SENT, usegmt=True), "Retry-After": retry_after}
    server.script(json_reply({}, 503, headers), json_reply(completion("ok")))
    waits = Waits()
    await ModelClient(provider, resilience=ModelResilienceConfig(backoff_max=60), sleep=waits).invoke([human("q")])
    assert waits.asked == [5.0]  # read as local time it would be 8 hours off: 0, or the cap


async def test_every_retry_of_a_logical_call_follows_the_same_rule(server, provider):
    server.script(raw_reply("overloaded", 529), json_reply({}, 429, {"Retry-After": "2"}),
                  raw_reply("down", 502), json_reply(completion("ok")))
    waits = Waits()
    client = ModelClient(provider, resilience=ModelResilienceConfig(max_retries=3, backoff_initial=1,
                                                                    backoff_multiplier=3, backoff_max=5), sleep=waits)
    assert (await client.invoke([human("q")])).message.content == "ok"
    assert waits.asked == [1, 2, 5]  # backoff 1; the server's 2; backoff 9 capped at 5


async def test_a_status_not_retried_raises_at_once_without_waiting(server, provider):
    server.script(json_reply({"error": "bad request"}, 400, {"Retry-After": "1"}))
    waits = Waits()
    with pytest.raises(ModelHTTPError) as info:
        await ModelClient(provider, sleep=waits).invoke([human("q")])
    assert info.value.status == 400 and info.value.retry_after == 1 and waits.asked == []
