"""EvaluationNode: grades, the best answer kept across rounds, the threshold, bad grades, ports, telemetry."""

from __future__ import annotations

import json
import operator
from typing import Annotated

import pytest
from py_trees.common import Status
from pydantic import BaseModel, Field

from runtime import (
    Agent,
    Message,
    ModelClient,
    ReactiveRunner,
    RunContext,
    RuntimeEventBus,
    ScriptedProvider,
    human,
)
from runtime.node import AgentLLMNode, EvaluationNode, EvaluationState, LoopUntilSuccess, Sequence
from runtime.node.evaluation import parse_grade

QUESTION = {"messages": [human("Name a prime number above 10, and say why it is prime.")]}


def grade(score, reflection: str = "") -> str:
    return json.dumps({"score": score, "reflection": reflection})


def actor_evaluator(script, *, threshold: float = 8, max_iterations: int = 5):
    provider = ScriptedProvider(script)
    client = ModelClient(provider)
    evaluator = EvaluationNode("Judge.evaluator", model_client=client, threshold=threshold)
    body = Sequence("Judge.round", memory=True, children=[AgentLLMNode("Judge.actor", model_client=client), evaluator])
    agent = Agent(LoopUntilSuccess("Judge", body, max_iterations=max_iterations), state_schema=EvaluationState)
    return agent, provider, evaluator


ROUNDS = ["11, I think.", grade(6, "Say why it is prime."),
          "12.", grade(2, "12 is even, so not prime."),
          "13: its only divisors are 1 and 13.", grade(9, "Correct and justified.")]


async def test_a_worse_later_answer_never_replaces_the_best_one():
    agent, provider, _ = actor_evaluator(ROUNDS[:4], max_iterations=2)
    result = await agent.run(QUESTION)
    assert result.termination_reason == "max_iterations"
    state = result.state
    assert (state.score, state.reflection) == (2, "12 is even, so not prime.")  # the latest grade...
    assert (state.highest_score, state.best_answer) == (6, "11, I think.")  # ...but the best answer stays
    # each low grade went back to the actor as feedback, with its reflection
    assert [m.role for m in state.messages] == ["user", "assistant", "user", "assistant", "user"]
    assert "6/10: Say why it is prime." in provider.requests[2].messages[-1].content
    # the grading exchange stays out of the conversation; the grader saw the answer and the request
    grading = provider.requests[1].messages
    assert grading[0].role == "system" and "reviewer" in grading[0].content
    assert "11, I think." in grading[-1].content and QUESTION["messages"][0] in grading


async def test_the_loop_keeps_improving_until_the_threshold_and_keeps_the_best():
    agent, provider, _ = actor_evaluator(ROUNDS)
    result = await agent.run(QUESTION)
    assert result.ok and result.final_answer == "13: its only divisors are 1 and 13."
    assert (result.state.highest_score, result.state.best_answer) == (9, result.final_answer)
    assert provider.remaining == 0


async def test_reaching_the_threshold_ends_the_loop_at_once():
    agent, provider, evaluator = actor_evaluator(["13.", grade(8, "Fine."), "never asked", grade(10)])
    result = await agent.run(QUESTION)
    assert result.ok and evaluator.status == Status.SUCCESS
    assert provider.remaining == 2  # a score equal to the threshold is accepted
    assert [m.role for m in result.state.messages] == ["user", "assistant"]  # no feedback after success


async def test_a_malformed_grade_is_a_clear_failure_naming_the_node():
    bus = RuntimeEventBus()
    errors = []
    bus.subscribe(errors.append, types=["node.error"])
    cost = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    agent, _, evaluator = actor_evaluator([{"content": "13.", "usage": cost},
                                           {"content": "Looks good to me!", "usage": cost}], max_iterations=1)
    agent.runner = agent.make_runner(event_bus=bus)
    result = await agent.run(QUESTION)
    assert evaluator.status == Status.FAILURE and result.termination_reason == "max_iterations"
    assert evaluator.last_error.error.startswith("GradeError: Judge/Judge.round/Judge.evaluator: unusable grade")
    assert "no score" in evaluator.last_error.error and "Looks good to me!" in evaluator.last_error.error
    assert [e.node for e in errors] == ["Judge/Judge.round/Judge.evaluator"]
    assert result.state.score is None  # never a silent zero
    assert result.usage.total_tokens == 30  # the unusable grade's tokens still count


