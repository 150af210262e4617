"""The names node authors use: `Node` (sync) and `AsyncNode` (async)."""

from ..engine.behaviour import AsyncBehaviour, Behaviour, Decorator, JianmuNodeMixin

Node = Behaviour
AsyncNode = AsyncBehaviour

__all__ = ["AsyncNode", "Decorator", "JianmuNodeMixin", "Node"]
