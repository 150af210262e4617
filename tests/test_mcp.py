"""MCPToolProvider against real MCP servers: the bundled stdio server (a child process) and,
for streamable HTTP, an in-process server on a loopback port."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from children import children_running
from mcp.server.mcpserver import MCPServer
from mcp.types import Tool as ToolSpec
from py_trees.common import Status

from runtime import Agent, ModelClient, ReActState, ScriptedProvider, create_react_node, human
from runtime.tools import MCPTool, MCPToolProvider, ToolArgumentsError, ToolError
from studio.session import DebugSession

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "sample_trees" / "mcp_server.py"
SAMPLE = ROOT / "sample_trees" / "mcp_tools.py"
LIMIT = 30  # seconds: every test that talks to a server must end well within this

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="child processes are read from /proc")


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """The sample goes live when an endpoint is configured: keep these tests on the script."""
    for name in ("JIANMU_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def server(**options) -> MCPToolProvider:
    return MCPToolProvider(sys.executable, [str(SERVER)], name="demo", **options)


def server_children() -> set[int]:
    """Live (not zombie) child processes of this test process that run the bundled server."""
    return children_running(SERVER)


def react(script: list, provider: MCPToolProvider) -> Agent:
    client = ModelClient.resolve(ScriptedProvider(script))
    return Agent(create_react_node(name="Agent", model_client=client, tool_providers=[provider]),
                 state_schema=ReActState)


def tool_messages(result) -> list[str]:
    return [message.content for message in result.state.messages if message.role == "tool"]


# -- stdio round trip -------------------------------------------------------------------------
async def test_initialize_lists_the_servers_tools_with_their_schemas_and_calls_them():
    provider = server()
    async with asyncio.timeout(LIMIT):
        await provider.initialize()
        try:
            tools = {tool.name: tool for tool in await provider.get_tools()}
            assert set(tools) == {"word_count", "lookup_capital", "wait", "crash"}
            count = tools["word_count"]
            assert isinstance(count, MCPTool) and count.description == "Count the words (whitespace-separated) in a text."
            assert count.parameters() == {"type": "object", "properties": {"text": {"title": "Text", "type": "string"}},
                                          "required": ["text"]}
            assert count.schema()["function"]["parameters"] == count.parameters()
            assert count.describe() == "word_count(text: string): Count the words (whitespace-separated) in a text."
            assert count.parallel_safe and tools["wait"].parallel_safe  # read-only, or saying nothing
            assert not tools["crash"].parallel_safe  # the server's destructiveHint: it runs alone
            assert await count.call({"text": "one two three"}) == "3"
            assert await tools["lookup_capital"].call({"country": "Kenya"}) == "Nairobi"
        finally:
            await provider.close()


async def test_arguments_are_checked_against_the_servers_schema_before_the_call():
    provider = server()
    async with asyncio.timeout(LIMIT):
        await provider.initialize()
        try:
            count = next(tool for tool in await provider.get_tools() if tool.name == "word_count")
            with pytest.raises(ToolArgumentsError) as missing:
                count.validate({})
            assert (missing.value.field, str(missing.value)) == (
                "text", "tool 'word_count': invalid argument 'text': 'text' is a required property")
            with pytest.raises(ToolArgumentsError, match="invalid argument 'text': 3 is not of type 'string'"):
                await count.call({"text": 3})
            with pytest.raises(ToolArgumentsError, match="arguments must be an object"):
                count.validate(["text"])
        finally:
            await provider.close()


def test_tool_names_function_calling_rejects_are_rewritten_and_the_servers_name_kept():
    spec = ToolSpec(name="files.read/text", input_schema={"type": "object"})
    tool = MCPTool(server(), spec)
    assert (tool.name, tool.remote_name) == ("files_read_text", "files.read/text")
    assert tool.description == "files.read/text (MCP server demo)"


# -- failures -----------------------------------------------------------------------------------
async def test_a_tool_error_from_the_server_becomes_an_error_observation():
    agent = react([{"tool_calls": [{"name": "lookup_capital", "arguments": {"country": "Atlantis"}}]},
                   "I do not know that country."], server())
    async with asyncio.timeout(LIMIT):
        result = await agent.run({"messages": [human("Capital of Atlantis?")]})
    assert result.ok and result.final_answer == "I do not know that country."
    [observation] = tool_messages(result)
    assert observation.startswith("Error: tool 'lookup_capital' (MCP server demo): ")
    assert "no capital known for 'Atlantis'" in observation


async def test_a_server_dying_mid_call_gives_a_clear_observation_not_a_hang():
    agent = react([{"tool_calls": [{"name": "crash", "arguments": {}}]},
                   {"tool_calls": [{"name": "word_count", "arguments": {"text": "still there?"}}]},
                   "The tool server is gone."], server())
    async with asyncio.timeout(LIMIT):
        result = await agent.run({"messages": [human("Crash the server.")]})
    assert result.ok and result.final_answer == "The tool server is gone."
    died, after = tool_messages(result)
    assert died == "Error: tool 'crash': MCP server demo exited with status 3 before answering"
    assert after.startswith("Error: tool 'word_count': MCP server demo is not connected")
    assert not server_children()


async def test_a_call_that_outlasts_call_timeout_fails_naming_server_and_tool():
    provider = server(call_timeout=0.5)
    async with asyncio.timeout(LIMIT):
        await provider.initialize()
        try:
            wait = next(tool for tool in await provider.get_tools() if tool.name == "wait")
            with pytest.raises(ToolError, match=r"^tool 'wait': MCP server demo gave no answer within 0.5s$"):
                await wait.call({"seconds": 20})
            assert await wait.call({"seconds": 0}) == "waited 0s"  # the connection survives a timeout
        finally:
            await provider.close()


async def test_a_command_that_does_not_exist_gives_one_line_naming_it():
    provider = MCPToolProvider("no-such-mcp-server-xyz", ["--stdio"])
    with pytest.raises(ToolError) as failed:
        await provider.initialize()
    assert str(failed.value) == ("MCP server no-such-mcp-server-xyz --stdio failed to start: "
                                 "No such file or directory: no-such-mcp-server-xyz")
    agent = react(["unused"], MCPToolProvider("no-such-mcp-server-xyz"))
    result = await agent.run({"messages": [human("hi")]})
    assert result.termination_reason == "error" and "\n" not in result.error
    assert "MCP server no-such-mcp-server-xyz failed to start" in result.error


async def test_a_server_that_exits_at_start_is_quoted_from_its_stderr():
    provider = MCPToolProvider(sys.executable, ["-c", "import sys; sys.exit('config file missing')"],
                               name="broken")
    async with asyncio.timeout(LIMIT):
        with pytest.raises(ToolError) as failed:
            await provider.initialize()
    message = str(failed.value)
    assert message.startswith(f"MCP server broken ({sys.executable} -c ") and "\n" not in message
    assert message.endswith("failed to start: MCPError: Connection closed (stderr: config file missing)")


async def test_a_server_that_never_answers_fails_after_connect_timeout():
    provider = MCPToolProvider(sys.executable, ["-c", "import time; time.sleep(60)"], name="mute",
                               connect_timeout=0.5)
    async with asyncio.timeout(LIMIT):
        with pytest.raises(ToolError, match=r"^MCP server mute \(.*\) failed to start: no answer within 0.5s$"):
            await provider.initialize()


# -- lifecycle ------------------------------------------------------------------------------------
async def test_close_leaves_no_child_process_and_a_closed_provider_can_start_again():
    provider = server()
    async with asyncio.timeout(LIMIT):
        for _ in range(2):
            await provider.initialize()
            assert len(server_children()) == 1
            await provider.close()
            assert not server_children()
            await provider.close()  # closing twice is harmless


async def test_closed_provider_refuses_calls_with_a_clear_error():
    provider = server()
    async with asyncio.timeout(LIMIT):
        await provider.initialize()
        count = next(tool for tool in await provider.get_tools() if tool.name == "word_count")
        await provider.close()
    with pytest.raises(ToolError, match="^tool 'word_count': MCP server demo is not connected"):
        await count.call({"text": "hello"})


def test_provider_needs_exactly_one_of_command_and_url():
    with pytest.raises(ValueError, match="command=.*url="):
        MCPToolProvider()
    with pytest.raises(ValueError, match="not both"):
        MCPToolProvider("server", url="http://127.0.0.1:1/mcp")


# -- streamable HTTP ------------------------------------------------------------------------------
@contextlib.asynccontextmanager
async def serve_http(mcp_server: MCPServer, seen: list | None = None):
    """`mcp_server` over streamable HTTP on a loopback port (uvicorn, in this process); yields its URL
    and the uvicorn server (set `should_exit` to stop it early). Requests' headers go to `seen`."""
    import uvicorn

    app = mcp_server.streamable_http_app()

    async def recording(scope, receive, send):
        if scope["type"] == "http" and seen is not None:
            seen.append(dict(scope["headers"]))
        await app(scope, receive, send)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    http = uvicorn.Server(uvicorn.Config(recording, log_level="warning", lifespan="on"))
    serving = asyncio.create_task(http.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(LIMIT):
            while not http.started:
                await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}/mcp", http, serving
    finally:
        http.should_exit = True
        await serving
        sock.close()


