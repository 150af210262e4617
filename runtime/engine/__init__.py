"""The engine: node base classes, injection, events and the ReactiveRunner."""

from .behaviour import AsyncBehaviour, Behaviour, Decorator, JianmuNodeMixin, NodeError
from .boundaries import NodeBoundary
from .capture import Checkpointer, RunnerState, TickRecorder
from .deps import InjectPayload, RunContext, inject_runtime_deps
from .events import EventType, RuntimeEvent, RuntimeEventBus
from .record import Returns, TickReport
from .runner import ReactiveRunner

__all__ = [
    "AsyncBehaviour",
    "Behaviour",
    "Checkpointer",
    "Decorator",
    "EventType",
    "InjectPayload",
    "JianmuNodeMixin",
    "NodeBoundary",
    "NodeError",
    "ReactiveRunner",
    "Returns",
    "RunContext",
    "RunnerState",
    "RuntimeEvent",
    "RuntimeEventBus",
    "TickRecorder",
    "TickReport",
    "inject_runtime_deps",
]
