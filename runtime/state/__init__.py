"""Namespaced run state: `StateManager`, `Ephemeral` scopes and the agreed key names."""

from .ephemeral import Ephemeral, Scope
from .keys import InteractionKeys, StateKeys
from .manager import GLOBAL, Deferred, StateChange, StateManager, StateValidationError, normalize_namespace

__all__ = [
    "GLOBAL",
    "Deferred",
    "Ephemeral",
    "InteractionKeys",
    "Scope",
    "StateChange",
    "StateKeys",
    "StateManager",
    "StateValidationError",
    "normalize_namespace",
]
