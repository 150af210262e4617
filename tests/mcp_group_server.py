"""The test MCP server (`mcp_test_server.py`, over stdio) with a helper process of its own, as `npx` runs a
server under more processes: a stopped run must leave none of them running. Its `hold` never answers
(it touches its flag first, to say the call is under way), its `pid` answers at once.

    python mcp_group_server.py PIDS     writes "<server pid> <helper pid>" into PIDS, then serves
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mcp_test_server import make_server

if __name__ == "__main__":
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    Path(sys.argv[1]).write_text(f"{os.getpid()} {helper.pid}")
    make_server("group-server").run()
