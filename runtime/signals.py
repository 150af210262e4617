"""A signal that ends a wait holding the thread: a command stops at SIGINT, SIGTERM or SIGHUP even while
synchronous work it cannot cancel runs (a tree's import or `build()`, a PostgreSQL connect that waits for
a server that accepted the connection and never answers).

An event loop hears a signal only when it gets the thread back (`loop.add_signal_handler`), and a
synchronous connect holds it for its whole timeout. Python runs a signal's handler in the main thread
between two steps of the code that holds it (the driver's wait wakes at least every 0.1 s), so inside
`signals_raise()` the handler raises `Stopped` there: the wait ends at once, and the command says what
it waited for (`doing`) and exits with 128 + the signal's number (130 SIGINT, 143 SIGTERM, 129 SIGHUP).

The same holds during a run: the user's synchronous code on the loop's thread (a tick of the tree's
nodes, a plain synchronous tool, a synchronous `@node` function; an async node's or tool's code between
two awaits, `user_steps`) may loop forever. A command's loop takes its signals with `user_code_stops()`
around it: one handler for the whole run, which does nothing unless such code runs (a flag
`run_user_code` sets in the main thread around it: ~1 µs a tick, a synchronous `@node` call or an async
node's step; outside a command's loop, nothing); then it raises `Stopped` there. `run_user_code` catches it and waits for what the loop makes of the same signal
once it has the thread back: the run is cancelled as a signal cancels it at any await, and the code is
no failure of its own. Code that has held the thread for less than `GRACE` gets that long to give it back
(the signal is sent again then, if it still holds it, until the loop's handler has taken it: `heard`):
a Ctrl-C during a long but finite tick (a large tree's) stops the run after the tick, as at any await,
and its last checkpoint is a whole tick's, not one cut through the middle of the nodes' updates. Only
code that holds on is cut (a cut may then land in the runtime's code that the user's code called, a
state write: the run's INTERRUPTED checkpoint holds what its tick had done until then).

Stopping the run runs the user's code once more: the tree's stop calls its nodes' `terminate()`. That
clean-up is `stopping_code`: one that holds on past `GRACE` is cut by the signal the loop heard, sent again,
so a `terminate()` that never returns cannot keep a process systemd stopped alive. A stop no signal caused
(the studio's restart, its quit) is cut the same way by `CUT`, a signal that only this cut listens to: the
command goes on (the studio stays responsive) and its caller says whose clean-up it cut.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Generator, Iterator
from threading import get_ident
from types import TracebackType
from typing import Any, TypeVar

T = TypeVar("T")

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_MAIN = threading.main_thread().ident  # where Python runs signal handlers
_holding = False  # the main thread runs the user's code, which a signal stops (`user_code_stops`)
_since = 0.0  # since when (time.monotonic()) it has held the thread
_active = False  # within `user_code_stops()` (a command's loop): else the user's code runs as it is, at no cost
_pending: int | None = None  # a signal the loop's handler has not taken yet (`heard`): sent again until it has
_heard: int | None = None  # the signal the loop's handler took: the command is stopping on it (`stopping_code`)
GRACE = 1.0  # seconds the user's code holding the thread has to give it back before a signal cuts it
CUT = signal.SIGURG  # cuts the clean-up of a stop no signal caused: ignored by default, so one sent late does nothing


class Stopped(BaseException):
    """A signal that arrived while synchronous work held the thread; not an error of that work."""

    def __init__(self, signum: int, doing: str | None = None):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.doing = doing  # what the signal stopped, said in the command's one line (None: nothing said)

    def line(self) -> str | None:
        return None if self.doing is None else f"{self.doing}, stopped by {signal.Signals(self.signum).name}"


class _StoppedUserCode(Stopped):
    """A signal that stopped the user's code in `run_user_code`: the loop's handler of it ends the run."""


def exit_status(signum: int) -> int:
    return 128 + signum


def signals_raise(doing: str | None = None) -> contextlib.AbstractContextManager[None]:
    """While the block runs, SIGINT, SIGTERM and SIGHUP raise `Stopped(signum, doing)` in it."""

    def raise_stopped(signum: int, _frame: Any) -> None:
        raise Stopped(signum, doing)

    return _handled_by(raise_stopped)


@contextlib.contextmanager
def _handled_by(handler: Callable[[int, Any], None], signums: tuple[int, ...] = SIGNALS) -> Iterator[None]:
    """While the block runs, `handler` takes `signums` (SIGINT, SIGTERM and SIGHUP); the handlers before it come
    back after. Outside the main thread (where no handler can be set) it changes nothing."""
    if get_ident() != _MAIN:
        yield
        return
    previous = {signum: signal.signal(signum, handler) for signum in signums}
    try:
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)


async def run_user_code(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`call(*args, **kwargs)`, the user's synchronous code, on the loop's thread: within `user_code_stops()`, a
    signal raises `Stopped` in it. It then waits here, as at any await, for the loop's own handler of that
    signal (the signal wrote the loop's wakeup fd) to cancel the run."""
    global _holding, _since
    if not _active or get_ident() != _MAIN:  # (in another thread no signal handler runs in its code)
        return call(*args, **kwargs)
    was, _holding = _holding, True  # (as `_holding_step` does, inline: a tick's path)
    if not was:
        _since = time.monotonic()
    try:
        return call(*args, **kwargs)
    except _StoppedUserCode:
        _holding = was  # (the loop's code runs from here on)
        await _never()
        raise
    finally:
        _holding = was


