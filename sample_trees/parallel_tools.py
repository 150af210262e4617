"""Two slow, parallel-safe tool calls in one round finish together.

The model asks for the weather in two cities at once; both calls are parallel-safe, so
the ToolExecutor runs them concurrently (about 0.3 s, not 0.6 s) and still appends the
observations in call order.
"""

import asyncio

from runtime import Agent, ModelClient, ReActState, ScriptedProvider, create_react_node, human, tool

FORECASTS = {"Paris": "light rain, 12 °C", "Kyoto": "clear, 18 °C"}


@tool(parallel_safe=True)
async def weather(city: str) -> str:
    """Today's forecast for a city (a slow lookup)."""
    await asyncio.sleep(0.3)
    return FORECASTS.get(city, "no forecast")


SCRIPT = [
    {"tool_calls": [{"name": "weather", "arguments": {"city": "Paris"}},
                    {"name": "weather", "arguments": {"city": "Kyoto"}}]},
    "Paris: light rain, 12 °C. Kyoto: clear, 18 °C. Kyoto is the better day for a walk.",
]

INPUT = {"messages": [human("Where is the weather better today, Paris or Kyoto?")]}


def build() -> Agent:
    client = ModelClient.resolve(ScriptedProvider(SCRIPT), env_override=True)
    root = create_react_node(name="Weather", model_client=client, tools=[weather])
    return Agent(root, state_schema=ReActState)
