"""create_react_node: the shape of the subtree and how tools are assembled."""

from __future__ import annotations

import pytest

from runtime import (
    Agent,
    CalculatorTool,
    ModelClient,
    ReActConfig,
    RunContext,
    ScriptedProvider,
    create_react_node,
    human,
    tool,
)
from runtime.node import AgentLLMNode, LoopUntilSuccess, Sequence, StateCondition, ToolExecutor
from runtime.tools import StaticToolProvider

QUESTION = {"messages": [human("What is 25 * 4 + 10?")]}


def test_the_subtree_shape_and_names():
    root = create_react_node(name="Calc", model_client=ModelClient(ScriptedProvider([])),
                             tools=[CalculatorTool()], config=ReActConfig(max_iterations=7))
    assert isinstance(root, LoopUntilSuccess) and root.name == "Calc" and root.max_iterations == 7
    assert root.abort_condition is not None
    [body] = root.children
    assert isinstance(body, Sequence) and body.memory and body.name == "Calc.loop"
    llm, executor, done = body.children
    assert isinstance(llm, AgentLLMNode) and llm.name == "Calc.llm"
    assert isinstance(executor, ToolExecutor) and executor.name == "Calc.tools"
    assert isinstance(done, StateCondition) and done.name == "Calc.done"
    assert llm.toolbox is executor.toolbox
    assert executor.execution_mode == "auto"


def test_parallel_tool_calls_off_means_serial():
    root = create_react_node(config=ReActConfig(parallel_tool_calls=False))
    assert root.children[0].children[1].execution_mode == "serial"


class CountingProvider(StaticToolProvider):
    def __init__(self, tools):
        super().__init__(tools)
        self.initialized = 0

    async def initialize(self):
        self.initialized += 1


async def test_providers_are_resolved_on_the_first_round_and_static_tools_win():
    @tool(name="calculator")
    def fake_calculator(expression: str) -> str:
        """Always 0."""
        return "0"

    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    provider = CountingProvider([fake_calculator, echo])
    script = ScriptedProvider([{"tool_calls": [{"name": "calculator", "arguments": {"expression": "2+2"}}]}, "4"])
    root = create_react_node(model_client=ModelClient(script), tools=[CalculatorTool()], tool_providers=[provider])
    assert provider.initialized == 0  # the factory stays synchronous
    agent = Agent(root)
    result = await agent.run(QUESTION)
    assert provider.initialized == 1
    assert result.state.messages[2].content == "4"  # the static calculator, not the provider's
    assert [t["function"]["name"] for t in script.requests[0].config.tools] == ["calculator", "echo"]
    await agent.run(QUESTION)
    assert provider.initialized == 2  # closed when the first run finished, opened again by the next


def test_a_schema_breaking_the_state_contract_warns_once_naming_the_key():
    import warnings
    from typing import Annotated

    import pytest
    from pydantic import BaseModel

    from runtime import ReactiveRunner, ReActState
    from runtime.node.contract import StateContractWarning
    from runtime.state import Ephemeral

    class LooseState(BaseModel):
        messages: list = []
        rounds: int = 0  # persistent: tool_choice would be lost on the next run
        actions: Annotated[list, Ephemeral(scope="run")] = []

    root = create_react_node(model_client=ModelClient(ScriptedProvider([])))
    with pytest.warns(StateContractWarning) as caught:
        ReactiveRunner(root, LooseState)
    assert sorted(str(w.message).split("'")[1] for w in caught) == ["actions", "rounds"]
    assert "ReAct key 'rounds' is not Ephemeral; declare it as Annotated[..., Ephemeral(scope='run')]" in str(
        next(w.message for w in caught if "'rounds'" in str(w.message)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ReactiveRunner(create_react_node(model_client=ModelClient(ScriptedProvider([]))), LooseState)  # once
        ReactiveRunner(create_react_node(model_client=ModelClient(ScriptedProvider([]))), ReActState)  # keeps it


def test_a_schema_without_rounds_warns_that_it_is_not_declared():
    """An undeclared `rounds` lands in the persistent overflow: it would survive a fresh run too."""
    import pytest
    from pydantic import BaseModel, ConfigDict

    from runtime import ReactiveRunner
    from runtime.node.contract import StateContractWarning

    class BareState(BaseModel):
        model_config = ConfigDict(extra="allow")
        messages: list = []

    with pytest.warns(StateContractWarning) as caught:
        ReactiveRunner(create_react_node(model_client=ModelClient(ScriptedProvider([]))), BareState)
    [warning] = caught
    assert str(warning.message).endswith("BareState: ReAct key 'rounds' is not declared; declare it as "
                                         "Annotated[..., Ephemeral(scope='run')] (seed 000's state contract)")


class ContextRecordingProvider(StaticToolProvider):
    def __init__(self, tools):
        super().__init__(tools)
        self.contexts: list[dict] = []

    async def get_tools(self, **kwargs):
        self.contexts.append(kwargs)
        return await super().get_tools(**kwargs)


class Tenant:
    """A host's own context object: not a mapping."""

    def __init__(self, name: str):
        self.name = name


async def test_tool_provider_context_may_be_any_object():
    """Seed 000: `tool_provider_context: Optional[Any]`; a mapping arrives as keyword arguments,
    anything else as `context=`."""
    tenant = Tenant("acme")
    provider = ContextRecordingProvider([CalculatorTool()])
    root = create_react_node(model_client=ModelClient(ScriptedProvider(["hi"])), tool_providers=[provider],
                             tool_provider_context=tenant)
    await Agent(root).run(QUESTION)
    assert provider.contexts == [{"context": tenant}]

    keyed = ContextRecordingProvider([CalculatorTool()])
    root = create_react_node(model_client=ModelClient(ScriptedProvider(["hi"])), tool_providers=[keyed],
                             tool_provider_context={"user": "ada"})
    await Agent(root).run(QUESTION)
    assert keyed.contexts == [{"user": "ada"}]


def test_a_provider_passed_as_the_model_client_says_how_to_wrap_it():
    with pytest.raises(TypeError) as info:
        create_react_node(name="Calc", model_client=ScriptedProvider(["hi"]))
    assert str(info.value) == ("AgentLLMNode 'Calc.llm': model_client is a ScriptedProvider, a model provider, not a "
                               "ModelClient; wrap it: model_client=ModelClient(ScriptedProvider(...)) or "
                               "ModelClient.resolve(provider)")


async def test_a_provider_in_the_run_context_fails_the_node_saying_how_to_wrap_it():
    root = create_react_node(name="Calc")
    result = await Agent(root, context=RunContext(model_client=ScriptedProvider(["hi"]))).run(QUESTION)
    assert result.termination_reason == "error" and "\n" not in result.error
    assert result.error.endswith("node 'Calc/Calc.loop/Calc.llm': model_client is a ScriptedProvider, a model "
                                 "provider, not a ModelClient; wrap it: model_client=ModelClient(ScriptedProvider(...)) "
                                 "or ModelClient.resolve(provider)")
