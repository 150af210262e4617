"""An MCP server (stdio) that starts a helper process of its own, as `npx` runs a server under more
processes: a stopped run must leave none of them running. `hold` never answers (it touches its flag
first, to say the call is under way), so a run can be stopped mid-call; `ping` answers at once.

    python mcp_group_server.py PIDS     writes "<server pid> <helper pid>" into PIDS, then serves
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer


def main() -> None:
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    Path(sys.argv[1]).write_text(f"{os.getpid()} {helper.pid}")
    server = MCPServer("group-server", log_level="WARNING")

    @server.tool()
    async def hold(flag: str) -> str:
        """Never answers (touches `flag` first)."""
        Path(flag).touch()
        with anyio.CancelScope(shield=True):
            await anyio.sleep_forever()
        return "never"

    @server.tool()
    def ping() -> str:
        """Answers at once."""
        return "pong"

    server.run()


if __name__ == "__main__":
    main()
