"""How a `blocking=True` synchronous tool runs: in a thread of its own, so that a call that never returns
does not hold the event loop, and its timeout can answer for it (`Tool.call`, runtime/tools/bounds.py).
(A plain synchronous tool runs on the loop's thread, within its tick's turn, so a run steps and replays
alike every time: in a thread, its answer could land a tick later or not. There a signal still stops a
call that never returns, and the run with it: runtime/signals.py.)

A thread changes what the function may take for granted, against running on the event loop's thread:

- two calls of one tool could now truly overlap (the calls of a round run in parallel): a read-modify-write
  of the tool's own state would lose updates. So the calls of one tool take turns (`Turns`, held in the
  thread around the call) unless the tool says `parallel_safe=True`;
- there is no running event loop (`asyncio.get_running_loop()`, `create_task`, a future), and an object
  bound to the thread that made it (a sqlite3 connection made at import) refuses the call. Such an error
  is recognised (`needs_the_loop_thread`) so the model, and the author, read what to change.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import sqlite3
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

_NO_LOOP = ("no running event loop", "no current event loop")  # get_running_loop; get_event_loop in a thread
_SQLITE_THREAD = "can only be used in that same thread"


class Turns:
    """What the calls of one synchronous tool take turns on, in their threads. A copy of the tool
    (`copy.deepcopy`) calls the same function, so it shares them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release()

    def __deepcopy__(self, memo: dict[int, Any]) -> Turns:
        return self


async def in_thread(func: Callable[..., T], kwargs: Mapping[str, Any], *, turns: Turns | None = None) -> T:
    """`func(**kwargs)` in a daemon thread of its own: awaited like `asyncio.to_thread`, but a call a
    timeout gave up on neither holds the executor nor the interpreter's exit (`asyncio.run` and Python
    both wait for the default executor's threads). With `turns`, the call holds its turn while it runs
    (taken in the thread: a call given up on still holds it until it returns), and a call given up on
    while waiting for it never runs."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()
    given_up = threading.Event()
    context = contextvars.copy_context()  # as asyncio.to_thread: the caller's context variables

    def settle(setter: Callable[[Any], None], value: Any) -> None:
        if not done.done():  # (given up on: nobody waits)
            setter(value)

    def run() -> None:
        with turns or contextlib.nullcontext():
            if given_up.is_set():
                return
            try:
                setter, value = done.set_result, context.run(func, **kwargs)
            except BaseException as exc:  # handed to the awaiting task, whatever it is
                setter, value = done.set_exception, exc
        with contextlib.suppress(RuntimeError):  # the loop has closed since: nobody waits
            loop.call_soon_threadsafe(settle, setter, value)

    threading.Thread(target=run, name=f"tool {getattr(func, '__name__', 'call')}", daemon=True).start()
    try:
        return await done
    finally:
        given_up.set()


def needs_the_loop_thread(exc: BaseException) -> bool:
    """Whether `exc` says the function wanted the event loop's thread: no running loop there, or an
    object (a sqlite3 connection) made in another thread."""
    if isinstance(exc, RuntimeError):
        return any(words in str(exc) for words in _NO_LOOP)
    return isinstance(exc, sqlite3.ProgrammingError) and _SQLITE_THREAD in str(exc)


__all__ = ["Turns", "in_thread", "needs_the_loop_thread"]
