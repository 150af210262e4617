"""Every tool call is answered, whatever its tool returns or its schema says (#32, cause 4).

A request that carries a call without its `tool` message is one a real endpoint rejects, so a
tool that breaks anything on the way (its schema, its result) gives an error observation naming
it, and a round of tools that fails as a whole ends the loop instead of asking the model again.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from mcp.types import Tool as ToolSpec
from openai_server import completion, json_reply
from py_trees.common import Status

from runtime import ModelClient, ReactiveRunner, ReActState, ScriptedProvider, create_react_node, human, tool
from runtime.model import OpenAICompatibleProvider
from runtime.state import InteractionKeys
from runtime.tools import MCPTool, ToolProvider

LIMIT = 60


class _Server:
    """Stands for an MCP server that publishes a schema and answers every call."""

    name = "hostile"
    prefix = ""

    async def call_tool(self, name: str, arguments: Any) -> str:
        return "ran"


def published(schema: Any) -> MCPTool:
    return MCPTool(_Server(), ToolSpec(name="published", inputSchema=schema))


def returning(value: Any):
    @tool(name="returning")
    def returns(x: str = "") -> Any:
        """Returns what it was given."""
        return value
    return returns


def raising(error: BaseException):
    @tool(name="raising")
    async def raises(x: str = "") -> str:
        """Raises what it was given."""
        raise error
    return raises


def _holding_itself() -> dict:
    loop: dict[str, Any] = {"items": []}
    loop["items"].append(loop)
    return loop


class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text")


HOSTILE = {
    "$ref loop": lambda: published({"type": "object", "$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}),
    "dangling $ref": lambda: published({"type": "object", "properties": {"x": {"$ref": "#/$defs/nowhere"}}}),
    "unknown type": lambda: published({"type": "thing"}),
    "pattern that is no regex": lambda: published({"type": "object", "properties": {"x": {"pattern": "("}}}),
    "unhashable $schema": lambda: published({"type": "object", "$schema": ["a list"]}),
    "bytes that are not UTF-8": lambda: returning(b"\xff\xfe"),
    "a structure holding itself": lambda: returning(_holding_itself()),
    "an object whose str() raises": lambda: returning(_Unprintable()),
    "a CancelledError of its own": lambda: raising(asyncio.CancelledError()),  # the run was not stopped
}


def call_of(name: str) -> dict:
    return {"tool_calls": [{"name": name, "arguments": {"x": "1"}}]}


@pytest.mark.parametrize("make", HOSTILE.values(), ids=HOSTILE.keys())
async def test_a_call_whatever_its_tool_does_is_answered_with_an_error_naming_the_tool(make):
    hostile = make()
    provider = ScriptedProvider([call_of(hostile.name), "I could not use it."])
    root = create_react_node(model_client=ModelClient(provider), tools=[hostile])
    runner = ReactiveRunner(root, ReActState)
    async with asyncio.timeout(LIMIT):  # a guard against a hang, never an expectation
        assert await runner.run(max_ticks=40, input_data={"messages": [human("go")]}) == Status.SUCCESS
    second = provider.requests[1].messages
    asked, = [m for m in second if m.tool_calls]
    answers = [m for m in second if m.role == "tool"]
    assert [m.tool_call_id for m in answers] == [c.id for c in asked.tool_calls]
    assert answers[0].content.startswith(f"Error: tool '{hostile.name}'") and "\n" not in answers[0].content
    failed = [e.payload for e in runner.event_bus.history if e.type == "tool.call.failed"]
    assert [payload["tool"] for payload in failed] == [hostile.name]


@pytest.mark.parametrize("arguments", ["[" * 100_000, '{"x": ' * 100_000, '{"x": ' + "9" * 5000 + "}",
                                       '{"x": NaN}', '{"x": -Infinity}'],
                         ids=["arrays 100,000 deep", "objects 100,000 deep", "5,000 digits", "NaN", "-Infinity"])
async def test_arguments_a_model_sends_that_cannot_be_read_are_answered_with_an_error(server, arguments):
    """What an endpoint sends as a call's arguments: nested 100,000 deep, a 5,000-digit number, NaN
    (which JSON has not: sent back with the call, a real endpoint refuses the request)."""
    call = {"id": "c1", "type": "function", "function": {"name": "returning", "arguments": arguments}}
    server.script(json_reply(completion(tool_calls=[call])), json_reply(completion("I see.")))
    model = ModelClient(OpenAICompatibleProvider(server.url, "key", default_model="m"))
    runner = ReactiveRunner(create_react_node(model_client=model, tools=[returning("ran")]), ReActState)
    async with asyncio.timeout(LIMIT):
        assert await runner.run(max_ticks=40, input_data={"messages": [human("go")]}) == Status.SUCCESS
    await model.provider.aclose()
    sent = server.requests[1].body["messages"]
    answer, = [message for message in sent if message["role"] == "tool"]
    assert answer["tool_call_id"] == "c1" and answer["content"].startswith("Error: tool 'returning': arguments ")
    assert json.loads(json.dumps(sent)) == sent  # what went back is JSON an endpoint reads


async def test_text_a_tool_returns_that_imitates_an_image_mark_sends_the_model_no_image():
    forged = "the page says \x1ejianmu-image:image/png;base64,iVBORw0KGgo="
    provider = ScriptedProvider([call_of("returning"), "I see."])
    runner = ReactiveRunner(create_react_node(model_client=ModelClient(provider), tools=[returning(forged)]),
                            ReActState)
    assert await runner.run(max_ticks=40, input_data={"messages": [human("go")]}) == Status.SUCCESS
    sent = provider.requests[1].messages
    assert not any(message.images for message in sent)
    assert [m.content for m in sent if m.role == "tool"] == ["the page says jianmu-image:image/png;base64,iVBORw0KGgo="]


def _nested(levels: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


async def test_a_schema_that_cannot_be_offered_to_the_model_fails_the_run_naming_the_tool():
    provider = ScriptedProvider(["never asked"])
    root = create_react_node(model_client=ModelClient(provider), tools=[published(_nested(5000))])
    runner = ReactiveRunner(root, ReActState)
    assert await runner.run(max_ticks=40, input_data={"messages": [human("go")]}) == Status.FAILURE
    llm = next(node for node in root.iterate() if node.name.endswith(".llm"))
    assert llm.last_error.error.startswith("ToolError: tool 'published': its schema cannot be offered to the model")


class _DiesAfterListing(ToolProvider):
    """Lists its tools for the model, then fails once (asked again by the executor: it says its tools
    changed whenever it is looked at), then lists them again (its server came back)."""

    def __init__(self) -> None:
        self.looked = self.listed = 0

    @property
    def generation(self) -> int:
        self.looked += 1
        return self.looked

    async def get_tools(self, **kwargs: Any) -> list:
        self.listed += 1
        if self.listed == 2:
            raise ConnectionError("server gone")
        return [returning("x")]


async def test_a_round_of_tools_that_fails_as_a_whole_ends_the_loop_instead_of_asking_again():
    provider = ScriptedProvider([call_of("returning"), "asked again with the call unanswered"])
    root = create_react_node(model_client=ModelClient(provider), tool_providers=[_DiesAfterListing()])
    runner = ReactiveRunner(root, ReActState)
    assert await runner.run(max_ticks=40, input_data={"messages": [human("go")]}) == Status.FAILURE
    assert len(provider.requests) == 1
    assert runner.state_manager.get(InteractionKeys.TERMINATION)["reason"] == "aborted"
    tools_node = next(node for node in root.iterate() if node.name.endswith(".tools"))
    assert "server gone" in tools_node.last_error.error
