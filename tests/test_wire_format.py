"""Issues 12.7-8 and 30.5: what goes over the wire to a strict chat-completions server (nothing
unconfigured), and how the client waits before a retry (the waits it asks for are recorded
through an injected sleep, the time read from an injected clock: nothing really waits)."""

from __future__ import annotations

import asyncio
import email.utils
import time

import pytest
from mcp.types import Tool as ToolSpec
from openai_server import (
    completion,
    delta_chunk,
    json_reply,
    raw_reply,
    slow_reply,
    sse_error_reply,
    sse_reply,
)
from py_trees.common import Status

from runtime import (
    Agent,
    CalculatorTool,
    ModelClient,
    ReActConfig,
    ReactiveRunner,
    ReActState,
    RuntimeEventBus,
    create_react_node,
    human,
)
from runtime.config import ModelResilienceConfig
from runtime.engine.events import EventType
from runtime.model import ModelConfig, ModelHTTPError, ModelTimeoutError, OpenAICompatibleProvider
from runtime.node import SimpleLLMNode
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
                             config=ReActConfig(temperature=0.1))
    result = await Agent(root).run({"messages": [human("What is 25 * 4 + 10?")]})
    assert result.final_answer == "110"
    first, second = (request.body for request in server.requests)
    assert set(first) == set(second) == {"model", "messages", "tools", "temperature"}  # no stream, nothing unset
    assert [set(message) for message in first["messages"]] == [{"role", "content"}] * 2
    assert first["tools"] == [CalculatorTool().schema()] and first["temperature"] == 0.1
    assistant, tool_message = second["messages"][-2:]
    assert assistant == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "calculator",
                                                          "arguments": '{"expression": "25 * 4 + 10"}'}}]}
    assert tool_message == {"role": "tool", "content": "110", "tool_call_id": "call_1"}


async def test_no_sampling_parameter_is_sent_unless_configured(server, provider, no_config_file):
    server.script(json_reply(completion("110")))
    root = create_react_node(model_client=ModelClient(provider), tools=[CalculatorTool()])
    await Agent(root).run({"messages": [human("What is 25 * 4 + 10?")]})
    assert set(server.requests[0].body) == {"model", "messages", "tools"}  # the model's own defaults apply


async def test_sampling_parameters_from_jianmu_yaml_reach_the_request(server, provider, no_config_file, tmp_path):
    (tmp_path / "jianmu.yaml").write_text("models:\n  react: react-model\nllm:\n  temperature: 0.4\n"
                                          "  top_k: 20\n  max_completion_tokens: 300\n")
    server.script(json_reply(completion("110")))
    await Agent(create_react_node(model_client=ModelClient(provider))).run({"messages": [human("q")]})
    body = server.requests[0].body
    assert {key: body[key] for key in set(body) - {"messages"}} == {
        "model": "react-model", "temperature": 0.4, "top_k": 20, "max_completion_tokens": 300}


async def test_top_k_and_max_completion_tokens_go_in_the_body_where_configured(server, provider):
    server.script(json_reply(completion("a")), json_reply(completion("b")))
    await provider.complete([human("q")], ModelConfig(top_k=5, max_completion_tokens=64))
    await provider.complete([human("q")], ModelConfig())
    configured, plain = (request.body for request in server.requests)
    assert (configured["top_k"], configured["max_completion_tokens"]) == (5, 64) and "max_tokens" not in configured
    assert "top_k" not in plain and "max_completion_tokens" not in plain


@pytest.mark.parametrize("parallel, sent", [(None, None), (False, False), (True, True)])
async def test_parallel_tool_calls_reaches_the_request_when_set(server, provider, parallel, sent):
    server.script(json_reply(completion("110")))
    config = ReActConfig() if parallel is None else ReActConfig(parallel_tool_calls=parallel)
    root = create_react_node(model_client=ModelClient(provider), tools=[CalculatorTool()], config=config)
    await Agent(root).run({"messages": [human("q")]})
    assert server.requests[0].body.get("parallel_tool_calls") is sent


async def test_parallel_tool_calls_is_not_sent_without_tools(server, provider):
    server.script(json_reply(completion("hi")))
    await provider.complete([human("q")], ModelConfig(parallel_tool_calls=False))
    assert "parallel_tool_calls" not in server.requests[0].body  # the API refuses it without tools


async def test_stream_is_sent_only_when_true(server, provider):
    server.script(sse_reply([{"choices": [{"delta": {"content": "hi"}, "finish_reason": "stop"}]}]))
    await provider.complete([human("q")], ModelConfig(stream=True))
    assert server.requests[0].body["stream"] is True


def test_mcp_tool_schemas_lose_their_schema_dialect():
    spec = ToolSpec(name="now", input_schema={"$schema": "https://json-schema.org/draft/2020-12/schema",
                                              "type": "object", "properties": {"tz": {"type": "string"}}})
    tool = MCPTool(MCPToolProvider("server"), spec)
    assert tool.schema()["function"]["parameters"] == {"type": "object", "properties": {"tz": {"type": "string"}}}


