"""Plan and execute: a three-step plan, a failed step, a re-plan, and the answer.

The planner splits an average-price question into three calculator steps. Each step runs
as its own ReAct task in the `Shopping.executor` namespace. The third step cannot know
how many items there are and replies "STEP FAILED: ...", so the planner re-plans the
remaining work (count the items, then divide), and the answer node sums up the results.
Offline by default (a scripted model); with `JIANMU_BASE_URL` (and a key and model) in
the environment, the same tree runs against that endpoint instead.

    jianmu-studio sample_trees/plan_execute.py
"""

import json

from runtime import Agent, CalculatorTool, ModelClient, ScriptedProvider, human
from runtime.node import PlanExecuteState, create_plan_execute_node


def calculate(expression: str) -> dict:
    return {"tool_calls": [{"name": "calculator", "arguments": {"expression": expression}}]}


SCRIPT = [
    json.dumps(["Compute the cost of the pens: 12 * 1.25", "Compute the cost of the notebooks: 8 * 3.40",
                "Compute the average price per item"]),
    calculate("12 * 1.25"), "The pens cost $15.00.",
    calculate("8 * 3.40"), "The notebooks cost $27.20.",
    calculate("(15 + 27.2) / items"),
    "STEP FAILED: the number of items is not among the results so far.",
    json.dumps(["Count the items: 12 + 8", "Divide the total cost, 15 + 27.2, by the number of items"]),
    calculate("12 + 8"), "There are 20 items.",
    calculate("(15 + 27.2) / 20"), "The average price is $2.11 per item.",
    "You paid $42.20 for 20 items: $2.11 per item on average.",
]

INPUT = {"messages": [human("I bought 12 pens at $1.25 and 8 notebooks at $3.40. "
                            "What did I pay per item on average?")]}


def build() -> Agent:
    client = ModelClient.resolve(ScriptedProvider(SCRIPT), env_override=True)
    root = create_plan_execute_node(name="Shopping", model_client=client, tools=[CalculatorTool()])
    return Agent(root, state_schema=PlanExecuteState)
