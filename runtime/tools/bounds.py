"""What bounds a tool call, for every tool alike (a function, a `Tool` class, an MCP server's tool): how
long it may take and how much of its answer reaches the model.

A tool that never returns would hold its round, and so the run, forever; one that returns a whole
file (or a gigabyte) would put it in front of the model in every later request, and in the run's
record. So a call gets `timeout` seconds (60 by default; None: no limit), after which the model
reads an observation naming the tool, and its text is cut at `max_output_chars` (100,000 characters,
about 25,000 tokens; None: no cap) with a marker saying how much was dropped. The run goes on either
way: the model decides what to do without that answer.

An MCP server's tools are bounded the same way, with the provider's `call_timeout` (the MCP library
counts it, and cancels the request at the server) and `max_output_chars`. A synchronous function
cannot be cancelled: on the event loop's thread (a plain tool's) it holds the loop and the timeout with
it (a signal still stops it and ends the run: runtime/signals.py), so one that may not return is
declared `blocking=True` and runs in a thread of its own (`Tool.call`, runtime/tools/threads.py), which
a timeout leaves behind (a daemon: it never holds the process's exit).
"""

from __future__ import annotations

DEFAULT_CALL_TIMEOUT = 60.0
DEFAULT_MAX_OUTPUT_CHARS = 100_000
"""About 25,000 tokens: what one tool call may put in front of the model."""


def checked_bounds(owner: str, timeout: float | None, max_output_chars: int | None) -> None:
    """`ValueError` naming `owner` when a bound is no bound (0, negative, NaN)."""
    if timeout is not None and not timeout > 0:
        raise ValueError(f"{owner}: timeout must be > 0 seconds or None, not {timeout}")
    if max_output_chars is not None and max_output_chars < 1:
        raise ValueError(f"{owner}: max_output_chars must be >= 1 or None, not {max_output_chars}")


def capped(text: str, max_chars: int | None, source: str) -> str:
    """`text`, cut at `max_chars` with a marker naming `source` and what was dropped (None: never cut)."""
    if max_chars is None or len(text) <= max_chars:
        return text
    return (f"{text[:max_chars]}\n[... {len(text) - max_chars:,} of {len(text):,} characters dropped: {source} "
            f"answered more than max_output_chars={max_chars:,}]")


__all__ = ["DEFAULT_CALL_TIMEOUT", "DEFAULT_MAX_OUTPUT_CHARS", "capped", "checked_bounds"]
