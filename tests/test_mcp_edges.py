"""Issue 30.6 (and #32): MCP servers as they are met in use, each started here for real: an image
answer, a huge answer, a tool list that changes (on a 2026 connection and on a handshake-era one),
the legacy HTTP+SSE transport, two servers offering one tool name, one offering names that become
one once made valid, schemas no validator can use, ordinary server errors (-32000, -32001), a
server killed by a signal, cancelling while a server holds a call or never answers.

Waits are for conditions (a file a server touched, a change seen), each bounded by `LIMIT`;
nothing here asserts how long anything took.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
import socket
import sys
from pathlib import Path

import pytest
from children import children_running
from mcp_test_server import PIXEL, make_server
from openai_server import completion, json_reply
from py_trees.common import Status

from runtime import Agent, ModelClient, ReActState, ScriptedProvider, create_react_node, human
from runtime.model import OpenAICompatibleProvider
from runtime.node.toolbox import ToolBox
from runtime.tools import MCPToolProvider, ToolError, ToolSet

HERE = Path(__file__).resolve().parent
TEST_SERVER = HERE / "mcp_test_server.py"
LEGACY_SERVER = HERE / "legacy_mcp_server.py"
BUNDLED_SERVER = HERE.parent / "sample_trees" / "mcp_server.py"
LIMIT = 30  # seconds: a guard against hangs, never an expectation

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="child processes are read from /proc")


def tool_server(**options) -> MCPToolProvider:
    return MCPToolProvider(sys.executable, [str(TEST_SERVER)], name="test", **options)


async def until(condition, what: str) -> None:
    """Wait for `condition()` to hold (bounded by LIMIT)."""
    try:
        async with asyncio.timeout(LIMIT):
            while not condition():
                await asyncio.sleep(0.02)
    except TimeoutError:
        pytest.fail(f"never happened: {what}")


async def finished(task: asyncio.Task) -> None:
    """Wait for `task` to end however it ends (bounded by LIMIT: a cancellation that hangs fails)."""
    await until(task.done, "the cancelled task ending")


async def tools_of(provider: MCPToolProvider) -> dict:
    return {tool.name: tool for tool in await provider.get_tools()}


# -- what a call returns ---------------------------------------------------------------------------
async def test_an_image_from_a_tool_reaches_the_model_as_an_image_part(server):
    """On the wire: the tool message carries the text, the user message after it the image."""
    call = {"id": "call_1", "type": "function", "function": {"name": "screenshot", "arguments": "{}"}}
    server.script(json_reply(completion(None, [call])), json_reply(completion("One pixel.")))
    model = OpenAICompatibleProvider(server.url, "sk-test", default_model="m")
    agent = Agent(create_react_node(model_client=ModelClient(model), tool_providers=[tool_server()]))
    async with asyncio.timeout(LIMIT):
        result = await agent.run({"messages": [human("What is on the screen?")]})
    await model.aclose()
    assert result.final_answer == "One pixel."
    tool_message, image_message = server.requests[1].body["messages"][-2:]
    assert tool_message == {"role": "tool", "tool_call_id": "call_1",
                            "content": "The screen shows one pixel.\n[an image: in the message after the tool results]"}
    assert image_message == {"role": "user", "content": [
        {"type": "text", "text": "What tool 'screenshot' returned (call call_1):"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(PIXEL).decode()}}]}


@pytest.mark.parametrize("cap, size", [(1000, 5000), (None, 150_000)])
async def test_a_huge_answer_is_cut_with_a_marker_saying_how_much_was_dropped(cap, size):
    provider = tool_server(max_output_chars=cap) if cap else tool_server()  # default: 100,000 characters
    kept = cap or 100_000
    async with asyncio.timeout(LIMIT):
        await provider.initialize()
        try:
            answer = await (await tools_of(provider))["read_file"].call({"size": size})
        finally:
            await provider.close()
    assert answer == "x" * kept + (f"\n[... {size - kept:,} of {size:,} characters dropped: MCP server test answered "
                                   f"more than max_output_chars={kept:,}]")


def test_the_output_cap_must_be_positive():
    with pytest.raises(ValueError, match="max_output_chars must be >= 1 or None"):
        tool_server(max_output_chars=0)


# -- what a server lists -----------------------------------------------------------------------------
HOSTILE_SERVER = HERE / "hostile_mcp_server.py"


async def test_names_that_become_one_once_made_valid_stay_two_tools_each_reaching_its_own():
    """#32: a tool dropped silently from the list would make a call reach another tool."""
    provider = MCPToolProvider(sys.executable, [str(HOSTILE_SERVER)], name="hostile")
    async with asyncio.timeout(LIMIT):
        await provider.initialize()
        try:
            tools = await provider.get_tools()
            reached = {tool.name: await tool.call({}) for tool in tools if tool.remote_name not in ("looping", "dangling")}
        finally:
            await provider.close()
    assert len({tool.name for tool in tools}) == len(tools) == 6
    assert all(len(name) <= 64 for name in reached)
    assert sorted(reached.values()) == sorted(f"ran {tool.remote_name}" for tool in tools
                                              if tool.remote_name not in ("looping", "dangling"))


