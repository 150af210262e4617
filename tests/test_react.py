"""The ReAct loop end to end: rounds, tool_choice, budget, iteration caps, telemetry."""

from __future__ import annotations

from py_trees.common import Status

from runtime import (
    Agent,
    CalculatorTool,
    ModelClient,
    ReActConfig,
    ReactiveRunner,
    ReActState,
    RunContext,
    RuntimeEventBus,
    ScriptedProvider,
    create_react_node,
    human,
)
from runtime.config import ModelResilienceConfig
from runtime.model import ModelConnectionError
from runtime.state import InteractionKeys

QUESTION = {"messages": [human("What is 25 * 4 + 10?")]}
CALC = {"tool_calls": [{"name": "calculator", "arguments": {"expression": "25 * 4 + 10"}}]}


def calc_call(expression: str, tokens: int | None = None) -> dict:
    reply = {"tool_calls": [{"name": "calculator", "arguments": {"expression": expression}}]}
    if tokens is not None:
        reply["usage"] = {"prompt_tokens": tokens - 1, "completion_tokens": 1, "total_tokens": tokens}
    return reply


def react(script, **config) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(script)
    root = create_react_node(model_client=ModelClient(provider), tools=[CalculatorTool()],
                             config=ReActConfig(**config))
    return Agent(root, state_schema=ReActState), provider


async def test_two_rounds_then_done():
    provider = ScriptedProvider([CALC, "25 * 4 + 10 = 110"])
    root = create_react_node(model_client=ModelClient(provider), tools=[CalculatorTool()])
    runner = ReactiveRunner(root, ReActState)
    assert await runner.run(max_ticks=20, input_data=QUESTION) == Status.SUCCESS
    state = runner.state_manager.model
    assert state.done is True and state.rounds == 2
    assert [m.role for m in state.messages] == ["user", "assistant", "tool", "assistant"]
    assert state.messages[2].content == "110" and state.messages[2].tool_call_id == "call_1"
    assert "110" in state.final_answer
    assert state.actions == []  # step-scoped: no stale calls for the next round
    assert state.usage["total_tokens"] > 0


async def test_tool_choice_on_first_round_only():
    choice = {"type": "function", "function": {"name": "calculator"}}
    agent, provider = react([CALC, "110"], tool_choice=choice)
    assert (await agent.run(QUESTION)).final_answer == "110"
    assert [r.config.tool_choice for r in provider.requests] == [choice, None]
    assert all(r.config.tools for r in provider.requests)


async def test_tool_choice_kept_by_retries_and_fallbacks_of_the_first_round():
    class Flaky(ScriptedProvider):
        failures = 2

        async def complete(self, messages, config, on_delta=None):
            self.seen.append((config.model, config.tool_choice))
            if self.failures:
                self.failures -= 1
                raise ModelConnectionError("connection reset")
            return await super().complete(messages, config, on_delta)

    provider = Flaky([CALC, "110"])
    provider.seen = []
    client = ModelClient(provider, model="main", resilience=ModelResilienceConfig(
        max_retries=1, backoff_initial=0, fallback_models=["backup"]))
    root = create_react_node(model_client=client, tools=[CalculatorTool()],
                             config=ReActConfig(tool_choice="required", model=None))
    result = await Agent(root).run(QUESTION)
    assert result.final_answer == "110"
    assert provider.seen == [("main", "required"), ("main", "required"), ("backup", "required"), ("main", None)]


async def test_legacy_extra_params_tool_choice_has_first_round_semantics():
    agent, provider = react([CALC, "110"], extra_params={"tool_choice": "required", "seed": 7})
    await agent.run(QUESTION)
    first, second = (r.config for r in provider.requests)
    assert (first.tool_choice, second.tool_choice) == ("required", None)
    assert first.extra_params == second.extra_params == {"seed": 7}


async def test_a_fresh_run_starts_from_round_zero_again():
    usage = {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}
    script = [{**CALC, "usage": usage}, {"content": "110", "usage": usage}]
    agent, provider = react(script * 2, tool_choice="required")
    await agent.run(QUESTION)
    result = await agent.run(QUESTION)
    assert result.final_answer == "110" and result.state.rounds == 2
    assert [r.config.tool_choice for r in provider.requests] == ["required", None, "required", None]
    assert result.usage.total_tokens == 20  # usage restarts with the run
    assert len(result.state.messages) == 8  # the conversation itself goes on


