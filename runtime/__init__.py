"""Jianmu runtime: behaviour-tree LLM agents on py_trees, driven by an event-driven runner.

The names most programs need are importable from here:

    from runtime import Agent, CalculatorTool, ModelClient, ScriptedProvider, create_react_node, human
"""

from . import debug  # noqa: F401  (it sets how `Agent.run(debug=...)` serves a run: its debug server)
from .agent import Agent, AgentResult
from .config import ReActConfig, get_config
from .context import ContextBuilder, ContextBuilderProtocol
from .engine import ReactiveRunner, RunContext, RuntimeEvent, RuntimeEventBus
from .guard import ApprovalManager, GuardEnforcer
from .messages import Message, ToolCall, ai, human, system
from .model import ModelClient, ModelConfig, ScriptedProvider, Usage
from .node import ReActState, create_react_node
from .state import Ephemeral, StateKeys, StateManager
from .tools import CalculatorTool, Tool, ToolProvider, ToolSet, tool

__all__ = [
    "Agent",
    "AgentResult",
    "ApprovalManager",
    "CalculatorTool",
    "ContextBuilder",
    "ContextBuilderProtocol",
    "Ephemeral",
    "GuardEnforcer",
    "Message",
    "ModelClient",
    "ModelConfig",
    "ReActConfig",
    "ReActState",
    "ReactiveRunner",
    "RunContext",
    "RuntimeEvent",
    "RuntimeEventBus",
    "ScriptedProvider",
    "StateKeys",
    "StateManager",
    "Tool",
    "ToolCall",
    "ToolProvider",
    "ToolSet",
    "Usage",
    "ai",
    "create_react_node",
    "get_config",
    "human",
    "system",
    "tool",
]
