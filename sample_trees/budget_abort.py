"""A token budget runs out before the agent finishes.

Every scripted reply costs 450 tokens and the loop may spend 1,000: after the third
round the budget is gone, the LoopUntilSuccess abort condition fires and the run fails
with `termination_reason = "budget_exhausted"` (termination metadata in
`interaction.termination`).
"""

from runtime import (
    Agent,
    CalculatorTool,
    ModelClient,
    ReActConfig,
    ReActState,
    ScriptedProvider,
    create_react_node,
    human,
)

COST = {"prompt_tokens": 400, "completion_tokens": 50, "total_tokens": 450}
SCRIPT = [
    {"tool_calls": [{"name": "calculator", "arguments": {"expression": f"{n} ** 2"}}], "usage": COST}
    for n in range(2, 8)
]

INPUT = {"messages": [human("List the squares of 2 to 7, one calculation at a time.")]}


def build() -> Agent:
    client = ModelClient.resolve(ScriptedProvider(SCRIPT), env_override=True)
    root = create_react_node(name="Squares", model_client=client, tools=[CalculatorTool()],
                             config=ReActConfig(max_budget_tokens=1000, max_iterations=10))
    return Agent(root, state_schema=ReActState)
