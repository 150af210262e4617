"""create_plan_execute_node: plans parsed, steps run in order, re-plans bounded, budget, samples, replay."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from runtime import (
    Agent,
    CalculatorTool,
    ModelClient,
    ReActConfig,
    RuntimeEventBus,
    ScriptedProvider,
    human,
)
from runtime.memory.checkpoint import InMemoryCheckpointStore, IOReplayer
from runtime.node import LoopUntilSuccess, PlanExecuteState, create_plan_execute_node
from runtime.node.plan_execute import parse_plan

ROOT = Path(__file__).resolve().parents[1]
QUESTION = {"messages": [human("What is (2 + 3) * 2?")]}


def plan(*steps: str) -> str:
    return json.dumps(list(steps))


def calc(expression: str) -> dict:
    return {"tool_calls": [{"name": "calculator", "arguments": {"expression": expression}}]}


def plan_execute(script, **options):
    provider = ScriptedProvider(script)
    root = create_plan_execute_node(name="Math", model_client=ModelClient(provider), tools=[CalculatorTool()],
                                    **options)
    return Agent(root, state_schema=PlanExecuteState), provider


def load_sample(name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_sample", ROOT / "sample_trees" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("reply", [
    '["add 2 and 3", "double it"]',
    'Plan:\n```json\n{"steps": ["add 2 and 3", "double it"]}\n```',
    '[{"step": "add 2 and 3"}, {"step": "double it"}]',
    "1. add 2 and 3\n2) double it",
    "Here is my plan:\n- add 2 and 3\n* double it\nThat is all.",
    "Step 1: add 2 and 3\nStep 2: double it",
])
def test_plans_are_read_from_json_or_listed_lines(reply):
    assert parse_plan(reply, max_steps=5) == ["add 2 and 3", "double it"]


@pytest.mark.parametrize(("reply", "problem"), [
    ("I will just work it out.", "no steps"),
    ("[]", "no steps"),
    (plan("a", "b", "c"), "3 steps, more than max_steps=2"),
])
def test_unusable_plans_say_why(reply, problem):
    with pytest.raises(ValueError, match=problem):
        parse_plan(reply, max_steps=2)


def test_the_subtree_names_its_parts_and_runs_steps_in_their_own_namespace():
    root = create_plan_execute_node(name="Math", tools=[CalculatorTool()], max_steps=3, max_replans=1)
    assert isinstance(root, LoopUntilSuccess) and root.max_iterations == (1 + 1) * (1 + 3) + 1
    names = {node.name: node for node in root.iterate()}
    assert {"Math.round", "Math.next", "Math.phase==plan", "Math.planner", "Math.step", "Math.executor",
            "Math.executor.llm", "Math.answer", "Math.done"} <= set(names)
    assert names["Math.executor.llm"].namespace == "Math.executor"
    assert names["Math.planner"].namespace is None and names["Math.answer"].namespace is None
    assert names["Math.planner"].toolbox is names["Math.executor.llm"].toolbox  # the plan knows the tools
    with pytest.raises(ValueError, match="max_replans >= 0"):
        create_plan_execute_node(max_replans=-1)


async def test_steps_run_in_order_each_as_a_fresh_task_with_the_results_so_far():
    bus = RuntimeEventBus()
    events = []
    bus.subscribe(events.append, types=["plan.created", "plan.step.started", "plan.step.completed"])
    agent, provider = plan_execute([plan("add 2 and 3", "double it"), calc("2 + 3"), "5", calc("5 * 2"), "10",
                                    "(2 + 3) * 2 = 10"])
    agent.runner = agent.make_runner(event_bus=bus)
    result = await agent.run(QUESTION)
    assert result.ok and result.final_answer == "(2 + 3) * 2 = 10"
    state = result.state
    assert state.step_results == [{"step": "add 2 and 3", "result": "5", "ok": True},
                                  {"step": "double it", "result": "10", "ok": True}]
    assert (state.plan, state.current_step, state.phase, state.replans) == (["add 2 and 3", "double it"], 2,
                                                                            "answer", 0)
    planning, step1, _, step2, _, answering = (request.messages for request in provider.requests)
    assert "calculator" in planning[-1].content and planning[-2] == QUESTION["messages"][0]
    assert [m.role for m in step1] == ["system", "user"]  # a fresh task: the step alone
    assert "Your task is step 1 of 2: add 2 and 3" in step1[-1].content
    assert "What is (2 + 3) * 2?" in step1[-1].content and "Results so far" not in step1[-1].content
    assert "Your task is step 2 of 2: double it" in step2[-1].content
    assert "Results so far:\n1. add 2 and 3 → 5" in step2[-1].content
    assert "1. add 2 and 3 → 5\n2. double it → 10" in answering[-1].content
    assert [(e.type, e.payload.get("index")) for e in events] == [
        ("plan.created", None), ("plan.step.started", 0), ("plan.step.completed", 0),
        ("plan.step.started", 1), ("plan.step.completed", 1)]


async def test_a_failed_step_triggers_a_replan_of_the_remaining_work():
    agent, provider = plan_execute([plan("add 2 and 3", "look up the factor"), "5",
                                    "STEP FAILED: no lookup tool", plan("double 5"), "10", "It is 10."])
    result = await agent.run(QUESTION)
    assert result.ok and result.final_answer == "It is 10."
    state = result.state
    assert state.replans == 1 and state.plan == ["double 5"] and state.replan_reason is None
    assert [(r["step"], r["ok"]) for r in state.step_results] == [
        ("add 2 and 3", True), ("look up the factor", False), ("double 5", True)]
    assert state.step_results[1]["result"] == "no lookup tool"
    replanning = provider.requests[3].messages[-1].content
    assert "step 2 ('look up the factor') failed: no lookup tool" in replanning
    assert "1. add 2 and 3 → 5\n2. look up the factor → no lookup tool (failed)" in replanning


async def test_a_step_whose_react_loop_gives_up_fails_too():
    agent, _ = plan_execute([plan("compute"), calc("2 + 3"), plan("just answer"), "10", "It is 10."],
                            config=ReActConfig(max_iterations=1))
    result = await agent.run(QUESTION)
    assert result.ok and result.state.replans == 1
    failed = result.state.step_results[0]
    assert not failed["ok"] and "max_iterations" in failed["result"]


async def test_replans_are_bounded():
    agent, provider = plan_execute([plan("a"), "STEP FAILED: x", plan("b"), "STEP FAILED: y", "never used"],
                                   max_replans=1)
    result = await agent.run(QUESTION)
    assert result.termination_reason == "error" and provider.remaining == 1
    assert result.error.startswith("Math/Math.round/Math.next/Math.execute/Math.step: StepFailedError")
    assert "step 1 ('b') failed: y, and no re-plan is left (max_replans=1)" in result.error
    assert [r["ok"] for r in result.state.step_results] == [False, False]


async def test_an_unreadable_plan_is_replanned_then_fails_clearly():
    agent, provider = plan_execute(["I will just work it out.", plan("double 5"), "10", "It is 10."])
    result = await agent.run(QUESTION)
    assert result.ok and result.state.replans == 1
    assert "The previous plan could not go on: the plan could not be read: it has no steps" in \
        provider.requests[1].messages[-1].content

    agent, provider = plan_execute(["no plan", "still no plan", "never used"], max_replans=1)
    result = await agent.run(QUESTION)
    assert result.termination_reason == "error" and provider.remaining == 1
    assert result.error.startswith("Math/Math.round/Math.next/Math.planning/Math.planner: PlanError")
    assert "no re-plan is left (max_replans=1): 'still no plan'" in result.error


async def test_the_token_budget_covers_planner_and_steps_and_aborts_mid_step():
    cost = {"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100}
    script = [{"content": plan("add", "double"), "usage": cost}, {**calc("2 + 3"), "usage": cost},
              {"content": "5", "usage": cost}, {**calc("5 * 2"), "usage": cost}, {"content": "10", "usage": cost},
              {"content": "10", "usage": cost}]
    agent, provider = plan_execute(script, config=ReActConfig(max_budget_tokens=350))
    result = await agent.run(QUESTION)
    assert result.termination_reason == "budget_exhausted" and provider.remaining == 2
    assert result.usage.total_tokens == 400  # the step in flight is counted once, in the plan's usage
    assert agent.runner.state_manager.get("llm.usage", "Math.executor") == {}


async def test_usage_adds_up_once_across_namespaces():
    agent, provider = plan_execute([plan("add 2 and 3"), calc("2 + 3"), "5", "It is 5."])
    result = await agent.run(QUESTION)
    state = agent.runner.state_manager
    per_namespace = [(state.get("llm.usage", ns) or {}).get("total_tokens", 0) for ns in state.namespaces()]
    assert sum(per_namespace) == result.usage.total_tokens > 0  # what the studio adds up
    assert state.get("rounds", "Math.executor") == 2 and result.state.rounds == 2  # planner + answer


async def test_a_namespaced_plan_execute_reports_its_own_answer():
    provider = ScriptedProvider([plan("add 2 and 3"), "5", "It is 5."])
    root = create_plan_execute_node(name="Math", namespace="job", model_client=ModelClient(provider))
    agent = Agent(root, state_schema=PlanExecuteState)
    result = await agent.run(QUESTION | {"job.messages": QUESTION["messages"]})
    assert result.ok and result.final_answer == "It is 5."
    assert agent.runner.state_manager.get("final_answer", "job.Math.executor") == "5"


async def test_the_samples_run_to_success():
    sample = load_sample("plan_execute")
    result = await sample.build().run(sample.INPUT)
    assert result.ok and "$2.11 per item" in result.final_answer
    assert result.state.replans == 1
    assert [r["ok"] for r in result.state.step_results] == [True, True, False, True, True]

    sample = load_sample("actor_evaluator")
    result = await sample.build().run(sample.INPUT)
    assert result.ok and result.final_answer == sample.PRECISE
    assert (result.state.highest_score, result.state.best_answer) == (9, sample.PRECISE)


@pytest.mark.parametrize("name", ["plan_execute", "actor_evaluator"])
def test_the_samples_run_headless(name, tmp_path):
    result = subprocess.run([sys.executable, "-m", "studio.cli", "run", f"sample_trees/{name}.py",
                             "--db", str(tmp_path / "runs.db")], capture_output=True, text=True, cwd=ROOT,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].startswith("final answer: ")


async def test_the_plan_execute_sample_replays_from_every_checkpoint_offline():
    sample = load_sample("plan_execute")
    store = InMemoryCheckpointStore()
    runner = sample.build().make_runner(checkpointer=store)
    await runner.run(input_data=sample.INPUT)
    answer = runner.state_manager.get("final_answer")
    checkpoints = [c for c in store.list(runner.run_id) if c.status == "RUNNING"]
    assert answer and len(checkpoints) > 20
    for checkpoint in checkpoints:
        agent = sample.build()
        agent.context.io_recorder = IOReplayer(store, runner.run_id, strict=True)
        for node in agent.root.iterate():
            if getattr(node, "model_client", None) is not None:
                node.model_client = ModelClient(ScriptedProvider([]))  # a replay never asks the model
        again = agent.make_runner(checkpointer=store)
        again.restore(checkpoint.id)
        await again.run()
        assert again.state_manager.get("final_answer") == answer, f"replay from checkpoint {checkpoint.id}"
    store.close()
