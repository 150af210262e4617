"""A ReAct agent whose tools come from `mcp_group_server.py` (a server with a helper process) and whose
model calls `hold`, which never answers: the run is mid-call until something stops it. With
$JIANMU_TEST_MCP_CALL=pid the model calls `pid` instead, which answers, and the run ends.

$JIANMU_TEST_MCP_DIR is where the server writes its pids (`pids`) and `hold` its flag (`holding`).
"""

import os
import sys
from pathlib import Path

from runtime import Agent, ModelClient, ReActState, ScriptedProvider, create_react_node, human
from runtime.tools import MCPToolProvider

SERVER = Path(__file__).with_name("mcp_group_server.py")
PLACE = "JIANMU_TEST_MCP_DIR"
CALL = "JIANMU_TEST_MCP_CALL"
INPUT = {"messages": [human("Wait for it.")]}


def build() -> Agent:
    place = Path(os.environ[PLACE])
    call = os.environ.get(CALL, "hold")
    arguments = {"flag": str(place / "holding")} if call == "hold" else {}
    model = ModelClient(ScriptedProvider([{"tool_calls": [{"name": call, "arguments": arguments}]}, "Done."]))
    server = MCPToolProvider(sys.executable, [str(SERVER), str(place / "pids")], name="group-server", call_timeout=600)
    return Agent(create_react_node(name="Holder", model_client=model, tool_providers=[server]), state_schema=ReActState)
