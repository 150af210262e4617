"""What code the user wrote (a node's update, a tool) raising means: that code failed.

`sys.exit()`, a `KeyboardInterrupt` or any `BaseException` of the user's own raised by a node or a
tool is that node's or tool's failure, named as such, never the end of the process hosting the run
(the studio, `run`, a service). Only the run's own control flow passes through user code
(`PASSED_ON`: a cancellation, a coroutine closed, a signal that stops the command). The
user's own Ctrl-C never arrives as a KeyboardInterrupt inside user code: it cancels the run's task
(`asyncio.run`, studio/stopping.py), or, while the user's synchronous code holds the loop's thread,
raises `Stopped` in it (runtime/signals.py `run_user_code`), passed on. Caught as it is raised,
before it leaves the user's code: a task whose coroutine raises either one stops the whole event loop.
"""

from __future__ import annotations

import asyncio

from ..signals import Stopped

PASSED_ON = (asyncio.CancelledError, GeneratorExit, Stopped)  # `except PASSED_ON: raise` first around user code
FAILURES = BaseException  # ... then `except FAILURES`: whatever else the user's code raised


class UserExit(Exception):
    """A BaseException that is no Exception (sys.exit, KeyboardInterrupt, the user's own) raised by
    user code, carried on as an ordinary failure."""

    def __init__(self, raised: BaseException):
        super().__init__(described(raised))
        self.__cause__ = raised


def failure(exc: BaseException) -> Exception:
    """`exc` as a failure an `except Exception` handles: itself, or a `UserExit` naming it."""
    return exc if isinstance(exc, Exception) else UserExit(exc)


def described(exc: BaseException) -> str:
    """One line naming the exception: its type and message; `sys.exit(code)` for a SystemExit."""
    if isinstance(exc, UserExit):
        return str(exc)
    if isinstance(exc, SystemExit):
        return f"SystemExit (sys.exit({exc.code!r}))"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


__all__ = ["FAILURES", "PASSED_ON", "UserExit", "described", "failure"]
