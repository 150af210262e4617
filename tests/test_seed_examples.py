"""The seeds' own examples, run as the seeds write them (`jianmu.X` read as `runtime.X`).

Each block between `# -- seed` and `# --` is the seed's code unchanged; around it, only
what the seed leaves to the reader (a model client, a question, the assertions).
"""

from __future__ import annotations

import operator
import warnings
from typing import Annotated, List, Optional  # noqa: UP035 - the seed's own spelling

import pytest
from openai_server import FakeServer, completion, json_reply
from py_trees.common import Status
from pydantic import BaseModel, Field

from runtime import CalculatorTool, ModelClient, ReactiveRunner, ScriptedProvider, human
from runtime.messages import Message, ToolCall
from runtime.node import AgentLLMNode, Sequence, StateCondition, ToolExecutor
from runtime.node.contract import StateContractWarning
from runtime.state import Ephemeral, StateKeys
from runtime.tools import Tool

CALC = {"tool_calls": [{"name": "calculator", "arguments": {"expression": "25 * 4 + 10"}}]}


# -- seed 000: the typical state schema (官方 Demo 的标准 ReAct 状态定义)
class ReActState(BaseModel):
    task: Optional[str] = None  # noqa: UP045
    messages: Annotated[List[Message], operator.add] = Field(default_factory=list)  # noqa: UP006
    done: Annotated[bool, Ephemeral(scope="run")] = False
    final_answer: Annotated[Optional[str], Ephemeral(scope="run")] = None  # noqa: UP045
    actions: Annotated[List[ToolCall], Ephemeral(scope="step")] = Field(default_factory=list)  # noqa: UP006
    rounds: Annotated[int, Ephemeral(scope="run")] = 0
    streaming_output: Annotated[str, Ephemeral(scope="run")] = ""
# --