def user_steps(awaitable: Awaitable[T]) -> Awaitable[T]:
    """`awaitable`, the user's coroutine (an async node's `update_async()`, an async tool), to await with each
    of its steps run as `run_user_code` runs synchronous code, so one that never awaits again (`while True:
    pass` between two awaits) is stopped by a signal too. Between its steps the flag is down: the loop's.
    Outside `user_code_stops()`, `awaitable` itself (no cost: a library's own loop)."""
    return _Steps(awaitable) if _active else awaitable


class _Steps:
    __slots__ = ("_awaitable",)

    def __init__(self, awaitable: Awaitable[T]):
        self._awaitable = awaitable

    def __await__(self) -> Generator[Any, Any, T]:
        steps = self._awaitable.__await__()
        step, value = steps.send, None
        while True:
            try:
                awaited = _holding_step(step, value)
            except StopIteration as done:
                return done.value
            except _StoppedUserCode:
                yield from _never().__await__()
                raise
            try:
                step, value = steps.send, (yield awaited)
            except GeneratorExit:
                steps.close()
                raise
            except BaseException as exc:  # (a cancellation, or what the awaited future raised) into its code
                step, value = steps.throw, exc


def _holding_step(step: Callable[[Any], Any], value: Any) -> Any:
    """`step(value)` with the flag up, in the main thread (in another, no signal handler runs in its code)."""
    global _holding, _since
    if get_ident() != _MAIN:
        return step(value)
    was, _holding = _holding, True
    if not was:
        _since = time.monotonic()
    try:
        return step(value)
    finally:
        _holding = was


def heard(signum: int) -> None:
    """The loop's handler took `signum` (`studio.stopping.on_signals`): it is not sent again (`_again`), but
    the clean-up the command then runs (`stopping_code`) is cut by it."""
    global _pending, _heard
    _heard = signum
    if _pending == signum:
        _pending = None


def stopping_code(call: Callable[[], Any]) -> TracebackType | None:
    """`call()`, the user's clean-up that runs synchronously as a run stops (the tree's stop: its nodes'
    `terminate()`). Within a command's loop, code that holds the thread past `GRACE` here is cut: by the signal
    the loop heard, else by `CUT`. None when it returned; when it was cut, where (the caller says whose code it
    was, and ends the clean-up without the user's code)."""
    global _holding, _since, _pending
    if not _active or get_ident() != _MAIN:
        call()
        return None
    cut = CUT if _heard is None else _heard
    was, _holding = _holding, True
    if not was:
        _since = time.monotonic()
    _pending = cut
    _later(cut)
    try:
        with _handled_by(_stop_user_code, (CUT,)) if cut == CUT else contextlib.nullcontext():
            call()
        return None
    except _StoppedUserCode as exc:
        return exc.__traceback__
    finally:
        _holding, _pending = was, None


def _later(signum: int) -> None:
    """`_again` once the user's code holding the thread now (if any) has had its `GRACE` (a daemon timer:
    never holds the process's exit)."""
    wait = max(GRACE - (time.monotonic() - _since), 0.05) if _holding else GRACE
    again = threading.Timer(wait, _again, (signum,))
    again.daemon = True
    again.start()


def _again(signum: int) -> None:
    """The signal once more, to the main thread, while the loop's handler has not taken it: the user's code
    that has held the thread past its `GRACE` is then cut (the loop hears it once, whichever comes first).
    Between two pieces of the user's code (a tick that ended, a checkpoint written) it waits for the next."""
    if _pending != signum:
        return
    if _holding and time.monotonic() - _since >= GRACE:
        signal.pthread_kill(_MAIN, signum)
    else:
        _later(signum)


def _never() -> asyncio.Future[Any]:
    """What code a signal cut waits on: a future nobody sets, which only the run's cancellation ends; one
    cancelled already when the run is being cancelled (a second signal cut its clean-up: no cancellation
    would come again, and the command would never end)."""
    waited = asyncio.get_running_loop().create_future()
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        waited.cancel("cut while the run was stopping")
    return waited


def _stop_user_code(signum: int, _frame: Any) -> None:
    """The handler within `user_code_stops()`: the user's code that has held the thread past `GRACE` is cut."""
    global _pending
    if _holding and time.monotonic() - _since >= GRACE:  # (again while it unwinds, or swallowed: still held)
        raise _StoppedUserCode(signum)
    _pending = signum  # (the loop's handler takes it when it has the thread; until then, sent again)
    _later(signum)


@contextlib.contextmanager
def user_code_stops() -> Iterator[None]:
    """While the block runs (a command's loop, whose `add_signal_handler`s hear SIGINT, SIGTERM and SIGHUP once it
    has the thread), a signal while the user's code holds the thread (`run_user_code`) raises `Stopped` in it; at any
    other time the handler does nothing, as the loop's own does (the loop hears it through its wakeup fd
    either way)."""

    global _active, _pending, _heard
    if get_ident() != _MAIN:
        yield
        return
    was, _active, _pending = _active, True, None
    _heard = None
    try:
        with _handled_by(_stop_user_code):
            yield
    finally:
        _active = was


__all__ = ["CUT", "SIGNALS", "Stopped", "exit_status", "heard", "run_user_code", "signals_raise", "stopping_code",
           "user_code_stops", "user_steps"]
