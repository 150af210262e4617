"""What-if marks kept with a run: the forks made with a recorded answer edited, and the calls re-sent.

A what-if leaves traces the timeline and a run file must show: a fork (`whatif-N`) whose first
answer is not the one the model or tool gave, and a re-sent model call whose new answer belongs
to no branch at all (it never touched the run). Both are kept in the store's `meta` under
`whatif:<run id>`, one JSON list per run, oldest first; `export_run_file` carries them along.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from .naming import display_name
from .store import CheckpointStore, StoreError

KEY = "whatif:"
FORK = "fork"  # a fork from just before a call, its answer edited
RESEND = "resend"  # a model call re-sent as edited, its new answer beside the recorded one


@dataclass(frozen=True)
class CallRef:
    """A recorded model or tool call, as the views name it: the run, the branch it is seen on (its
    record may be on a branch that one forked from), and its key (`index`: a model call's attempt, a
    tool call's position in its round)."""

    run_id: str
    branch: str
    kind: str  # "model" | "tool"
    node: str
    round: int
    index: int = 0

    def __str__(self) -> str:
        what = "model call" if self.kind == "model" else "tool call"
        return f"{what} of {self.node} round {self.round}" + (f" #{self.index}" if self.index else "")


@dataclass(frozen=True)
class Mark:
    """One what-if of a run."""

    kind: str  # FORK | RESEND
    call: CallRef
    tick: int | None  # a fork: the tick of the checkpoint forked from; a re-send: the tick the call landed after
    recorded: Any  # the recorded answer (a model response, a tool's result text) or {"error": ...}
    edited: Any  # a fork: the answer served instead; a re-send: the request sent {"messages", "config"}
    branch: str | None = None  # a fork's branch
    answer: Any = None  # a re-send's new answer, or {"error": ...}
    time: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Mark:
        return cls(**{**data, "call": CallRef(**data["call"])})


def marks(store: CheckpointStore, run_id: str) -> list[Mark]:
    """The what-ifs of run `run_id`, oldest first (`StoreError` when what is kept cannot be read)."""
    text = store.get_meta(KEY + run_id)
    if text is None:
        return []
    try:
        return [Mark.from_json(entry) for entry in json.loads(text)]
    except (ValueError, TypeError, KeyError) as exc:
        raise StoreError(f"{display_name(store.location)}: the what-if marks of run {run_id} are damaged ({exc})") from None


def add_mark(store: CheckpointStore, mark: Mark) -> None:
    run_id = mark.call.run_id
    store.set_meta(KEY + run_id, json.dumps([entry.to_json() for entry in [*marks(store, run_id), mark]]))


__all__ = ["FORK", "KEY", "RESEND", "CallRef", "Mark", "add_mark", "marks"]