def shouting_server() -> MCPServer:
    mcp_server = MCPServer("loopback", log_level="WARNING")

    @mcp_server.tool()
    def shout(text: str) -> str:
        """The text in capitals."""
        return text.upper()

    return mcp_server


async def test_streamable_http_round_trip_sends_the_headers():
    seen: list[dict[bytes, bytes]] = []
    async with serve_http(shouting_server(), seen) as (url, _, _):
        provider = MCPToolProvider(url=url, headers={"X-Api-Key": "secret"})
        async with asyncio.timeout(LIMIT):
            await provider.initialize()
            [shout_tool] = await provider.get_tools()
            assert shout_tool.name == "shout" and shout_tool.parameters()["required"] == ["text"]
            assert await shout_tool.call({"text": "hello"}) == "HELLO"
            await provider.close()
    assert seen and all(headers.get(b"x-api-key") == b"secret" for headers in seen)


def test_tools_that_require_task_support_are_not_offered(caplog):
    """A 2025-11-25 server may list tools that only run as tasks; a plain tools/call cannot run them."""
    from mcp.types import ToolExecution

    specs = [ToolSpec(name=name, input_schema={"type": "object"}, execution=ToolExecution(task_support=support))
             for name, support in (("render_video", "required"), ("resize", "optional"), ("crop", None))]
    with caplog.at_level("INFO", logger="runtime.tools.mcp"):
        offered = server()._offered([*specs, ToolSpec(name="plain", input_schema={"type": "object"})])
    assert [tool.name for tool in offered] == ["resize", "crop", "plain"]
    assert "MCP server demo: not offering render_video (task-augmented execution required" in caplog.text


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_closing_a_streamable_http_provider_whose_server_died_is_one_warning_line(caplog, capfd):
    port = free_port()
    code = ("import sys, uvicorn; sys.path.insert(0, sys.argv[1]); from mcp_server import server; "
            "uvicorn.run(server.streamable_http_app(), host='127.0.0.1', port=int(sys.argv[2]), log_level='warning')")
    process = subprocess.Popen([sys.executable, "-c", code, str(SERVER.parent), str(port)])
    provider = MCPToolProvider(url=f"http://127.0.0.1:{port}/mcp", name="gone")
    try:
        async with asyncio.timeout(LIMIT):
            while True:
                try:
                    await provider.initialize()
                    break
                except ToolError:
                    await asyncio.sleep(0.2)  # not listening yet
            process.kill()  # the server dies with the session open
            process.wait()
            [word_count] = [tool for tool in await provider.get_tools() if tool.name == "word_count"]
            with pytest.raises(ToolError, match="MCP server gone exited or closed the connection"):
                await word_count.call({"text": "a b"})  # the run finds out: the transport has failed
            with caplog.at_level("WARNING"):
                await provider.close()
    finally:
        process.kill()
        process.wait()
    [line] = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert line.exc_info is None and "\n" not in line.getMessage()
    assert line.getMessage().startswith("MCP server gone did not close cleanly: ConnectError: ")  # the reason
    assert "Traceback" not in capfd.readouterr().err