async def test_token_budget_aborts_the_loop_with_an_error_log(caplog):
    agent, provider = react([calc_call("1+1", 60), calc_call("2+2", 60), calc_call("3+3", 60), "6"],
                            max_budget_tokens=100)
    with caplog.at_level("ERROR", logger="runtime.node.composites"):
        result = await agent.run(QUESTION)
    assert (result.result_type, result.termination_reason) == ("error", "budget_exhausted")
    assert len(provider.requests) == 2 and result.usage.total_tokens == 120
    assert result.final_answer is None and "100" in result.error
    assert result.state.model_extra[InteractionKeys.TERMINATION]["reason"] == "budget_exhausted"
    [record] = [r for r in caplog.records if r.levelname == "ERROR"]
    assert "ReActAgent" in record.getMessage() and "budget_exhausted" in record.getMessage()


async def test_token_budget_never_discards_an_answer():
    answer = {"content": "110", "usage": {"prompt_tokens": 500, "completion_tokens": 1, "total_tokens": 501}}
    agent, _ = react([calc_call("25*4+10", 10), answer], max_budget_tokens=100)
    result = await agent.run(QUESTION)
    assert (result.result_type, result.final_answer) == ("answer", "110")


async def test_on_max_iterations_error():
    agent, provider = react([calc_call("1+1"), calc_call("2+2")], max_iterations=2)
    result = await agent.run(QUESTION)
    assert (result.status, result.result_type, result.termination_reason) == (
        Status.FAILURE, "error", "max_iterations")
    assert result.observations == [] and result.final_answer is None and not result.truncated
    assert len(provider.requests) == 2


async def test_on_max_iterations_return_observations():
    agent, _ = react([calc_call("1+1"), calc_call("2+2")], max_iterations=2,
                     on_max_iterations="return_observations")
    result = await agent.run(QUESTION)
    assert (result.result_type, result.termination_reason) == ("error", "max_iterations")
    assert result.observations == ["2", "4"]


async def test_on_max_iterations_final_answer_makes_one_call_without_tools():
    agent, provider = react([calc_call("1+1"), calc_call("2+2"), "probably 4"], max_iterations=2,
                            on_max_iterations="final_answer")
    result = await agent.run(QUESTION)
    assert (result.result_type, result.termination_reason) == ("answer", "max_iterations")
    assert result.final_answer == "probably 4" and result.truncated
    last = provider.requests[-1]
    assert len(provider.requests) == 3 and last.config.tools is None and last.config.tool_choice is None
    assert "no more tools" in last.messages[-1].content
    assert result.state.messages[-1].content == "probably 4"


async def test_hard_limit_caps_max_iterations():
    agent, provider = react([calc_call("1+1")] * 5, max_iterations=5, max_iterations_hard_limit=2)
    result = await agent.run(QUESTION)
    assert result.termination_reason == "max_iterations" and len(provider.requests) == 2
    assert agent.root.max_iterations == 2


async def test_a_host_caps_the_iterations_of_a_tree_it_did_not_build():
    """Seed 003: the host's hard limit wins over the tree's own max_iterations, never the reverse."""
    provider = ScriptedProvider([calc_call("1+1")] * 5)
    root = create_react_node(model_client=ModelClient(provider), tools=[CalculatorTool()],
                             config=ReActConfig(max_iterations=5))  # built by someone else
    agent = Agent(root, max_iterations_hard_limit=2)
    result = await agent.run(QUESTION)
    assert result.termination_reason == "max_iterations" and len(provider.requests) == 2
    assert agent.runner.state_manager.get(InteractionKeys.TERMINATION)["max_iterations"] == 2
    assert Agent(create_react_node(model_client=ModelClient(ScriptedProvider([])), config=ReActConfig(
        max_iterations=1)), max_iterations_hard_limit=3).root.effective_max_iterations == 1  # min(), not max()