@pytest.mark.parametrize("status, headers, wait", [
    (429, {"Retry-After": "3"}, 3.0),
    (503, {"retry-after-ms": "1500"}, 1.5),
    (429, {"retry-after-ms": "250", "Retry-After": "9"}, 0.25),  # the finer one wins
    (429, {"Retry-After": "45"}, 45.0),  # the server's wait as it is, more than backoff_max
    (529, {}, 0.5),  # overloaded: retried like 503, with the backoff when no header says otherwise
    (429, {"Retry-After": "soon"}, 0.5),  # unreadable: the backoff
])
async def test_retry_after_is_honoured(server, provider, status, headers, wait):
    server.script(json_reply({"error": {"message": "slow down"}}, status, headers), json_reply(completion("ok")))
    waits = Waits()
    client = ModelClient(provider, resilience=ModelResilienceConfig(backoff_initial=0.5, backoff_max=10), sleep=waits)
    assert (await client.invoke([human("q")])).message.content == "ok"
    assert len(server.requests) == 2
    assert waits.asked == [wait]


async def test_a_retry_after_beyond_its_bound_is_not_waited_and_says_why(server, provider):
    server.script(json_reply({"error": {"message": "quota"}}, 429, {"Retry-After": "120"}))
    waits = Waits()
    with pytest.raises(ModelHTTPError) as info:
        await ModelClient(provider, sleep=waits).invoke([human("q")])  # retry_after_max: 60 s by default
    assert str(info.value) == ("model endpoint answered HTTP 429: {\"error\": {\"message\": \"quota\"}} (the server "
                               "asked to retry after 120s, more than retry_after_max=60s)")
    assert waits.asked == [] and len(server.requests) == 1


async def test_the_retry_after_bound_is_configurable(server, provider):
    server.script(json_reply({}, 429, {"Retry-After": "120"}), json_reply(completion("ok")))
    waits = Waits()
    client = ModelClient(provider, resilience=ModelResilienceConfig(retry_after_max=300), sleep=waits)
    assert (await client.invoke([human("q")])).message.content == "ok" and waits.asked == [120]


async def test_a_retry_after_beyond_the_bound_moves_on_to_the_fallback_model(server, provider):
    server.responder = lambda request: (json_reply(completion("from backup")) if request.body["model"] == "backup"
                                        else json_reply({}, 429, {"Retry-After": "600"}))
    waits = Waits()
    client = ModelClient(provider, resilience=ModelResilienceConfig(fallback_models=["backup"]), sleep=waits)
    assert (await client.invoke([human("q")])).message.content == "from backup"
    assert server.models == ["m", "backup"] and waits.asked == []


class Clock:
    """An injected clock and sleep: a wait moves the time on, and nothing really waits."""

    def __init__(self):
        self.now = 1000.0
        self.asked: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.asked.append(seconds)
        self.now += seconds


async def test_retry_after_waits_only_within_the_calls_deadline(server, provider):
    server.script(json_reply({}, 429, {"Retry-After": "25"}), json_reply({}, 503, {"Retry-After": "25"}))
    clock = Clock()
    client = ModelClient(provider, resilience=ModelResilienceConfig(deadline=40), sleep=clock.sleep, clock=clock)
    with pytest.raises(ModelHTTPError, match=r"HTTP 503: .* \(a retry after 25s would pass the call's deadline "
                                             r"of 40s\)$"):
        await client.invoke([human("q")])
    assert clock.asked == [25] and len(server.requests) == 2  # the first wait fits, the second would not


async def test_an_attempt_is_cut_at_the_calls_deadline(server, provider):
    server.script(json_reply({}, 503, {"Retry-After": "9"}), slow_reply(60))
    clock = Clock()
    client = ModelClient(provider, resilience=ModelResilienceConfig(deadline=9.05), sleep=clock.sleep, clock=clock)
    async with asyncio.timeout(30):
        with pytest.raises(ModelTimeoutError, match="^model call reached the call's deadline of 9.05s$"):
            await client.invoke([human("q")])  # the second attempt gets the 0.05 s left, not the provider's 5 s
    assert clock.asked == [9] and len(server.requests) == 2




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


HELLO = [delta_chunk({"content": "Hel"}), delta_chunk({"content": "lo, world"}), delta_chunk({}, "stop")]


@pytest.mark.parametrize("broken", [
    sse_reply(HELLO[:1], done=False),  # cut after "Hel": no [DONE], no finish reason
    sse_error_reply(HELLO[:1], {"message": "upstream overloaded", "type": "server_error"}),
])
async def test_a_stream_cut_short_or_reporting_an_error_is_retried(server, provider, broken):
    server.script(broken, sse_reply(HELLO))
    bus, waits = RuntimeEventBus(), Waits()
    streamed, restarts = [], []
    client = ModelClient(provider, sleep=waits)
    response = await client.invoke([human("q")], ModelConfig(stream=True), event_bus=bus,
                                   on_delta=streamed.append, on_restart=lambda: restarts.append(len(streamed)))
    assert response.message.content == "Hello, world" and len(server.requests) == 2
    assert streamed == ["Hel", "Hel", "lo, world"] and restarts == [1]  # the first "Hel" was no answer
    [failed] = [event.payload for event in bus.history if event.type == EventType.MODEL_CALL_FAILED]
    assert failed["will_retry"] and failed["error"].startswith("ModelStreamError: stream from ")
    assert waits.asked == [0.5]  # the backoff of a dropped connection


async def test_a_streamed_answer_after_a_retry_is_in_state_once(server, provider):
    server.script(sse_reply(HELLO[:2], done=False), sse_reply(HELLO))
    node = SimpleLLMNode("ask", model_client=ModelClient(provider, sleep=Waits()), config=ReActConfig(stream=True))
    runner = ReactiveRunner(node, ReActState)
    assert await runner.run(input_data={"messages": [human("q")]}) == Status.SUCCESS
    assert runner.state_manager.get("streaming_output") == "Hello, world"
    assert runner.state_manager.get("final_answer") == "Hello, world"
