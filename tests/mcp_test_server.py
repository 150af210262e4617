"""A small MCP server for the MCP tests, over stdio (`python mcp_test_server.py`) or, from a test, over
legacy HTTP+SSE or streamable HTTP (`make_server().sse_app()`).

Its tools show what the provider must cope with: an image, a huge answer, a call held forever,
a tool list that changes, an ordinary server error, its own process id (so a test can kill it). It prints a start-up
banner on stderr, as many servers do: that banner is not why it died.
"""

from __future__ import annotations

import base64
import os
import sys
import time
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.utilities.types import Image
from mcp.shared.exceptions import MCPError

PIXEL = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


def make_server(name: str = "test-server") -> MCPServer:
    server = MCPServer(name, log_level="WARNING")

    @server.tool()
    def screenshot() -> list:
        """A picture of the screen, with a caption."""
        return ["The screen shows one pixel.", Image(data=PIXEL, format="png")]

    @server.tool()
    def read_file(size: int) -> str:
        """A file of `size` characters."""
        return "x" * size

    @server.tool()
    def pid() -> int:
        """This server's process id."""
        return os.getpid()

    @server.tool()
    async def hold(flag: str = "") -> str:
        """Never answers, whatever it is asked (touches `flag` first, when given, to say it holds)."""
        if flag:
            Path(flag).touch()
        with anyio.CancelScope(shield=True):
            await anyio.sleep_forever()
        return "never"

    @server.tool()
    def hold_blocking() -> str:
        """Never answers and never reads its input again: the whole server is stuck."""
        time.sleep(3600)
        return "never"

    @server.tool()
    def busy() -> str:
        """Fails with JSON-RPC's ordinary server error, -32000 (the code the SDK also uses for a
        closed connection)."""
        raise MCPError(code=-32000, message="the database is busy")

    @server.tool()
    def upstream() -> str:
        """Fails at once with -32001 (the code the SDK also uses for its own request timeout)."""
        raise MCPError(code=-32001, message="the upstream service timed out")

    @server.tool()
    async def unlock(ctx: Context) -> str:
        """Adds the tool `secret` and says the tool list changed."""
        server.add_tool(secret_word, name="secret", description="The secret word.")
        await ctx.notify_tools_changed()
        return "unlocked"

    return server


def secret_word() -> str:
    return "swordfish"


if __name__ == "__main__":
    print("test-server 1.0 ready", file=sys.stderr, flush=True)
    make_server().run()
