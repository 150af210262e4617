"""What of Python's logging reaches the terminal: the runtime's notices as one line each, the rest
only with `--debug`.

The runtime and the libraries it drives (the MCP SDK, httpx) log through `logging`; with no handler
configured, Python prints every warning and error with its traceback on stderr, between the CLI's own
lines. The runtime's warnings are notices meant for the user (no traces without the [otel] extra, an
MCP server that did not close cleanly): one line each. Its errors and the libraries' records are
for debugging (a run's failure is said by the run's own line): `--debug` shows them, tracebacks too.
No URL's credentials show in either (`masked_url`): a record may quote the address it failed on.
"""

from __future__ import annotations

import logging
import sys

from runtime.terminal import terminal_line
from runtime.urls import masked_url


class _Stderr(logging.Handler):
    """The stderr of the moment (the studio's app swaps it while it draws), as Python's last resort does."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001 (logging must never end the program: Handler's own policy)
            self.handleError(record)


class _Debug(logging.Formatter):
    """A record with its traceback, each line safe for a terminal (names and messages are data)."""

    def format(self, record: logging.LogRecord) -> str:
        return "\n".join(map(terminal_line, masked_url(super().format(record)).split("\n")))


class _Notice(logging.Formatter):
    """A runtime warning as the one line it says, safe for a terminal (no traceback)."""

    def format(self, record: logging.LogRecord) -> str:
        return terminal_line(masked_url(record.getMessage()))


def _is_notice(record: logging.LogRecord) -> bool:
    return record.levelno == logging.WARNING and record.name.split(".")[0] in ("runtime", "jianmu")


def configure(debug: bool) -> None:
    """Called by the CLI before a tree is loaded (again in one process: its handler replaced, not added)."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Stderr)]:
        root.removeHandler(old)
    handler = _Stderr()
    if debug:
        handler.setFormatter(_Debug("%(levelname)s %(name)s: %(message)s"))
        root.setLevel(logging.INFO)
    else:
        handler.setFormatter(_Notice())
        handler.addFilter(_is_notice)
    root.addHandler(handler)


__all__ = ["configure"]
