"""A small stdio MCP server bundled for `mcp_tools.py` and the tests.

Its lookups are deterministic so a scripted agent and the tests can rely on their answers
(and read-only, so the agent may run them in parallel); `wait` answers late and `crash`
exits the process in the middle of a call, to show what a slow or dying server looks like.

    python sample_trees/mcp_server.py        (speaks MCP on stdin/stdout)
"""

import asyncio
import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

CAPITALS = {"france": "Paris", "japan": "Tokyo", "kenya": "Nairobi", "peru": "Lima"}

server = MCPServer("jianmu-demo", log_level="WARNING")
READ_ONLY = ToolAnnotations(read_only_hint=True)


@server.tool(annotations=READ_ONLY)
def word_count(text: str) -> int:
    """Count the words (whitespace-separated) in a text."""
    return len(text.split())


@server.tool(annotations=READ_ONLY)
def lookup_capital(country: str) -> str:
    """The capital city of a country."""
    try:
        return CAPITALS[country.strip().lower()]
    except KeyError:
        raise ToolError(f"no capital known for {country!r} (known: {', '.join(sorted(CAPITALS))})") from None


@server.tool()
async def wait(seconds: float) -> str:
    """Answer after some seconds (for timeout tests)."""
    await asyncio.sleep(seconds)
    return f"waited {seconds:g}s"


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def crash() -> str:
    """Exit the server process without answering (for failure tests)."""
    os._exit(3)


if __name__ == "__main__":
    server.run()
