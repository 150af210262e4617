"""`Ephemeral`: a field marker for values that belong to one step or one run.

    actions: Annotated[list[ToolCall], Ephemeral(scope="step")] = []

- step scope: reset to the field's default when the innermost `LoopUntilSuccess` starts a
  new iteration (outside any loop: at each fresh run);
- run scope: reset at the start of each fresh `runner.run()` / `Agent.run()`, kept when a
  run is restored from a checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Scope = Literal["step", "run"]


@dataclass(frozen=True)
class Ephemeral:
    scope: Scope = "step"

    def __post_init__(self) -> None:
        if self.scope not in ("step", "run"):
            raise ValueError(f"Ephemeral scope must be 'step' or 'run', not {self.scope!r}")


__all__ = ["Ephemeral", "Scope"]