async def test_a_host_cap_in_the_run_context_applies_to_every_loop():
    provider = ScriptedProvider([calc_call("1+1")] * 5)
    root = create_react_node(model_client=ModelClient(provider), tools=[CalculatorTool()],
                             config=ReActConfig(max_iterations=5))
    result = await Agent(root, context=RunContext(max_iterations_hard_limit=3)).run(QUESTION)
    assert result.termination_reason == "max_iterations" and len(provider.requests) == 3


async def test_a_host_cap_from_jianmu_yaml(no_config_file):
    (no_config_file / "jianmu.yaml").write_text("limits:\n  max_iterations_hard_limit: 1\n")
    agent, provider = react([calc_call("1+1")] * 5, max_iterations=5)
    result = await agent.run(QUESTION)
    assert result.termination_reason == "max_iterations" and len(provider.requests) == 1


async def test_an_abort_true_from_the_start_makes_no_model_call():
    provider = ScriptedProvider(["never asked"])
    root = create_react_node(model_client=ModelClient(provider), config=ReActConfig())
    root.abort_condition = lambda: "stopped_by_host"
    agent = Agent(root)
    result = await agent.run(QUESTION)
    assert provider.requests == [] and result.result_type == "error" and result.state.rounds == 0
    assert agent.runner.state_manager.get(InteractionKeys.TERMINATION)["reason"] == "stopped_by_host"


async def test_a_failed_model_call_ends_the_run_with_an_error():
    agent, provider = react([CALC])  # the script runs out in round 2
    result = await agent.run(QUESTION)
    assert (result.result_type, result.termination_reason) == ("error", "error")
    assert result.error.startswith("ReActAgent/ReActAgent.loop/ReActAgent.llm: ScriptExhaustedError")
    assert len(provider.requests) == 2  # not retried by the loop


async def test_telemetry_events():
    agent, _ = react([CALC, "110"])
    bus = RuntimeEventBus()
    agent.runner = agent.make_runner(event_bus=bus)
    await agent.run(QUESTION)
    seen = [e for e in bus.history if e.type.startswith(("reply.", "model.", "tool.", "text."))]
    assert [e.type for e in seen] == [
        "reply.started", "model.call.started", "model.call.completed", "reply.completed",
        "tool.call.started", "tool.call.completed",
        "reply.started", "model.call.started", "model.call.completed", "reply.completed"]
    by_type = {e.type: e for e in seen}
    assert by_type["reply.completed"].payload["usage"]["total_tokens"] > 0
    assert by_type["model.call.completed"].payload["model"] == "scripted"
    started = next(e for e in seen if e.type == "tool.call.started")
    assert started.payload["arguments"] == {"expression": "25 * 4 + 10"}
    assert started.node == "ReActAgent/ReActAgent.loop/ReActAgent.tools"
    assert "duration_ms" in by_type["tool.call.completed"].payload


async def test_namespaced_loop_keeps_its_state_apart():
    provider = ScriptedProvider([CALC, "110"])
    root = create_react_node(namespace="calc", model_client=ModelClient(provider), tools=[CalculatorTool()])
    result = await Agent(root).run(QUESTION)  # the input goes to the agent's namespace
    assert (result.result_type, result.final_answer) == ("answer", "110")
    extra = result.state.model_extra
    assert extra["calc.rounds"] == 2 and len(extra["calc.messages"]) == 4
    assert result.state.rounds == 0 and result.state.messages == []


async def test_react_config_resilience_applies_to_the_llm_nodes_calls():
    class Flaky(ScriptedProvider):
        async def complete(self, messages, config, on_delta=None):
            self.seen.append(config.model)
            if config.model == "main":
                raise ModelConnectionError("connection reset")
            return await super().complete(messages, config, on_delta)

    provider = Flaky(["110"])
    provider.seen = []
    client = ModelClient(provider, model="main")  # its own resilience: 2 retries, no fallback
    config = ReActConfig(model=None, resilience=ModelResilienceConfig(max_retries=0, fallback_models=["backup"]))
    result = await Agent(create_react_node(model_client=client, config=config)).run(QUESTION)
    assert result.final_answer == "110"
    assert provider.seen == ["main", "backup"]
