"""Stopping on a signal the way Ctrl-C stops: SIGTERM and SIGHUP (systemd, Docker, `timeout`, a closed
terminal) end `run`, `resume`, `serve` and the studio as SIGINT does.

The signal cancels the command's work, naming itself as the reason: the run is recorded as
interrupted as the cancellation unwinds (a last checkpoint with status INTERRUPTED, unless the run
had ended or waits for an approval, which another process may still answer), its work in flight
is cancelled, and its MCP servers are stopped with their process groups. The command then exits
with 128 + the signal's number (130 SIGINT, 143 SIGTERM, 129 SIGHUP), without a traceback. A
second signal while that happens is ignored: stopping is bounded (an MCP server gets a few seconds).

A tree's import and its `build()` are user code that holds the thread, and so is a store's connect to a
PostgreSQL server that does not answer: the loop cannot run its handlers then. While such work runs
(`user_code()`, `connecting()`), a signal raises `Stopped` in it instead (runtime/signals.py), which the
tree loader lets through: the command ends at once, with the same exit status; a connect stopped so is
said in one line naming the store. A command that runs a tree opens a PostgreSQL store in its event loop
instead (`connecting_async()`): the signal cancels the connect, and says so in the same line. During a
run, the tree's own synchronous code (a node's `update()`, a plain tool) may hold the thread too: while
it runs, a signal stops it (`on_signals` installs `user_code_stops()`), and the loop's handler then ends
the run as above.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

from runtime.agent import interrupt, settled
from runtime.memory.checkpoint.naming import display_name
from runtime.signals import SIGNALS, Stopped, exit_status, heard, signals_raise, user_code_stops
from runtime.terminal import terminal_line

_stop: Callable[[int], None] | None = None  # what a signal does to the command `run` runs now


def user_code() -> contextlib.AbstractContextManager[None]:
    """While synchronous user code runs (a tree's import, its `build()`), a signal raises `Stopped` in it."""
    return signals_raise()


def connecting(store: str | Path) -> contextlib.AbstractContextManager[None]:
    """While a store named on the command line is opened, a signal raises `Stopped` naming it (a PostgreSQL
    server that accepts the connection and never answers holds the thread for the connect's timeout)."""
    return signals_raise(f"{display_name(store)}: connecting")


@contextlib.asynccontextmanager
async def connecting_async(store: str | Path) -> AsyncIterator[None]:
    """`connecting()` for a store opened in the command's event loop (`open_store_async`): the signal
    cancels the command (`run`), and the cancellation that ends the connect becomes `Stopped` naming
    the store, so the command says what it waited for in the same line."""
    try:
        yield
    except asyncio.CancelledError as exc:
        named = exc.args[0] if exc.args else None
        if named not in signal.Signals.__members__:  # cancelled for another reason than a signal
            raise
        raise Stopped(signal.Signals[named], f"{display_name(store)}: connecting") from None


def stopped(exc: Stopped) -> int:
    """The exit status of a command a signal stopped in synchronous work; what it stopped said in one line."""
    if exc.line() is not None:
        complain(exc.line())
    return exit_status(exc.signum)


@contextlib.contextmanager
def on_signals(stop: Callable[[int], Any]) -> Iterator[None]:
    """`stop(signum)` on the running loop at the first of SIGINT, SIGTERM or SIGHUP; later ones are ignored."""
    loop = asyncio.get_running_loop()
    received: list[int] = []

    def first(signum: int) -> None:
        heard(signum)  # (not sent again to cut the user's code: runtime/signals.py)
        if not received:
            received.append(signum)
            stop(signum)

    for signum in SIGNALS:
        loop.add_signal_handler(signum, first, signum)
    try:
        with user_code_stops():  # the user's code holding the loop's thread in a run ends there first
            yield
    finally:
        for signum in SIGNALS:
            loop.remove_signal_handler(signum)


def run(main: Coroutine[Any, Any, int]) -> int:
    """`asyncio.run(main)`, which a signal cancels (its name the reason): main's exit status, or 128 + the
    signal's number."""
    global _stop
    received: list[int] = []

    async def guarded() -> int:
        global _stop
        task = asyncio.current_task()

        def cancel(signum: int) -> None:
            if not received:
                received.append(signum)
                task.cancel(signal.Signals(signum).name)

        _stop = cancel
        with on_signals(cancel):
            return await main

    try:
        status = asyncio.run(guarded())
    except Stopped as exc:  # in a tree's import or build() or a store's connect, before anything ran
        return stopped(exc)
    except (asyncio.CancelledError, KeyboardInterrupt):
        if not received:
            raise
    finally:
        _stop = None
    return exit_status(received[0]) if received else status


def complain(line: object) -> None:
    """Say on stderr, in the CLI's one-line form, what went wrong or needs the user's eye: the line
    is data (a node's name, a server's message), so anything in it that would act on a terminal is
    shown as its escape (`runtime.terminal`)."""
    print(f"jianmu-studio: {terminal_line(line)}", file=sys.stderr, flush=True)


def say(text: str) -> None:
    """Print a line of a command's output. Once its reader is gone (`run TREE | head -1`), the command
    stops as SIGPIPE stops a program that does not catch it: the run recorded as interrupted by
    SIGPIPE, exit status 141, nothing said, and what else it would print goes nowhere."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's own last flush too
        if _stop is not None:
            _stop(signal.SIGPIPE)


async def interrupt_session(session: Any, why: str) -> None:
    """Stop a local session's live run from outside: recorded as interrupted (`runtime.agent.interrupt`),
    its work in flight cancelled, its tool providers closed (MCP servers and their process groups)."""
    runner = session.runner
    if session.recorded_run is None:
        interrupt(runner, why)
    runner.stop()
    await settled(runner)
    await session.agent.close()


__all__ = ["SIGNALS", "Stopped", "connecting", "connecting_async", "exit_status", "interrupt_session", "on_signals", "run", "say", "stopped",
           "user_code"]
