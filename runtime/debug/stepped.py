"""What one step did, in words: the studio's status line already names the tick, so a step's message
says what changed in it. A local session and the debug server (for an attached studio) say the same."""

from __future__ import annotations

from ..engine.runner import TickReport

KEYS_NAMED = 3


def stepped(report: TickReport) -> str:
    """`stepped: 2 nodes changed, wrote agent.messages, agent.rounds` (or `nothing changed`). A node
    counts when it moved in the tick's record (`TickReport.moved`): its status changed by the tick's
    end, or it returned one the end does not show (a loop's round that failed, reset in that tick)."""
    changed = report.changed
    count, keys = len(changed) + sum(path not in changed for path in report.transient), report.state_keys
    parts = [f"{count:,} node{'' if count == 1 else 's'} changed"] if count else []
    if keys:
        more = len(keys) - KEYS_NAMED
        parts.append("wrote " + ", ".join(keys[:KEYS_NAMED]) + (f" and {more} more" if more > 0 else ""))
    return "stepped: " + (", ".join(parts) or "nothing changed")
