"""A signal that ends a wait holding the thread: a command stops at SIGINT, SIGTERM or SIGHUP even while
synchronous work it cannot cancel runs (a tree's import or `build()`, a PostgreSQL connect that waits for
a server that accepted the connection and never answers).

An event loop hears a signal only when it gets the thread back (`loop.add_signal_handler`), and a
synchronous connect holds it for its whole timeout. Python runs a signal's handler in the main thread
between two steps of the code that holds it (the driver's wait wakes at least every 0.1 s), so inside
`signals_raise()` the handler raises `Stopped` there: the wait ends at once, and the command says what
it waited for (`doing`) and exits with 128 + the signal's number (130 SIGINT, 143 SIGTERM, 129 SIGHUP).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(BaseException):
    """A signal that arrived while synchronous work held the thread; not an error of that work."""

    def __init__(self, signum: int, doing: str | None = None):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.doing = doing  # what the signal stopped, said in the command's one line (None: nothing said)

    def line(self) -> str | None:
        return None if self.doing is None else f"{self.doing}, stopped by {signal.Signals(self.signum).name}"


def exit_status(signum: int) -> int:
    return 128 + signum


@contextlib.contextmanager
def signals_raise(doing: str | None = None) -> Iterator[None]:
    """While the block runs, SIGINT, SIGTERM and SIGHUP raise `Stopped(signum, doing)` in it; the handlers
    before it come back after. Outside the main thread (where no handler can be set) it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_stopped(signum: int, _frame: Any) -> None:
        raise Stopped(signum, doing)

    previous = {signum: signal.signal(signum, raise_stopped) for signum in SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


__all__ = ["SIGNALS", "Stopped", "exit_status", "signals_raise"]
