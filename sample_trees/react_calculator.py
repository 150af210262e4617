"""ReAct with a calculator: "What is 25 * 4 + 10?" answered in two rounds.

Offline by default: a scripted model asks for the calculator, then answers from its
observation. With `JIANMU_BASE_URL` (and a key and model) in the environment, the same
tree runs against that endpoint instead.

    jianmu-studio sample_trees/react_calculator.py
"""

from runtime import (
    Agent,
    CalculatorTool,
    ModelClient,
    ReActState,
    ScriptedProvider,
    create_react_node,
    human,
)

SCRIPT = [
    {"tool_calls": [{"name": "calculator", "arguments": {"expression": "25 * 4 + 10"}}]},
    "25 * 4 + 10 = 110",
]

INPUT = {"messages": [human("What is 25 * 4 + 10?")]}


def build() -> Agent:
    client = ModelClient.resolve(ScriptedProvider(SCRIPT), env_override=True)
    root = create_react_node(name="Calculator", model_client=client, tools=[CalculatorTool()])
    return Agent(root, state_schema=ReActState)
