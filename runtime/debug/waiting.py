"""What a continuing run waits for: the async nodes whose work is still in flight. A local session and
the debug server (for an attached studio) name the same nodes."""

from __future__ import annotations

from collections.abc import Mapping

from py_trees.behaviour import Behaviour
from py_trees.common import Status

from ..engine.behaviour import AsyncBehaviour


def in_flight(nodes: Mapping[str, Behaviour]) -> list[str]:
    """The paths of async nodes running work that has not finished yet."""
    return [path for path, node in nodes.items()
            if isinstance(node, AsyncBehaviour) and node.status == Status.RUNNING
            and node.async_task is not None and not node.async_task.done()]
