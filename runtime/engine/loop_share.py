"""Runs in one event loop take turns, so that together they never hold it long.

asyncio runs every callback that was ready when a loop iteration began before it looks at its
timers and sockets again. Fifty runs whose model answers at once are each ready in every
iteration: one iteration runs a tick (and its save) of each, 50 x ~1 ms, while a web server's
request, a timer or a socket waits. A run asks its loop's `LoopShare` (`take_turn()`) before
each tick, and so does its work outside ticks: an async node's before it starts, and what follows
a model's or a tool's answer (recording it, the node's work on it), which would otherwise all come
due in one iteration. Once the runs of this loop have held it `SLICE` seconds since it last looked
at its timers and sockets, the asker waits in line and the loop moves on (its timers and I/O run);
the line's first go in the next iteration, as many as fitted in the last slice (twice as many
when they all fitted with time to spare).

Turns are taken by the clock, so they may change the order in which a run's own pieces of work
(its ticks, its async nodes' work) interleave, an order a restore retraces. So a run alone in its
loop takes a turn only before a tick with none of its work in flight (nothing of it moves while it
waits: its order stays asyncio's, and whatever else the application runs in the loop still gets
its turn between its ticks), and a swarm's runs take none (`take_turn`; a store's write, which names
no run, asks as the run whose work it is: `runs_as`, set by the runner). Runs side by side take
every turn: how each one's work interleaves may then differ from one time to the next, as it would
with a model whose answers take their time.

The time counted is wall time since the iteration's first turn, so whatever ran in between counts
too; what a turn starts is not cut (a tick is one traversal, a save one record), so the loop is
held at most `SLICE` plus the last piece of work that began within it.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

SLICE: float | None = 0.002  # seconds the runs of one loop hold it between two looks at its timers and I/O; None: no limit


class LoopShare:
    """One event loop's runs, and its line of those waiting for their turn."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._loop = loop
        self._since: float | None = None  # when this iteration's first turn began (None: none yet)
        self._went = 0  # turns begun within the slice so far: how many of the line the next iteration lets go
        self._line: deque[asyncio.Future[None]] = deque()
        self._runs: weakref.WeakSet[object] = weakref.WeakSet()  # the runners live in this loop

    def join(self, runner: object) -> None:
        """`runner` runs in this loop now (until it `leave`s, or is gone)."""
        self._runs.add(runner)

    def leave(self, runner: object) -> None:
        self._runs.discard(runner)

    def turn(self, quiet: Callable[[], bool] | None = None) -> Awaitable[None] | None:
        """None: go on now. Else what waits for the asker's turn: the slice is spent, or others wait in
        line before it (nobody goes ahead of the line). A lone run takes turns only where `quiet()`
        says nothing else of it can move while it waits."""
        if SLICE is None:
            return None
        if not self._line:
            alone = len(self._runs) < 2
            if alone and (quiet is None or not quiet()) or self._goes():
                return None
        return self._wait()

    def _goes(self) -> bool:
        """Whether a turn may begin in this slice (and count it), starting one if none is under way."""
        now = time.perf_counter()
        if self._since is None:  # the first turn since the loop last looked at its timers and I/O
            self._since, self._went = now, 0
            self._loop.call_soon(self._next_iteration)
        elif now - self._since >= SLICE:
            return False
        self._went += 1
        return True

    async def _wait(self) -> None:
        first = False
        while True:
            waiter = self._loop.create_future()
            if first:  # let go, but the slice was spent again: still first in line
                self._line.appendleft(waiter)
            else:
                self._line.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if not waiter.done():
                    self._line.remove(waiter)
                elif not waiter.cancelled():  # let go, then cancelled: its place goes to the next
                    self._let_go(1)
                raise
            if SLICE is None or self._goes():
                return
            first = True

    def _next_iteration(self) -> None:
        """The loop has run its timers and I/O since the slice began: let as many go as went in it, twice
        as many when they all fitted with time to spare (while a line stands only those let go begin
        turns: else one long turn would leave one let go an iteration for good, the loop turning over
        twice a turn)."""
        went, spare = self._went, SLICE is not None and time.perf_counter() - self._since < SLICE
        self._since = None
        self._let_go(max(1, 2 * went if spare else went))

    def _let_go(self, count: int) -> None:
        line = self._line
        while count and line:
            waiter = line.popleft()
            if not waiter.done():
                waiter.set_result(None)
                count -= 1


_SHARES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopShare] = weakref.WeakKeyDictionary()


def share_of(loop: asyncio.AbstractEventLoop) -> LoopShare:
    """The `LoopShare` of `loop` (one per loop, gone with it)."""
    share = _SHARES.get(loop)
    if share is None:
        share = _SHARES[loop] = LoopShare(loop)
    return share


_RUN: contextvars.ContextVar[Any] = contextvars.ContextVar("jianmu_run_context", default=None)


def runs_as(context: Any) -> None:
    """The work of this task, and of the tasks it starts from now on, is the run's with `context` (its
    `RunContext`): what takes a turn without naming its run (a store's write) takes it as that run's."""
    _RUN.set(context)


def take_turn(context: Any = None, quiet: Callable[[], bool] | None = None) -> Awaitable[None] | None:
    """The running loop's `LoopShare.turn(quiet)` for a run with `context` (its `RunContext`; None: the
    run this work is of, `runs_as`): None, go on; else await it first. A run in a swarm (its context has
    a `runtime`) takes none: how its agents interleave is part of what a restore replays, and turns
    taken by the clock would change it."""
    if getattr(context if context is not None else _RUN.get(), "runtime", None) is not None:
        return None
    return share_of(asyncio.get_running_loop()).turn(quiet)


__all__ = ["SLICE", "LoopShare", "runs_as", "share_of", "take_turn"]
