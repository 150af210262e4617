"""What a run between two ticks waits for: the async nodes whose work is still in flight. A local session
and the debug server (for an attached studio) name the same nodes. With none in flight, the nodes that
returned RUNNING with nothing pending (`idle_running`: a plain py_trees decorator such as `Repeat`, which
waits to be ticked again) are named instead: only a wake from outside the tree moves such a run."""

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


def idle_running(nodes: Mapping[str, Behaviour]) -> list[str]:
    """The paths of RUNNING nodes none of whose children runs: where the tree stays RUNNING."""
    return [path for path, node in nodes.items() if node.status == Status.RUNNING
            and not any(child.status == Status.RUNNING for child in node.children)]


def waiting_for(nodes: Mapping[str, Behaviour]) -> str:
    """What a run that cannot tick yet waits for, said in one line."""
    if flying := in_flight(nodes):
        return f"waiting for {', '.join(flying)}"
    idle = ", ".join(idle_running(nodes)) or "the tree"
    return f"waiting for a wake: {idle} RUNNING, no work in flight (a node needing another tick must wake the runner)"
