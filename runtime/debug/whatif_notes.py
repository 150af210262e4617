"""The marks a what-if leaves on a timeline row (`runtime.memory.checkpoint.whatif_marks`): a fork with an
edited answer on its first row, a re-sent call on the row of the tick it landed after. Written once for
a local studio's rows and those a debug server sends an attached one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..memory.checkpoint import CheckpointInfo, Source
from ..memory.checkpoint.whatif_marks import FORK, RESEND, Mark

SHOWN = 40  # characters of an edited answer a timeline row shows


def _short(value: Any) -> str:
    if isinstance(value, dict):
        message = value.get("message") if "message" in value else value
        value = message.get("content") or ", ".join(f"→ {c.get('name')}" for c in message.get("tool_calls") or ()) \
            if isinstance(message, dict) else message
    text = " ".join(str(value).split())
    return repr(text if len(text) <= SHOWN else text[:SHOWN - 1] + "…")


def marked(summary: str, info: CheckpointInfo, marks: Sequence[Mark]) -> str:
    """A timeline row's summary with the what-ifs made there: a what-if fork's first checkpoint says
    which call answered what instead; a checkpoint after which a call landed that was re-sent says so."""
    notes = []
    for mark in marks:
        where = f"{mark.call.node.rpartition('/')[2]} round {mark.call.round}"
        if mark.kind == FORK and mark.branch == info.branch and info.source == Source.FORK:
            notes.append(f"✎ what if {where} answered {_short(mark.edited)}")
        elif mark.kind == RESEND and mark.call.branch == info.branch and mark.tick == info.tick \
                and info.source == Source.LOOP:
            notes.append(f"↻ {where} re-sent")
    return " · ".join([*notes, summary]) if notes else summary



__all__ = ["marked"]
