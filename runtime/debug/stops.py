"""Where a debugged run stands (`RunState`) and why it stopped (`Stop`): the words every front end
shows, a local studio from the debugger in its process, an attached one from the `paused` messages
of the debug protocol (`Stop.describe`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .breakpoints import Breakpoint


class RunState(StrEnum):
    READY = "ready"  # started, not ticked yet: the input is state at tick 0
    PAUSED = "paused"
    RUNNING = "running"
    WAITING = "waiting"  # continuing, but the tree waits for async work
    SUSPENDED = "suspended"  # waiting for an approval or other input
    FINISHED = "finished"
    RECORDED = "recorded"  # a recorded run, shown read-only until a replay or fork

    @property
    def busy(self) -> bool:
        """Continuing: ticking, or waiting for async work between ticks."""
        return self in (RunState.RUNNING, RunState.WAITING)


@dataclass
class Stop:
    """Why a step or a continue ended: `kind` is "breakpoint", "step", "paused", "suspended",
    "finished", "divergence", "error" or "refused"; `node` is set when the tick is held before it."""

    kind: str
    message: str = ""
    tick: int = 0
    node: str | None = None
    breakpoint: Breakpoint | None = None

    @property
    def hits(self) -> int | None:
        return self.breakpoint.hits if self.breakpoint is not None else None

    def describe(self) -> dict[str, Any]:
        """The stop as a `paused` message carries it: kind, message, tick, and where and which breakpoint."""
        out: dict[str, Any] = {"kind": self.kind, "message": self.message, "tick": self.tick}
        if self.node is not None:
            out.update(node=self.node, when="before")
        if self.breakpoint is not None:
            out.update(breakpoint=self.breakpoint.id, hits=self.breakpoint.hits)
        return out


__all__ = ["RunState", "Stop"]