async def test_a_servers_schema_no_validator_can_use_answers_each_call_with_an_error():
    script = [{"tool_calls": [{"name": "looping", "arguments": {}}, {"name": "dangling", "arguments": {"x": 1}}]},
              "done"]
    model = ScriptedProvider(script)
    provider = MCPToolProvider(sys.executable, [str(HOSTILE_SERVER)], name="hostile")
    agent = Agent(create_react_node(model_client=ModelClient(model), tool_providers=[provider]),
                  state_schema=ReActState)
    async with asyncio.timeout(LIMIT):
        result = await agent.run(input_data={"messages": [human("go")]})
    assert result.status == Status.SUCCESS
    answers = [m.content for m in model.requests[1].messages if m.role == "tool"]
    assert [a.split(":")[0] for a in answers] == ["Error", "Error"]
    assert "tool 'looping': its schema cannot check arguments" in answers[0]
    assert "tool 'dangling': its schema cannot check arguments" in answers[1]


# -- the tool list changing ------------------------------------------------------------------------
@pytest.mark.parametrize("script", [TEST_SERVER, LEGACY_SERVER], ids=["2026-listen", "handshake-notification"])
async def test_a_changed_tool_list_is_listed_again(script):
    provider = MCPToolProvider(sys.executable, [str(script)], name="changing")
    box = ToolBox(providers=[provider])  # what a ReAct loop's nodes share
    async with asyncio.timeout(LIMIT):
        try:
            before = await box.resolve()
            assert "secret" not in before
            assert await before.get("unlock").call({}) == "unlocked"
            await until(lambda: provider.generation > 0, "the server's change seen")
            after = await box.resolve()
            assert after is not before and "secret" in after
            assert await after.get("secret").call({}) == "swordfish"
        finally:
            await box.close()


