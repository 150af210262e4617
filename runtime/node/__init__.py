"""Every built-in node, importable from one place."""

from .base import AsyncNode, Decorator, Node
from .composites import LoopUntilSuccess, Parallel, Selector, Sequence
from .condition import StateCondition
from .decorator import FunctionNode, node
from .log import Log
from .timeout import Timeout
from .wait import Wait

__all__ = [
    "AsyncNode",
    "Decorator",
    "FunctionNode",
    "Log",
    "LoopUntilSuccess",
    "Node",
    "Parallel",
    "Selector",
    "Sequence",
    "StateCondition",
    "Timeout",
    "Wait",
    "node",
]
