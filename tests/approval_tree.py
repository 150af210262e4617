"""A ReAct calculator whose calculator needs a human's approval: the approval scenarios' tree file."""

from runtime import Agent, CalculatorTool, ModelClient, ScriptedProvider, create_react_node, human

CALC = {"tool_calls": [{"name": "calculator", "arguments": {"expression": "25 * 4 + 10"}}]}
INPUT = {"messages": [human("What is 25 * 4 + 10?")]}


def build() -> Agent:
    root = create_react_node(name="Calculator", model_client=ModelClient(ScriptedProvider([CALC, "110"])),
                             tools=[CalculatorTool()], constraints={"require_confirmation": ["calculator"]})
    return Agent(root)
