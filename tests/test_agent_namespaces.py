"""Issue 12.1: namespaced ReAct agents through `Agent` (input, termination, the result node)."""

from __future__ import annotations

import pytest
from py_trees.common import Status

from runtime import (
    Agent,
    CalculatorTool,
    ModelClient,
    ReActConfig,
    ScriptedProvider,
    create_react_node,
    human,
)
from runtime.agent import find_agents
from runtime.node import AgentLLMNode, LoopUntilSuccess, Sequence, StateCondition, create_plan_execute_node
from runtime.state import InteractionKeys

QUESTION = {"messages": [human("What is 25 * 4 + 10?")]}


def calc(expression: str, tokens: int = 10) -> dict:
    return {"tool_calls": [{"name": "calculator", "arguments": {"expression": expression}}],
            "usage": {"prompt_tokens": tokens - 1, "completion_tokens": 1, "total_tokens": tokens}}


def namespaced(script, namespace="agent", name="ReActAgent", **config):
    provider = ScriptedProvider(script)
    root = create_react_node(name=name, namespace=namespace, model_client=ModelClient(provider),
                             tools=[CalculatorTool()], config=ReActConfig(**config))
    return root, provider


async def test_the_input_reaches_the_agents_namespace():
    root, provider = namespaced([calc("25 * 4 + 10"), "110"])
    result = await Agent(root).run(QUESTION)
    assert (result.result_type, result.final_answer) == ("answer", "110")
    first = provider.requests[0].messages
    assert [m.role for m in first] == ["system", "user"] and first[1].content == "What is 25 * 4 + 10?"
    assert result.state.messages == [] and len(result.state.model_extra["agent.messages"]) == 4


@pytest.mark.parametrize("mode, result_type, truncated", [
    ("error", "error", False), ("return_observations", "error", False), ("final_answer", "answer", True)])
async def test_every_on_max_iterations_mode_in_a_namespace(mode, result_type, truncated):
    root, _ = namespaced([calc("1+1"), calc("2+2"), "probably 4"], max_iterations=2, on_max_iterations=mode)
    result = await Agent(root).run(QUESTION)
    assert (result.result_type, result.termination_reason, result.truncated) == (result_type, "max_iterations",
                                                                                 truncated)
    assert result.error is None
    if mode == "return_observations":
        assert result.observations == ["2", "4"]
    if mode == "final_answer":
        assert result.final_answer == "probably 4"
    # termination stays in the loop's namespace, like the rest of its state
    assert result.state.model_extra["agent." + InteractionKeys.TERMINATION]["reason"] == "max_iterations"
    assert InteractionKeys.TERMINATION not in result.state.model_extra


async def test_a_spent_budget_in_a_namespace_is_budget_exhausted():
    root, provider = namespaced([calc("1+1", 60), calc("2+2", 60), "4"], max_budget_tokens=100)
    result = await Agent(root).run(QUESTION)
    assert (result.result_type, result.termination_reason) == ("error", "budget_exhausted")
    assert "120 >= 100" in result.error and len(provider.requests) == 2


async def test_two_agents_in_a_row_input_to_the_first_result_from_the_last():
    researcher, first = namespaced(["notes: 25*4+10 is 110"], namespace="research", name="Research")
    writer, second = namespaced(["The answer is 110."], namespace="write", name="Write")
    agent = Agent(Sequence("pipeline", memory=True, children=[researcher, writer]))
    assert [a.namespace for a in agent.agents] == ["research", "write"]
    result = await agent.run(QUESTION)
    assert first.requests[0].messages[-1].content == "What is 25 * 4 + 10?"
    assert (result.result_type, result.final_answer) == ("answer", "The answer is 110.")


async def test_the_agent_that_failed_explains_the_failure():
    researcher, _ = namespaced([calc("1+1")], namespace="research", name="Research", max_iterations=1)
    writer, second = namespaced(["unused"], namespace="write", name="Write")
    result = await Agent(Sequence("pipeline", memory=True, children=[researcher, writer])).run(QUESTION)
    assert (result.status, result.termination_reason) == (Status.FAILURE, "max_iterations")
    assert second.requests == []


async def test_an_explicit_result_node_wins():
    researcher, _ = namespaced(["110"], namespace="research", name="Research")
    writer, _ = namespaced(["The answer is 110."], namespace="write", name="Write")
    agent = Agent(Sequence("pipeline", memory=True, children=[researcher, writer]), result=researcher)
    assert (await agent.run(QUESTION)).final_answer == "110"
    with pytest.raises(ValueError, match="not in the tree or holds no AgentLLMNode"):
        Agent(researcher, result=Sequence("empty", memory=True, children=[]))


def test_nested_agents_count_once_the_outermost():
    plan = create_plan_execute_node(namespace="plan", model_client=ModelClient(ScriptedProvider([])))
    [agent] = find_agents(Sequence("root", memory=True, children=[plan]))
    assert agent.loop is plan and agent.answer is plan.answer_node and agent.namespace == "plan"


async def test_a_loops_answer_node_is_its_result_even_when_another_llm_node_comes_first():
    """A hand-built loop whose first LLM node is not the one that answers: `answer_node` says which."""
    critic, writer = ScriptedProvider(["too vague"]), ScriptedProvider(["110, checked twice."])
    body = Sequence("body", memory=True, children=[
        AgentLLMNode("critic", model_client=ModelClient(critic), namespace="critic"),
        AgentLLMNode("writer", model_client=ModelClient(writer), namespace="writer"),
        StateCondition("written", key="done", op="truthy", namespace="writer")])
    loop = LoopUntilSuccess("review", body, namespace="writer")
    loop.answer_node = body.children[1]
    agent = Agent(loop)
    [found] = agent.agents
    assert found.answer is loop.answer_node and found.namespace == "writer"
    result = await agent.run(QUESTION)
    assert (result.result_type, result.final_answer) == ("answer", "110, checked twice.")
    assert writer.requests[0].messages[-1].content == "What is 25 * 4 + 10?"
    assert [m.role for m in critic.requests[0].messages] == ["system"]  # its namespace got no input


async def test_a_loop_the_run_never_reached_reports_no_termination_of_an_earlier_run():
    writer, _ = namespaced([calc("1+1"), calc("2+2")], namespace="write", name="Write", max_iterations=1)
    gate = StateCondition("gate", key="go", op="truthy", namespace="write")
    agent = Agent(Sequence("pipeline", memory=True, children=[gate, writer]))
    assert (await agent.run({"go": True, **QUESTION})).termination_reason == "max_iterations"
    again = await agent.run({"go": False})  # the gate fails: the writer's loop never starts
    assert (again.status, again.termination_reason) == (Status.FAILURE, "error")
    assert again.state.model_extra["write." + InteractionKeys.TERMINATION] is None  # a fresh run cleared it
