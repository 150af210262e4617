"""Model providers that keep a position of their own (a scripted model): saved and restored with a
run's checkpoints, and recorded with its model calls, so a restore or replay answers where the
original run was."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def resumable_models(nodes: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Model providers with a position of their own, each once, under the path of the first node
    that calls it: their position is saved and restored with the nodes' resume data."""
    seen: set[int] = set()  # clients and providers looked at (most nodes share their context's client)
    found = []
    for path, node in nodes.items():
        client = getattr(node, "model_client", None)
        if client is None or id(client) in seen:
            continue
        seen.add(id(client))
        provider = getattr(client, "provider", None)
        if hasattr(provider, "dump_resume_state") and id(provider) not in seen:
            seen.add(id(provider))
            found.append((path, provider))
    return found


def positioned(node: Any) -> Any:
    """The node's model provider when it keeps a position of its own, else None."""
    provider = getattr(getattr(node, "model_client", None), "provider", None)
    return provider if hasattr(provider, "dump_resume_state") else None


__all__ = ["positioned", "resumable_models"]
