"""The swarm: an in-process multi-agent runtime and the nodes that drive it from a tree."""

from .nodes import SendMessage, SpawnAgent, SwarmBehaviour, SwarmNode, WaitForever, WaitMessage
from .runtime import SwarmAgent, SwarmError, SwarmMember, SwarmMessage, SwarmRuntime, SwarmTimeout

__all__ = [
    "SendMessage",
    "SpawnAgent",
    "SwarmAgent",
    "SwarmBehaviour",
    "SwarmError",
    "SwarmMember",
    "SwarmMessage",
    "SwarmNode",
    "SwarmRuntime",
    "SwarmTimeout",
    "WaitForever",
    "WaitMessage",
]
