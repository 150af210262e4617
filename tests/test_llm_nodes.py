"""SimpleLLMNode and AgentLLMNode: context building, persisting, empty replies, streaming, recording."""

from __future__ import annotations

from py_trees.common import Status

from runtime import (
    Agent,
    CalculatorTool,
    ContextBuilder,
    ModelClient,
    ReActConfig,
    ReactiveRunner,
    ReActState,
    RunContext,
    RuntimeEventBus,
    ScriptedProvider,
    create_react_node,
    human,
    system,
)
from runtime.context import EMPTY_REPLY_NUDGE, PERSONA_DEFAULT_PROMPT
from runtime.node import AgentLLMNode, SimpleLLMNode

QUESTION = {"messages": [human("What is 25 * 4 + 10?")]}
CALC = {"tool_calls": [{"name": "calculator", "arguments": {"expression": "25 * 4 + 10"}}]}


async def run_node(node, input_data=QUESTION, context=None):
    runner = ReactiveRunner(node, ReActState, context)
    status = await runner.run(input_data=input_data)
    return status, runner.state_manager.model


async def test_simple_llm_node_makes_one_call_and_persists_it():
    provider = ScriptedProvider(["110"])
    node = SimpleLLMNode("ask", model_client=ModelClient(provider),
                         config=ReActConfig(system_prompt="Be brief."))
    status, state = await run_node(node)
    assert status == Status.SUCCESS
    assert state.model_extra["text_output"] == "110"
    assert (state.done, state.final_answer) == (True, "110")  # seed 001's port table
    assert [m.role for m in state.messages] == ["user", "assistant"]
    assert state.usage["total_tokens"] > 0
    [request] = provider.requests
    assert request.messages[0] == system("Be brief.")  # plain preset: no ReAct protocol
    assert request.config.tools is None


async def test_simple_llm_node_output_ports_can_be_rebound():
    """Seed 001's port table: the reply goes to custom state keys (done, final_answer, messages)."""
    node = SimpleLLMNode("ask", model_client=ModelClient(ScriptedProvider(["hi"]))).bind(
        outputs={"text_output": "summary", "final_answer": "reply", "done": "answered", "messages": "history"})
    _, state = await run_node(node)
    extra = state.model_extra
    assert (extra["summary"], extra["reply"], extra["answered"]) == ("hi", "hi", True)
    assert [m.content for m in extra["history"]] == ["hi"] and state.messages[-1].role == "user"
    assert (state.done, state.final_answer) == (False, None)  # the default keys are left alone


async def test_model_client_may_come_from_the_run_context():
    node = SimpleLLMNode("ask")
    _, state = await run_node(node, context=RunContext(model_client=ModelClient(ScriptedProvider(["ok"]))))
    assert state.messages[-1].content == "ok"


async def test_default_react_context_has_persona_protocol_and_tools():
    provider = ScriptedProvider(["110"])
    node = AgentLLMNode("llm", model_client=ModelClient(provider), tools=[CalculatorTool()])
    await run_node(node)
    prompt = provider.requests[0].messages[0]
    assert prompt.role == "system" and prompt.content.startswith(PERSONA_DEFAULT_PROMPT)
    assert "You do NOT need to format tool calls as text." in prompt.content
    assert "calculator(expression: string)" in prompt.content
    assert provider.requests[0].config.tools[0]["function"]["name"] == "calculator"


async def test_system_prompt_replaces_the_persona():
    provider = ScriptedProvider(["110"])
    node = AgentLLMNode("llm", model_client=ModelClient(provider), config=ReActConfig(system_prompt="Be a calc."))
    await run_node(node)
    content = provider.requests[0].messages[0].content
    assert content.startswith("Be a calc.") and PERSONA_DEFAULT_PROMPT not in content


async def test_explicit_builder_wins_over_prompt_runtime_and_system_prompt():
    class Fixed:
        def __init__(self, text):
            self.text = text

        def build(self, messages, *, tools_description=""):
            return [system(self.text), *messages]

    provider = ScriptedProvider(["a", "b"])
    runtime_prompt = Fixed("from the run")
    config = ReActConfig(system_prompt="ignored")
    explicit = AgentLLMNode("llm", model_client=ModelClient(provider), config=config, context_builder=Fixed("mine"))
    await run_node(explicit, context=RunContext(prompt_runtime=runtime_prompt))
    plain = AgentLLMNode("llm", model_client=ModelClient(provider), config=config)
    await run_node(plain, context=RunContext(prompt_runtime=runtime_prompt))
    assert [r.messages[0].content for r in provider.requests] == ["mine", "from the run"]