async def test_seed_000_minimal_usage():
    my_model_client = ModelClient(ScriptedProvider([CALC, "25 * 4 + 10 = 110"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", StateContractWarning)  # the seed's own schema keeps the contract
        # -- seed 000: 最简用法
        from runtime.node.presets import create_react_node  # noqa: I001 - the seed's order
        from runtime import Agent
        from runtime.config import ReActConfig  # noqa: F401 - imported by the seed

        root = create_react_node(
            model_client=my_model_client,
            tools=[CalculatorTool()],
        )
        agent = Agent(root, state_schema=ReActState)
        result = await agent.run(input_data={"messages": [human("What is 25 * 4 + 10?")]})
        # --
    assert (result.result_type, result.final_answer) == ("answer", "25 * 4 + 10 = 110")
    assert [m.role for m in result.state.messages] == ["user", "assistant", "tool", "assistant"]


async def test_seed_000_static_tools_and_providers_with_resolve_env_override(monkeypatch):
    server = FakeServer()
    await server.start()
    server.script(json_reply(completion(None, [{"id": "c1", "type": "function", "function": {
        "name": "calculator", "arguments": '{"expression": "2+3"}'}}])), json_reply(completion("5")))
    monkeypatch.setenv("JIANMU_BASE_URL", server.url)
    monkeypatch.setenv("JIANMU_API_KEY", "sk-seed")
    monkeypatch.setenv("JIANMU_MODEL", "seed-model")
    from runtime import Agent
    from runtime.node.presets import create_react_node
    from runtime.tools import CalculatorToolProvider

    try:
        # -- seed 000: 工具提供者集成
        root = create_react_node(
            model_client=ModelClient.resolve(env_override=True),
            tools=[CalculatorTool()],           # 静态工具
            tool_providers=[CalculatorToolProvider()],  # 动态提供者
        )
        # --
        result = await Agent(root, state_schema=ReActState).run({"messages": [human("2+3?")]})
    finally:
        await server.stop()
    assert result.final_answer == "5"
    assert [t["function"]["name"] for t in server.requests[0].body["tools"]] == ["calculator"]
    assert server.requests[1].body["messages"][-1] == {"role": "tool", "content": "5", "tool_call_id": "c1"}


class DuckDuckGoSearchTool(Tool):
    """Search the web (here: an offline stand-in; the seed names a web tool this project does not ship)."""

    name = "duckduckgo_search"

    def run(self, query: str) -> str:
        return "Paris is the capital of France."


class WeatherTool(Tool):
    """Today's weather in a city (an offline stand-in, like the search)."""

    name = "weather"

    def run(self, city: str) -> str:
        return f"{city}: 18 C, clear"


async def test_seed_000_many_tools_a_system_prompt_and_a_token_budget():
    search = {"tool_calls": [{"name": "duckduckgo_search", "arguments": {"query": "capital of France"}}]}
    provider = ScriptedProvider([search, "Paris."])
    model_client = ModelClient(provider)
    from runtime.config import ReActConfig
    from runtime.node.presets import create_react_node

    # -- seed 000: 复杂场景 —— 多工具 + 自定义系统提示 + Token 预算
    root = create_react_node(
        name="ResearchAgent",
        model_client=model_client,
        tools=[CalculatorTool(), DuckDuckGoSearchTool(), WeatherTool()],
        config=ReActConfig(
            model="gpt-4o",
            max_iterations=15,
            max_budget_tokens=32000,
            system_prompt="You are a research assistant. Always verify facts with tools.",
            tool_choice={
                "type": "function",
                "function": {"name": "duckduckgo_search"},
            },
        ),
    )
    # --
    from runtime import Agent

    result = await Agent(root, state_schema=ReActState).run({"messages": [human("What is the capital of France?")]})
    assert (result.result_type, result.final_answer) == ("answer", "Paris.")
    assert root.name == "ResearchAgent" and root.max_iterations == 15
    first, second = provider.requests
    assert [t["function"]["name"] for t in first.config.tools] == ["calculator", "duckduckgo_search", "weather"]
    assert first.config.model == second.config.model == "gpt-4o"
    assert first.messages[0].content.startswith("You are a research assistant. Always verify facts with tools.")
    assert first.config.tool_choice == {"type": "function", "function": {"name": "duckduckgo_search"}}
    assert second.config.tool_choice is None  # the first round only
    assert result.state.messages[2].content == "Paris is the capital of France."


@pytest.mark.parametrize("namespace", [None, "agent"])
async def test_seed_000_loop_with_the_namespace_aware_predicate(namespace):
    from runtime.node.composites import LoopUntilSuccess

    keys = StateKeys()
    client = ModelClient(ScriptedProvider([CALC, "110"]))
    llm = AgentLLMNode("llm", model_client=client, tools=[CalculatorTool()], namespace=namespace)
    executor = ToolExecutor("tools", tools=[CalculatorTool()], namespace=namespace)
    # -- seed 000: StateCondition 的 predicate 模式
    done = StateCondition(
        predicate=lambda state: bool(
            getattr(state, keys.done, None)
            or (getattr(state, "model_extra", None) or {}).get(
                f"{namespace}.{keys.done}" if namespace else keys.done
            )
        ),
    )
    # --
    loop_body = Sequence("loop", memory=True, children=[llm, executor, done])
    state = ReActState
    # -- seed 000: 来自 test_react.py 的集成测试
    root = LoopUntilSuccess("agent", max_iterations=10, child=loop_body)
    runner = ReactiveRunner(root, state)
    # --
    runner.state_manager.update({"messages": [human("What is 25 * 4 + 10?")]}, namespace)
    # -- seed 000
    await runner.run(max_ticks=20)
    # --
    sm = runner.state_manager
    assert runner.status == Status.SUCCESS
    # 验证: 两轮迭代后 done=true, rounds=2, 4条消息(用户+AI+工具+AI)
    assert sm.get("done", namespace) is True and sm.get("rounds", namespace) == 2
    assert [m.role for m in sm.get("messages", namespace)] == ["user", "assistant", "tool", "assistant"]


async def test_seed_001_custom_async_node_with_bindings():
    # -- seed 001: 编写自定义异步节点
    from py_trees.common import Status

    from runtime.node.base import AsyncNode

    class NormalizeTextNode(AsyncNode):
        async def update_async(self) -> Status:
            raw_text = str(self.read_port("source_text", default=""))
            normalized = " ".join(raw_text.strip().lower().split())
            self.write_port("normalized_text", normalized)
            return Status.SUCCESS
    # --
    class TextState(BaseModel):
        text: str = ""
        normalized_text: str = ""

    # -- seed 001: bind()
    node = NormalizeTextNode(name="NormalizeText").bind(
        inputs={"source_text": "text"},           # 逻辑端口 source_text → 状态字段 text
        outputs={"normalized_text": "normalized_text"},  # 输出端口 normalized_text → 状态字段 normalized_text
    )
    # --
    runner = ReactiveRunner(node, TextState)
    assert await runner.run(input_data={"text": "  Hello   WORLD "}) == Status.SUCCESS
    assert runner.state_manager.get("normalized_text") == "hello world"


async def test_seed_001_node_decorator():
    from runtime.node.decorator import node

    # -- seed 001: @node 装饰器
    @node(name="my_processor")
    def process(state):
        return {"result": state["input"] * 2}
    # --
    class NumberState(BaseModel):
        input: int = 0
        result: int = 0

    runner = ReactiveRunner(process(), NumberState)
    assert await runner.run(input_data={"input": 21}) == Status.SUCCESS
    assert runner.state_manager.get("result") == 42