# -- the legacy HTTP+SSE transport -----------------------------------------------------------------
@contextlib.asynccontextmanager
async def serve_sse():
    """The test server over legacy HTTP+SSE on a loopback port (uvicorn, in this process)."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    http = uvicorn.Server(uvicorn.Config(make_server().sse_app(), log_level="warning"))
    serving = asyncio.create_task(http.serve(sockets=[sock]))
    try:
        await until(lambda: http.started, "the SSE server listening")
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        http.should_exit = True
        await serving
        sock.close()


async def test_the_legacy_sse_transport_runs_a_react_round_trip():
    async with serve_sse() as base:
        provider = MCPToolProvider(url=f"{base}/sse", name="old")
        assert provider.transport == "sse"  # told by the URL's path
        script = [{"tool_calls": [{"name": "read_file", "arguments": {"size": 3}}]}, "It holds xxx."]
        agent = Agent(create_react_node(model_client=ModelClient(ScriptedProvider(script)),
                                        tool_providers=[provider]))
        async with asyncio.timeout(LIMIT):
            result = await agent.run({"messages": [human("Read it.")]})
    assert (result.status, result.final_answer) == (Status.SUCCESS, "It holds xxx.")
    assert [m.content for m in result.state.messages if m.role == "tool"] == ["xxx"]


def test_the_transport_is_told_by_the_url_or_chosen():
    assert MCPToolProvider(url="http://h/mcp").transport == "streamable-http"
    assert MCPToolProvider(url="http://h/sse/").transport == "sse"
    assert MCPToolProvider(url="http://h/events", transport="sse").transport == "sse"
    with pytest.raises(ValueError, match="a command speaks stdio, not 'sse'"):
        MCPToolProvider("server", transport="sse")


# -- two servers, one name -------------------------------------------------------------------------
def bundled(name: str, **options) -> MCPToolProvider:
    return MCPToolProvider(sys.executable, [str(BUNDLED_SERVER)], name=name, **options)


async def test_two_servers_offering_one_tool_name_is_one_line_naming_both():
    agent = Agent(create_react_node(model_client=ModelClient(ScriptedProvider(["unused"])),
                                    tool_providers=[bundled("docs"), bundled("wiki")]))
    async with asyncio.timeout(LIMIT):
        result = await agent.run({"messages": [human("Count words.")]})
    assert result.termination_reason == "error" and "\n" not in result.error
    assert result.error.endswith("tool 'word_count' is offered by both MCP server docs and MCP server wiki; give one "
                                 "a prefix (MCPToolProvider(..., prefix=...))")
    assert not children_running(BUNDLED_SERVER)  # both were started, both are stopped


async def test_a_prefix_tells_the_servers_tools_apart():
    async with asyncio.timeout(LIMIT):
        toolset = await ToolSet.from_providers(bundled("docs"), bundled("wiki", prefix="wiki_"))
        try:
            assert {"word_count", "wiki_word_count"} <= set(toolset.names())
            assert await toolset.get("wiki_word_count").call({"text": "a b c"}) == "3"  # the server's own name
        finally:
            await toolset.close()


# -- a server killed, a call cancelled ---------------------------------------------------------------
async def test_an_ordinary_server_error_is_the_servers_answer_and_the_server_stays_connected():
    """-32000 is JSON-RPC's ordinary server error as well as the SDK's "connection closed" (#32.5), and
    -32001 one as well as the SDK's own timeout."""
    provider = tool_server()
    async with asyncio.timeout(LIMIT):
        await provider.initialize()
        try:
            tools = await tools_of(provider)
            with pytest.raises(ToolError) as refused:
                await tools["busy"].call({})
            with pytest.raises(ToolError) as answered:
                await tools["upstream"].call({})
            assert int(await tools["pid"].call({})) > 0  # still connected
        finally:
            await provider.close()
    assert str(refused.value) == "tool 'busy': MCP server test refused the call: the database is busy"
    assert str(answered.value) == "tool 'upstream': MCP server test refused the call: the upstream service timed out"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
async def test_a_server_killed_by_a_signal_is_reported_with_the_signal(tmp_path, sig):
    provider = tool_server()
    flag = tmp_path / "holding"
    async with asyncio.timeout(LIMIT):
        await provider.initialize()
        try:
            tools = await tools_of(provider)
            pid = int(await tools["pid"].call({}))
            held = asyncio.create_task(tools["hold"].call({"flag": str(flag)}))
            await until(flag.exists, "the server holding the call")
            os.kill(pid, sig)
            with pytest.raises(ToolError) as died:
                await held
        finally:
            await provider.close()
    assert str(died.value) == (f"tool 'hold': MCP server test was killed by signal {sig.name} ({sig.value}) "
                               "before answering")  # not its start-up banner


async def test_cancelling_a_run_while_a_server_holds_a_call_returns(tmp_path):
    flag = tmp_path / "holding"
    script = [{"tool_calls": [{"name": "hold", "arguments": {"flag": str(flag)}}]}, "unreachable"]
    agent = Agent(create_react_node(model_client=ModelClient(ScriptedProvider(script)), tool_providers=[tool_server()]),
                  state_schema=ReActState)
    run = asyncio.create_task(agent.run({"messages": [human("Wait for ever.")]}))
    await until(flag.exists, "the server holding the call")
    run.cancel()
    await finished(run)
    assert run.cancelled() and not children_running(TEST_SERVER)  # the server is stopped too


async def test_cancelling_while_a_server_never_answers_its_handshake_returns():
    mute = MCPToolProvider(sys.executable, ["-c", "import time; time.sleep(3600)"], name="mute",
                           connect_timeout=3600)  # the handshake alone would wait an hour
    starting = asyncio.create_task(mute.initialize())
    await until(lambda: mute._task is not None, "the connection under way")
    await asyncio.sleep(0.2)  # let the child start (cancelling earlier is fine too)
    starting.cancel()
    await finished(starting)
    assert starting.cancelled() and mute._task is None
