"""The command's process ends when the command is done, whatever threads a tree left running.

Python waits for every non-daemon thread before a process exits: a node or a tool that started one
that never ends (a poller, a little server) kept `run` from returning to the shell after its run was
done and recorded. The command's own work is over by then, so the process ends without them (its exit
handlers still run: temporary folders removed, logs flushed).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading


def holding_the_exit() -> list[threading.Thread]:
    """The threads Python would wait for before the process exits."""
    main = threading.main_thread()
    return [thread for thread in threading.enumerate()
            if thread is not main and not thread.daemon and thread.is_alive()]


def leave(status: int) -> int:
    """`status`, when nothing would hold the exit; otherwise the process ends here, with `status`."""
    if not holding_the_exit():
        return status
    atexit._run_exitfuncs()  # noqa: SLF001 - what a normal exit runs, which os._exit skips
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # (a closed pipe: nothing to flush into)
            stream.flush()
    os._exit(status)


__all__ = ["holding_the_exit", "leave"]
