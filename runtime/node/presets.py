"""`create_react_node`: the ReAct loop as a ready-made subtree, and the state it expects.

    LoopUntilSuccess  <name>            max_iterations, abort: token budget, a failed model call or round of tools
    └── Sequence      <name>.loop       memory=True
        ├── AgentLLMNode   <name>.llm   reason: tool calls, or the final answer (done)
        ├── ToolExecutor   <name>.tools act: run the calls, append the observations
        └── StateCondition <name>.done  done → SUCCESS ends the loop; FAILURE → next round

When the loop stops early it writes `InteractionKeys.TERMINATION` (in its namespace):
reason `"max_iterations"` when the rounds ran out, `"budget_exhausted"` when the token
budget was spent (logged at ERROR), `"aborted"` when the model call or the round of tools
failed (that node is then FAILURE with its `last_error`).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated, Any

from py_trees.common import Status
from pydantic import BaseModel, ConfigDict, Field

from ..config import ReActConfig
from ..context import ContextBuilderProtocol
from ..messages import Message, ToolCall
from ..state import Ephemeral
from ..tools import Tool, ToolProvider
from .calls import ToolRunner
from .composites import LoopUntilSuccess
from .composites import Sequence as SequenceNode
from .condition import StateCondition
from .llm import AgentLLMNode
from .tool_executor import ToolExecutor
from .toolbox import ToolBox


class ReActState(BaseModel):
    """The ReAct state contract (seed's typical schema), with `llm.usage` and `tool_effects`.

    `rounds` must be run-scoped: `tool_choice` and the usage count restart at `rounds == 0`.
    """

    model_config = ConfigDict(populate_by_name=True)

    task: str | None = None
    messages: Annotated[list[Message], operator.add] = Field(default_factory=list)
    done: Annotated[bool, Ephemeral(scope="run")] = False
    final_answer: Annotated[str | None, Ephemeral(scope="run")] = None
    actions: Annotated[list[ToolCall], Ephemeral(scope="step")] = Field(default_factory=list)
    rounds: Annotated[int, Ephemeral(scope="run")] = 0
    streaming_output: Annotated[str, Ephemeral(scope="run")] = ""
    usage: Annotated[dict[str, int], Ephemeral(scope="run")] = Field(default_factory=dict, alias="llm.usage")
    tool_effects: list[str] = Field(default_factory=list)


def create_react_node(
    name: str = "ReActAgent",
    namespace: str | None = None,
    model_client: Any = None,
    tools: Sequence[Tool] | None = None,
    tool_providers: Sequence[ToolProvider] | None = None,
    tool_provider_context: Any = None,
    tool_runner: ToolRunner | None = None,
    constraints: Any = None,
    context_builder: ContextBuilderProtocol | None = None,
    config: ReActConfig | None = None,
) -> LoopUntilSuccess:
    """Build the ReAct subtree. Providers are asked for their tools on the first round;
    static `tools` win over provided tools of the same name.

    `model_client` may be None when the run's `RunContext.model_client` provides one;
    the calls of a round run in parallel (`config.parallel_tool_calls`, default), a tool that
    is not parallel-safe alone (`ToolExecutor`).
    """
    config = config or ReActConfig()
    keys = config.keys
    toolbox = ToolBox(tools, tool_providers, tool_provider_context)
    llm = AgentLLMNode(f"{name}.llm", model_client=model_client, tools=toolbox, config=config,
                       context_builder=context_builder, namespace=namespace)
    executor = ToolExecutor(f"{name}.tools", tools=toolbox, tool_runner=tool_runner, constraints=constraints,
                            execution_mode="auto" if config.parallel_tool_calls else "serial", keys=keys,
                            namespace=namespace)
    done = StateCondition(f"{name}.done", key=keys.done, op="truthy", namespace=namespace)
    body = SequenceNode(f"{name}.loop", memory=True, children=[llm, executor, done])

    def abort() -> bool | str:
        """Stop on a failed model call (the client already retried) or a failed round of tools (the
        model must not be asked again with its calls unanswered), or on a spent budget."""
        if Status.FAILURE in (llm.status, executor.status):
            return True
        budget = config.max_budget_tokens
        if budget is None or loop.read_state(keys.done) or not loop.read_state(keys.rounds):
            return False  # an answer already given is never thrown away
        spent = (loop.read_state(keys.usage) or {}).get("total_tokens", 0) >= budget
        return "budget_exhausted" if spent else False

    loop = LoopUntilSuccess(name, body, max_iterations=config.effective_max_iterations,
                                       abort_condition=abort, namespace=namespace)
    loop.answer_node = llm
    return loop


__all__ = ["ReActState", "create_react_node"]
