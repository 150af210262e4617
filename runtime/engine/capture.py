"""Capturing and loading a runner's own state: the seam checkpoints are built on.

A runner between ticks is its state manager's values plus what `RunnerState` holds: the
tick count, the run id, the event-stream position, whether a wake is pending, each
node's status, each composite's current child and each node's own resume data. The
checkpoint package saves and loads exactly this (and the state manager's snapshot)
through `ReactiveRunner.capture()` / `load()`; what a tick changed comes with its
`TickReport` (`changed`, `ticked`, `state_changes`), so a checkpointer can save only that.

`Checkpointer` is how the runner takes a checkpointer without knowing its package: any
object whose `attach(runner)` returns a `TickRecorder` (a checkpoint store does). This module
sits below the runner: it names the runner only in words, never by import.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .record import TickReport


@dataclass
class RunnerState:
    """A runner's own state between two ticks (node paths as keys)."""

    tick: int
    run_id: str | None
    event_position: int
    wake: bool  # a wake was pending: the next tick comes at once
    statuses: dict[str, str] = field(default_factory=dict)  # path -> py_trees Status value
    positions: dict[str, int] = field(default_factory=dict)  # composite path -> index of its current child
    resume: dict[str, Any] = field(default_factory=dict)  # path -> the node's dump_resume_state()
    touched: frozenset[str] = frozenset()  # a capture by places: the composites it looked at (`positions`: those
    # with a current child)


class TickRecorder(Protocol):
    """What a runner calls on its checkpointer."""

    def after_tick(self, report: TickReport) -> Awaitable[None] | None:
        """Record the tick; an awaitable (a write in flight) is awaited by the runner before it goes on.
        A recorder may also have `async settle()`, awaited as a run ends (its last writes land)."""

    def restore(self, checkpoint_id: int) -> None: ...

    def fork(self, checkpoint_id: int, *, state_updates: Mapping[str, Any] | None = None,
             binding_changes: Mapping[str, Any] | None = None) -> str: ...


class Checkpointer(Protocol):
    """Anything a runner can record into: `attach` returns the recorder bound to the runner."""

    def attach(self, runner: Any) -> TickRecorder:
        """Start recording `runner` (a `ReactiveRunner`, which calls this as it is built)."""


__all__ = ["Checkpointer", "RunnerState", "TickRecorder"]