# -- the sample --------------------------------------------------------------------------------
def load_sample():
    spec = importlib.util.spec_from_file_location("mcp_tools_sample", SAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_sample_answers_from_the_servers_tools_and_stops_the_server():
    sample = load_sample()
    async with asyncio.timeout(LIMIT):
        result = await sample.build().run(sample.INPUT)
    assert (result.status, result.termination_reason) == (Status.SUCCESS, "completed")
    assert result.final_answer == "The capital of Japan is Tokyo, and the sentence has 9 words."
    assert tool_messages(result) == ["Tokyo", "9"]
    assert not server_children()  # closed when the run finished, not at interpreter exit


async def test_sample_in_a_debug_session_stops_the_server_when_the_run_finishes(tmp_path):
    session = DebugSession.load(str(SAMPLE), db=tmp_path / "runs.db")
    async with asyncio.timeout(LIMIT):
        await session.step()
        await session.step()  # the first model round has listed the tools: the server runs
        assert len(server_children()) == 1
        stop = await session.continue_()
    assert stop.kind == "finished" and session.root_status == Status.SUCCESS
    assert not server_children()


def test_sample_runs_headless_and_exits_0():
    result = subprocess.run([sys.executable, "-m", "studio.cli", "run", str(SAMPLE)], capture_output=True,
                            text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "final answer: The capital of Japan is Tokyo, and the sentence has 9 words." in result.stdout
