"""ReAct with the tools of an MCP server: the bundled `mcp_server.py`, started over stdio.

The agent's tools come from the server (listed on the first round, with their JSON
schemas); a scripted model asks for two of them in one round (read-only, so they run in
parallel) and answers from what they returned. The server is stopped when the run ends.

    jianmu-studio sample_trees/mcp_tools.py
"""

import sys
from pathlib import Path

from runtime import Agent, ModelClient, ReActState, ScriptedProvider, create_react_node, human
from runtime.tools import MCPToolProvider

SERVER = Path(__file__).with_name("mcp_server.py")
SENTENCE = "The quick brown fox jumps over the lazy dog"

SCRIPT = [
    {"tool_calls": [{"name": "lookup_capital", "arguments": {"country": "Japan"}},
                    {"name": "word_count", "arguments": {"text": SENTENCE}}]},
    "The capital of Japan is Tokyo, and the sentence has 9 words.",
]

INPUT = {"messages": [human(f"What is the capital of Japan, and how many words are in {SENTENCE!r}?")]}


def build() -> Agent:
    client = ModelClient.resolve(ScriptedProvider(SCRIPT), env_override=True)
    server = MCPToolProvider(sys.executable, [str(SERVER)], name="jianmu-demo", call_timeout=20)
    root = create_react_node(name="MCPAgent", model_client=client, tool_providers=[server])
    return Agent(root, state_schema=ReActState)
