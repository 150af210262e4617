"""Every built-in node, importable from one place."""

from .base import AsyncNode, Decorator, Node
from .composites import LoopUntilSuccess, Parallel, Selector, Sequence
from .condition import StateCondition
from .decorator import FunctionNode, node
from .llm import AgentLLMNode, EmptyReplyError, SimpleLLMNode
from .log import Log
from .presets import ReActState, create_react_node
from .timeout import Timeout
from .tool_executor import ToolExecutor
from .tool_node import ToolNode
from .toolbox import ToolBox
from .wait import Wait

__all__ = [
    "AgentLLMNode",
    "AsyncNode",
    "Decorator",
    "EmptyReplyError",
    "FunctionNode",
    "Log",
    "LoopUntilSuccess",
    "Node",
    "Parallel",
    "ReActState",
    "Selector",
    "Sequence",
    "SimpleLLMNode",
    "StateCondition",
    "Timeout",
    "ToolBox",
    "ToolExecutor",
    "ToolNode",
    "Wait",
    "create_react_node",
    "node",
]
