"""Deferred subtrees a checkpoint had compiled, compiled again before its nodes are matched by path.

A deferred node (`FlattenedAgentNode`: a skill, a swarm node) builds its subtree when it is
first reached, from the state of then. A checkpoint taken after that holds the subtree's
nodes; a runner built afresh (another process, a swarm agent built again) has not compiled
it, so restoring compiles it first, from the checkpoint's state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...state import StateManager
from .store import CheckpointError

if TYPE_CHECKING:
    from ...engine.runner import ReactiveRunner


def compile_deferred(runner: ReactiveRunner, checkpoint_id: int, resume: Mapping[str, Any],
                     state: Mapping[str, Mapping[str, Any]], lists: Mapping[str, Any]) -> tuple[str, ...]:
    """Compile in `runner` the deferred subtrees a checkpoint had compiled (outer ones first: its
    `resume` data says which) from its `state`, so their nodes have paths before anything is matched
    by path. Returns the path prefixes of subtrees compiled here but not then (they stay: a node
    compiles once)."""
    view, later = None, []
    for path in sorted(resume, key=lambda p: p.count("/")):
        node = runner.nodes.get(path)
        data = (resume[path] or {}).get("data")
        if node is None or not isinstance(data, Mapping) or "compiled" not in data:
            continue
        compiled = node.dump_resume_state().get("compiled")
        if compiled and not data["compiled"]:
            later.append(path + "/")
        elif data["compiled"] and not compiled:
            if view is None:
                view = StateManager(runner.state_manager.schema)
                view.restore(state, trusted=lists)
            try:
                node.compile_from(view)
            except Exception as exc:
                raise CheckpointError(f"checkpoint {checkpoint_id}: cannot compile {path!r} again: {exc}") from exc
    return tuple(later)


__all__ = ["compile_deferred"]
