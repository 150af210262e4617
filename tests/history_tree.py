"""A ReAct calculator that calls its tool five times: a message history long enough to be a stored list."""

from runtime import Agent, CalculatorTool, ModelClient, ScriptedProvider, create_react_node, human

CALLS = [{"tool_calls": [{"name": "calculator", "arguments": {"expression": f"{n} * 2"}}]} for n in range(5)]
INPUT = {"messages": [human("Double each of 0 to 4.")]}


def build() -> Agent:
    root = create_react_node(name="Calc", model_client=ModelClient(ScriptedProvider([*CALLS, "done"])),
                             tools=[CalculatorTool()])
    return Agent(root)
