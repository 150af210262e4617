"""Tools that fail, and a loop that carries on.

Round 1: the stock service raises (a flaky connection) → an error observation and a
`tool.call.failed` event. Round 2: the model sends malformed arguments → an error
observation naming the tool. Round 3: it retries properly and gets the answer.
"""

from runtime import Agent, ModelClient, ReActState, ScriptedProvider, create_react_node, human, tool

_calls = {"count": 0}


@tool
def stock_level(sku: str) -> str:
    """Units in stock for a SKU (the service drops the first connection)."""
    _calls["count"] += 1
    if _calls["count"] == 1:
        raise ConnectionError("stock service reset the connection")
    return f"{sku}: 1,240 units in stock"


SCRIPT = [
    {"tool_calls": [{"name": "stock_level", "arguments": {"sku": "A-100"}}]},
    {"tool_calls": [{"name": "stock_level", "arguments": "{sku: A-100"}]},
    {"tool_calls": [{"name": "stock_level", "arguments": {"sku": "A-100"}}]},
    "A-100 has 1,240 units in stock, enough for the order of 1,000.",
]

INPUT = {"messages": [human("Can we ship 1,000 units of A-100 today?")]}


def build() -> Agent:
    _calls["count"] = 0
    client = ModelClient.resolve(ScriptedProvider(SCRIPT), env_override=True)
    root = create_react_node(name="Stock", model_client=client, tools=[stock_level])
    return Agent(root, state_schema=ReActState)