def test_resolve_for_llm_precedence():
    explicit = ContextBuilder("x")
    assert ContextBuilder.resolve_for_llm(explicit, prompt_runtime=ContextBuilder("y")) is explicit
    plain = ContextBuilder.resolve_for_llm(system_prompt="s", prefer_react=False)
    assert plain.build([human("q")]) == [system("s"), human("q")]
    assert ContextBuilder.resolve_for_llm(prefer_react=False).build([human("q")]) == [human("q")]


async def test_agent_node_persists_a_round():
    provider = ScriptedProvider([CALC])
    node = AgentLLMNode("llm", model_client=ModelClient(provider), tools=[CalculatorTool()])
    _, state = await run_node(node)
    assert state.rounds == 1 and state.done is False and state.final_answer == ""
    assert [a.name for a in state.actions] == ["calculator"]
    assert state.messages[-1].tool_calls == tuple(state.actions)


async def test_an_empty_reply_is_retried_once_with_a_nudge():
    usage = {"prompt_tokens": 4, "completion_tokens": 1, "total_tokens": 5}
    provider = ScriptedProvider([{"content": "  ", "usage": usage}, {"content": "110", "usage": usage}])
    node = AgentLLMNode("llm", model_client=ModelClient(provider), config=ReActConfig(tool_choice="auto"))
    status, state = await run_node(node)
    assert status == Status.SUCCESS and state.final_answer == "110" and state.done
    retry = provider.requests[1]
    assert retry.messages[-1] == human(EMPTY_REPLY_NUDGE)
    assert retry.config.tool_choice == provider.requests[0].config.tool_choice
    assert state.usage["total_tokens"] == 10
    assert [m.content for m in state.messages] == ["What is 25 * 4 + 10?", "110"]  # the nudge is not kept


async def test_a_second_empty_reply_is_an_error_not_an_answer():
    bus = RuntimeEventBus()
    provider = ScriptedProvider(["", ""])
    root = create_react_node(model_client=ModelClient(provider), tools=[CalculatorTool()])
    agent = Agent(root)
    agent.runner = agent.make_runner(event_bus=bus)
    result = await agent.run(QUESTION)
    assert (result.result_type, result.termination_reason, result.final_answer) == ("error", "error", None)
    assert "EmptyReplyError" in result.error and "empty reply twice" in result.error
    assert any(e.type == "node.error" and "empty reply" in e.payload["error"] for e in bus.history)
    assert len(provider.requests) == 2


async def test_streaming_writes_streaming_output_and_text_deltas():
    bus = RuntimeEventBus()
    node = AgentLLMNode("llm", model_client=ModelClient(ScriptedProvider(["twenty five times four"])),
                        config=ReActConfig(stream=True))
    runner = ReactiveRunner(node, ReActState, event_bus=bus)
    await runner.run(input_data=QUESTION)
    assert runner.state_manager.model.streaming_output == "twenty five times four"
    assert [e.payload["delta"] for e in bus.history if e.type == "text.delta"] == [
        "twenty ", "five ", "times ", "four"]


class Recorder:
    def __init__(self):
        self.model_calls = []
        self.tool_calls = []

    async def model_call(self, node_path, round, attempt, messages, config, call):
        self.model_calls.append((node_path, round, attempt))
        return await call()

    async def tool_call(self, node_path, round, index, tool_name, arguments, call):
        self.tool_calls.append((node_path, round, index, tool_name, arguments))
        return await call()


async def test_every_model_and_tool_call_goes_through_the_recorder():
    recorder = Recorder()
    script = [{"tool_calls": [{"name": "calculator", "arguments": {"expression": "1+1"}},
                              {"name": "calculator", "arguments": {"expression": "2+2"}}]},
              "", "4"]
    root = create_react_node(model_client=ModelClient(ScriptedProvider(script)), tools=[CalculatorTool()])
    result = await Agent(root, context=RunContext(io_recorder=recorder)).run(QUESTION)
    assert result.final_answer == "4"
    llm = "ReActAgent/ReActAgent.loop/ReActAgent.llm"
    assert recorder.model_calls == [(llm, 0, 0), (llm, 1, 0), (llm, 1, 1)]
    tools = "ReActAgent/ReActAgent.loop/ReActAgent.tools"
    assert recorder.tool_calls == [(tools, 1, 0, "calculator", {"expression": "1+1"}),
                                   (tools, 1, 1, "calculator", {"expression": "2+2"})]


async def test_the_final_answer_call_is_recorded_apart():
    recorder = Recorder()
    root = create_react_node(model_client=ModelClient(ScriptedProvider([CALC, "best effort"])),
                             tools=[CalculatorTool()],
                             config=ReActConfig(max_iterations=1, on_max_iterations="final_answer"))
    result = await Agent(root, context=RunContext(io_recorder=recorder)).run(QUESTION)
    assert result.truncated and result.final_answer == "best effort"
    llm = "ReActAgent/ReActAgent.loop/ReActAgent.llm"
    assert recorder.model_calls == [(llm, 0, 0), (f"{llm}#final", 1, 0)]
