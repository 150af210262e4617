"""How a swarm's agents are named beside their host: in events, checkpoints and debuggers alike.

An agent's node paths are `@<agent id>/<path in its tree>` (the form of its forwarded
events' `node`), its namespaces `@<agent id>` (its global one) and `@<agent id>.<namespace>`.
The host's own paths and namespaces keep their names: none starts with `@`.
"""

from __future__ import annotations

PREFIX = "@"


def agent_path(agent_id: str, path: str | None) -> str:
    """`@agent/path`, or `@agent` (the agent itself) for no path."""
    return f"{PREFIX}{agent_id}/{path}" if path else f"{PREFIX}{agent_id}"


def agent_namespace(agent_id: str, namespace: str | None) -> str:
    """`@agent` (its global namespace) or `@agent.<namespace>`."""
    return f"{PREFIX}{agent_id}" + (f".{namespace}" if namespace else "")


def split_agent_path(path: str) -> tuple[str, str] | None:
    """(agent id, path in the agent's tree) for `@agent/path`; None for a host path (or `@agent` alone)."""
    if not path.startswith(PREFIX):
        return None
    agent_id, sep, inner = path[1:].partition("/")
    return (agent_id, inner) if sep and inner else None


def split_agent_namespace(namespace: str, agent_ids: set[str] | dict[str, object]) -> tuple[str, str | None] | None:
    """(agent id, its namespace, None for its global one) for `@agent` / `@agent.ns`, the id one of
    `agent_ids` (an id may hold a dot); None for a host namespace."""
    if not namespace.startswith(PREFIX):
        return None
    name = namespace[1:]
    if name in agent_ids:
        return name, None
    for agent_id in sorted(agent_ids, key=len, reverse=True):
        if name.startswith(agent_id + "."):
            return agent_id, name[len(agent_id) + 1:]
    return None


__all__ = ["PREFIX", "agent_namespace", "agent_path", "split_agent_namespace", "split_agent_path"]
