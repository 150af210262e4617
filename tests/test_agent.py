"""Agent: the sample tree, results, approvals across runs, the runner seam the studio uses."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from py_trees.common import Status

from runtime import (
    Agent,
    AgentResult,
    CalculatorTool,
    ModelClient,
    ReActConfig,
    ReActState,
    RunContext,
    ScriptedProvider,
    create_react_node,
    human,
)
from runtime.engine import ReactiveRunner

QUESTION = {"messages": [human("What is 25 * 4 + 10?")]}
SAMPLE = Path(__file__).resolve().parent.parent / "sample_trees" / "react_calculator.py"
CALC = {"tool_calls": [{"name": "calculator", "arguments": {"expression": "25 * 4 + 10"}}]}


def load_sample():
    """Load the tree file by path, as the studio and the CLI do."""
    spec = importlib.util.spec_from_file_location("react_calculator", SAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """The sample goes live when an endpoint is configured: keep these tests on the script."""
    for name in ("JIANMU_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


async def test_sample_react_calculator():
    sample = load_sample()
    agent = sample.build()
    assert isinstance(agent, Agent) and agent.state_schema is ReActState
    result = await agent.run(sample.INPUT)
    assert isinstance(result, AgentResult)
    assert (result.status, result.result_type, result.termination_reason) == (Status.SUCCESS, "answer", "completed")
    assert "110" in result.final_answer and result.ok and not result.truncated
    assert result.run_id and result.usage.total_tokens > 0
    assert [m.role for m in result.state.messages] == ["user", "assistant", "tool", "assistant"]


async def test_studio_seam_make_runner_and_result_from():
    agent = load_sample().build()
    runner = agent.make_runner()
    assert isinstance(runner, ReactiveRunner) and runner.root is agent.root and runner.context is agent.context
    assert agent.context.approval_manager is not None
    while not runner.finished:
        await runner.step()
    result = agent.result_from(runner)
    assert result.final_answer == "25 * 4 + 10 = 110" and result.run_id == runner.run_id


def approval_agent(script) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(script)
    root = create_react_node(model_client=ModelClient(provider), tools=[CalculatorTool()],
                             constraints={"require_confirmation": ["calculator"]})
    return Agent(root), provider


async def test_approval_suspends_the_agent_and_approving_finishes_the_run():
    agent, _ = approval_agent([CALC, "110"])
    result = await agent.run(QUESTION)
    assert (result.status, result.result_type, result.termination_reason) == (Status.RUNNING, "pending", "suspended")
    [pending] = result.pending.values()
    assert pending["payload"]["tool"] == "calculator"
    manager = agent.context.approval_manager
    manager.approve(manager.pending()[0].id)
    result = await agent.run()
    assert (result.result_type, result.final_answer) == ("answer", "110")
    assert result.state.messages[2].content == "110"


async def test_denied_approval_feeds_an_error_back_and_the_loop_goes_on():
    agent, provider = approval_agent([CALC, "I was not allowed to calculate."])
    await agent.run(QUESTION)
    manager = agent.context.approval_manager
    manager.deny(manager.pending()[0].id, "no")
    result = await agent.run()
    assert result.final_answer == "I was not allowed to calculate."
    assert provider.requests[1].messages[-1].content == "Error: tool 'calculator' was not approved: no"


async def test_max_ticks_leaves_the_run_pending_and_run_carries_on():
    agent = Agent(create_react_node(model_client=ModelClient(ScriptedProvider([CALC, "110"])),
                                    tools=[CalculatorTool()]))
    result = await agent.run(QUESTION, max_ticks=1)
    assert (result.result_type, result.termination_reason) == ("pending", "max_ticks")
    assert (await agent.run()).final_answer == "110"


async def test_agent_uses_the_context_model_client_and_the_config_of_its_loop():
    root = create_react_node(tools=[CalculatorTool()], config=ReActConfig(on_max_iterations="final_answer"))
    agent = Agent(root, context=RunContext(model_client=ModelClient(ScriptedProvider(["110"]))))
    assert agent.config.on_max_iterations == "final_answer"
    assert (await agent.run(QUESTION)).final_answer == "110"
