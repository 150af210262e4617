"""Swarm agents seen from the studio: the runtime's `runtime.debug.children`, shared with the debug
server so that a local and an attached studio name the agents' nodes and namespaces alike, live and
at a past checkpoint."""

from runtime.debug.children import (
    PREFIX,
    PastAgents,
    SwarmChildren,
    agents_state,
    child_namespace,
    child_path,
    refused_moment,
    split_child_path,
)

__all__ = ["PREFIX", "PastAgents", "SwarmChildren", "agents_state", "child_namespace", "child_path", "refused_moment",
           "split_child_path"]