@pytest.mark.parametrize(("reply", "expected"), [
    ('{"score": 7, "reflection": "Add an example."}', (7, "Add an example.")),
    ('Here it is:\n```json\n{"score": "6.5", "reflection": "ok"}\n```', (6.5, "ok")),
    ("Score: 7/10\nReflection: needs an example", (7, "needs an example")),
    ('{"score": 0}', (0, "")),
])
def test_grades_are_read_from_json_or_labelled_lines(reply, expected):
    assert parse_grade(reply) == expected


@pytest.mark.parametrize(("reply", "problem"), [
    ("A fine answer.", "no score"),
    ('{"score": 11, "reflection": "wow"}', "outside 0-10"),
    ("Score: -2", "outside 0-10"),
    ('{"score": "high"}', "not a number"),
    ('{"score": true}', "not a number"),
])
def test_unusable_grades_say_why(reply, problem):
    with pytest.raises(ValueError, match=problem):
        parse_grade(reply)


class Review(BaseModel):
    messages: Annotated[list[Message], operator.add] = Field(default_factory=list)
    draft: str = ""
    top: float | None = None
    grade: float | None = None
    notes: str = ""
    kept: str = ""


def bound_evaluator() -> EvaluationNode:
    return EvaluationNode("review", threshold=8).bind(
        inputs={"answer": "draft", "best_score": "top"},
        outputs={"score": "grade", "reflection": "notes", "highest_score": "top", "best_answer": "kept"})


@pytest.mark.parametrize(("top", "score", "expected_top", "expected_kept"), [
    (7.0, 5, 7.0, ""),  # not better than the best so far: the best stays
    (4.0, 6, 6.0, "v1"),  # better: it becomes the best
])
async def test_every_port_can_be_rebound(top, score, expected_top, expected_kept):
    context = RunContext(model_client=ModelClient(ScriptedProvider([grade(score, "why")])))  # no explicit client
    runner = ReactiveRunner(bound_evaluator(), Review, context)
    status = await runner.run(input_data={"draft": "v1", "top": top, "messages": [human("Write v1.")]})
    state = runner.state_manager.model
    assert status == Status.FAILURE  # below the threshold
    assert (state.grade, state.notes, state.top, state.kept) == (score, "why", expected_top, expected_kept)
    assert state.messages[-1].role == "user" and "why" in state.messages[-1].content
    assert {"answer", "best_score", "messages"} <= set(EvaluationNode.input_ports)
    assert {"score", "reflection", "highest_score", "best_answer"} <= set(EvaluationNode.output_ports)


async def test_nothing_to_grade_is_an_error_naming_the_port():
    node = bound_evaluator()
    runner = ReactiveRunner(node, Review, RunContext(model_client=ModelClient(ScriptedProvider([]))))
    assert await runner.run(input_data={"messages": [human("hi")]}) == Status.FAILURE
    assert "nothing to grade: port 'answer' (draft) is empty" in node.last_error.error


def test_threshold_is_on_the_0_to_10_scale():
    with pytest.raises(ValueError, match="within 0-10"):
        EvaluationNode("judge", threshold=80)


async def test_telemetry_and_usage_follow_the_llm_nodes():
    bus = RuntimeEventBus()
    events = []
    bus.subscribe(events.append)
    actor_cost = {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
    grader_cost = {"prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40}
    agent, _, _ = actor_evaluator([{"content": "13.", "usage": actor_cost},
                                   {"content": grade(9, "Good."), "usage": grader_cost}])
    agent.runner = agent.make_runner(event_bus=bus)
    result = await agent.run(QUESTION)
    assert result.usage.total_tokens == 65 and result.usage.prompt_tokens == 50
    judge = "Judge/Judge.round/Judge.evaluator"
    assert [e.type for e in events if e.node == judge and e.type.startswith(("reply.", "model.call."))] == [
        "reply.started", "model.call.started", "model.call.completed", "reply.completed"]
    [scored] = [e for e in events if e.type == "evaluation.scored"]
    assert scored.node == judge
    assert scored.payload == {"score": 9.0, "threshold": 8, "accepted": True, "improved": True, "reflection": "Good."}
