"""The command's process ends when the command is done, whatever threads a tree left running.

Python waits for every non-daemon thread before a process exits: a node or a tool that started one
that never ends (a poller, a little server) kept `run` from returning to the shell after its run was
done and recorded. So the exit goes on as Python's own (an executor's queued work finishes, threads
that end are waited for, exit handlers run) for `GRACE` seconds; a thread still running then is left,
and the process ends with the command's status (its exit handlers run first: temporary folders
removed, logs flushed).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time

GRACE = 5.0  # seconds the threads a tree left running get to end once the command is done


def holding_the_exit() -> list[threading.Thread]:
    """The threads Python would wait for before the process exits."""
    main = threading.main_thread()
    return [thread for thread in threading.enumerate()
            if thread is not main and not thread.daemon and thread.is_alive()]


def leave(status: int) -> int:
    """`status`, for the process's exit; when threads would hold that exit, it ends after `GRACE` at the latest."""
    if holding_the_exit():
        threading.Thread(target=_end_after_grace, args=(status,), name="jianmu-leaving", daemon=True).start()
    return status


def _end_after_grace(status: int) -> None:
    time.sleep(GRACE)
    atexit._run_exitfuncs()  # noqa: SLF001 - what a normal exit runs after the threads, which os._exit skips
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # (a closed pipe: nothing to flush into)
            stream.flush()
    os._exit(status)


__all__ = ["GRACE", "holding_the_exit", "leave"]
