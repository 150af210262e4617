"""Dependency injection: how the runner hands services, state and its wake-up to nodes.

`RunContext` carries the services that must never be serialised into state;
`InjectPayload` bundles it with the `StateManager`, the runner's wake-up callback and its
tree-changed callback.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..config import get_config

if TYPE_CHECKING:
    from ..state import StateManager
    from .events import RuntimeEventBus


def _host_iteration_cap() -> int | None:
    return get_config().limits.max_iterations_hard_limit


@dataclass
class RunContext:
    model_client: Any = None
    approval_manager: Any = None
    sandbox: Any = None
    constraints: Any = None
    runtime: Any = None
    prompt_runtime: Any = None
    runtime_event_bus: RuntimeEventBus | None = None
    # records model/tool I/O of a run, or serves it back on replay (runtime.memory.checkpoint.io)
    io_recorder: Any = None
    # the host's cap on the iterations of every loop of the run, whoever built the tree: a loop
    # stops at min(its own max_iterations, this) (seed 003); default: jianmu.yaml's limits
    max_iterations_hard_limit: int | None = field(default_factory=_host_iteration_cap)


@dataclass(frozen=True)
class InjectPayload:
    context: RunContext | None
    state_manager: StateManager | None
    wake_up: Callable[[], None] | None
    # called by a node that reshaped the tree under itself (a deferred subtree compiled),
    # so the runner re-indexes paths and statuses and injects the new nodes
    tree_changed: Callable[[], None] | None = None


_receivers: tuple[type, ...] = ()  # the classes whose nodes take injections (`receives_injections`)


def receives_injections(cls: type) -> type:
    """Class decorator: nodes of `cls` are handed the payload by `inject_runtime_deps`. The node base
    classes (`runtime.engine.behaviour`) register themselves, so this module never imports them."""
    global _receivers
    _receivers = (*_receivers, cls)
    return cls


def inject_runtime_deps(node: Any, payload: InjectPayload) -> None:
    """Inject into Jianmu nodes; plain py_trees nodes have nothing to receive and are skipped."""
    if isinstance(node, _receivers):
        node.inject(payload)


__all__ = ["InjectPayload", "RunContext", "inject_runtime_deps", "receives_injections"]
