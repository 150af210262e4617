"""Issue 12.10: the MCP provider against a reference server nobody here wrote (PyPI's
`mcp-server-time`, installed by the test extras), over stdio, through a ReAct run."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
from py_trees.common import Status

from runtime import Agent, ModelClient, ReActState, ScriptedProvider, create_react_node, human
from runtime.tools import MCPToolProvider, ToolError

LIMIT = 60  # seconds: the server is a fresh Python process importing the MCP SDK


def time_server() -> MCPToolProvider:
    return MCPToolProvider(sys.executable, ["-m", "mcp_server_time", "--local-timezone", "UTC"], name="time")


async def test_the_reference_time_server_lists_its_tools_and_answers_a_react_run():
    provider = time_server()
    convert = {"tool_calls": [{"name": "convert_time", "arguments": {
        "source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}}]}
    model = ScriptedProvider([convert, "Noon in UTC is 21:00 in Tokyo."])
    agent = Agent(create_react_node(model_client=ModelClient(model), tool_providers=[provider]),
                  state_schema=ReActState)
    async with asyncio.timeout(LIMIT):
        result = await agent.run({"messages": [human("What time is it in Tokyo at noon UTC?")]})
    assert (result.status, result.final_answer) == (Status.SUCCESS, "Noon in UTC is 21:00 in Tokyo.")

    offered = {tool["function"]["name"]: tool["function"] for tool in model.requests[0].config.tools}
    assert set(offered) == {"get_current_time", "convert_time"}
    parameters = offered["convert_time"]["parameters"]
    assert parameters["required"] == ["source_timezone", "time", "target_timezone"]
    assert "$schema" not in parameters and "title" not in parameters

    [observation] = [m.content for m in result.state.messages if m.role == "tool"]
    converted = json.loads(observation)
    assert converted["source"]["timezone"] == "UTC" and converted["target"]["timezone"] == "Asia/Tokyo"
    assert converted["target"]["datetime"][11:16] == "21:00"  # Japan keeps no summer time
    assert provider._task is None  # the run finished: the server was stopped


async def test_a_bad_argument_from_the_model_is_an_error_observation_from_the_server():
    provider = time_server()
    await provider.initialize()
    try:
        async with asyncio.timeout(LIMIT):
            tools = {tool.name: tool for tool in await provider.get_tools()}
            with pytest.raises(ToolError, match=r"tool 'get_current_time' \(MCP server time\): .*Mars/Olympus"):
                await tools["get_current_time"].call({"timezone": "Mars/Olympus"})
    finally:
        await provider.close()
