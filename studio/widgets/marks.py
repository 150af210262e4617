"""Status marks and colours, shared so that every pane says SUCCESS the same way."""

from __future__ import annotations

from typing import Any

from rich.text import Text

MARKS = {
    "SUCCESS": ("✔", "green"),
    "FAILURE": ("✘", "red"),
    "RUNNING": ("●", "yellow"),
    "INVALID": ("○", "dim"),
}
BREAKPOINT = ("◆", "bold red")
NOT_YET = ("◌", "dim")  # paused inside a tick: the node has not returned in it yet
REBOUND = ("⇄ rebound", "bold yellow")  # its ports bound unlike the tree file says


def status_name(status: Any) -> str:
    """`Status.SUCCESS`, "SUCCESS" or None → "SUCCESS" (recorded rows carry plain strings)."""
    return str(getattr(status, "value", status or "INVALID"))


def status_mark(status: Any) -> Text:
    mark, style = MARKS.get(status_name(status), ("?", "magenta"))
    return Text(mark, style=style)


def status_text(status: Any) -> Text:
    """Mark and name, coloured: `✔ SUCCESS`."""
    name = status_name(status)
    mark, style = MARKS.get(name, ("?", "magenta"))
    return Text(f"{mark} {name}", style=style)


def not_yet_text(status: Any) -> Text:
    """A node not reached yet in the tick held inside: `◌ not yet ticked in this tick (last: ● RUNNING)`."""
    return Text.assemble((f"{NOT_YET[0]} not yet ticked in this tick", NOT_YET[1]), " (last: ", status_text(status), ")")
