"""Every built-in node, importable from one place."""

from ..swarm.nodes import SendMessage, SpawnAgent, SwarmNode, WaitForever, WaitMessage
from .base import AsyncNode, Decorator, Node
from .composites import LoopUntilSuccess, Parallel, Selector, Sequence
from .condition import StateCondition
from .decorator import FunctionNode, node
from .evaluation import EvaluationNode, EvaluationState, GradeError
from .flattened import FlattenedAgentNode, SubtreeBuildError
from .llm import AgentLLMNode, EmptyReplyError, SimpleLLMNode
from .log import Log
from .plan_execute import PlanExecuteState, create_plan_execute_node
from .presets import ReActState, create_react_node
from .skill import Skill, SkillInputError, SkillNode
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
    "EvaluationNode",
    "EvaluationState",
    "FlattenedAgentNode",
    "FunctionNode",
    "GradeError",
    "Log",
    "LoopUntilSuccess",
    "Node",
    "Parallel",
    "PlanExecuteState",
    "ReActState",
    "Selector",
    "SendMessage",
    "Sequence",
    "SimpleLLMNode",
    "Skill",
    "SkillInputError",
    "SkillNode",
    "SpawnAgent",
    "StateCondition",
    "SubtreeBuildError",
    "SwarmNode",
    "Timeout",
    "ToolBox",
    "ToolExecutor",
    "ToolNode",
    "Wait",
    "WaitForever",
    "WaitMessage",
    "create_plan_execute_node",
    "create_react_node",
    "node",
]
