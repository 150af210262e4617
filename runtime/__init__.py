"""Jianmu runtime: behaviour-tree LLM agents on py_trees, driven by an event-driven runner.

The names most programs need are importable from here:

    from runtime import Agent, CalculatorTool, ModelClient, ScriptedProvider, create_react_node, human
"""

import logging

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

# A library says nothing on the user's terminal by itself: its records go to the handlers the program
# configures (the CLI's: studio/logs.py), never to Python's last-resort stderr handler.
for _name in ("runtime", "jianmu"):  # `jianmu.log` is the Log node's logger
    logging.getLogger(_name).addHandler(logging.NullHandler())

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
