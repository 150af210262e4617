"""The debugger (`Debugger`: stepping, breakpoints, edits, approvals, replay and fork, written once
for every front end), and debugging a run from another process: a WebSocket server in the
runtime that speaks docs/protocol.md for it, spoken to by the studio.

`Agent.run(..., debug="127.0.0.1:7777")` (or `$JIANMU_DEBUG=host:port`) serves the run for
its length; a runner is served with `async with DebugServer(runner, address) as server:
await server.run()`. The protocol is `docs/protocol.md`; `DebugClient` speaks it.

The debugger, the server and the client (and websockets, ~1.7 MB) are imported when first
named: a run that is not served never loads them, a studio on a local tree not the last two.
"""

from __future__ import annotations

import importlib
import math
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from py_trees.common import Status

from ..agent import Agent
from ..engine.runner import ReactiveRunner
from .protocol import DEFAULT_HEARTBEAT, PROTOCOL_VERSION, ProtocolError, parse_address

if TYPE_CHECKING:
    from .client import DebugClient, DebugError
    from .debugger import Debugger
    from .server import DebugServer

_LAZY = {"DebugClient": "client", "DebugError": "client", "DebugServer": "server", "Debugger": "debugger"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)

RunFunction = Callable[..., Awaitable[Status]]


def _seconds(name: str, default: float, *, bound: bool = False) -> float:
    """The variable's seconds: 0 or more (NaN is none), and finite when it `bound`s a wait (a heartbeat of
    inf would never drop a client that went silent, one of 0 would ping without pause)."""
    text = os.environ.get(name)
    if not text:
        return default
    try:
        seconds = float(text)
    except ValueError:
        raise ValueError(f"${name}={text!r}: expected a number of seconds") from None
    if not (0 < seconds < math.inf if bound else seconds >= 0):
        raise ValueError(f"${name}={text!r}: expected a number of seconds "
                         f"{'more than 0 and finite' if bound else '0 or more'}")
    return seconds


@asynccontextmanager
async def debugging(runner: ReactiveRunner, debug: str | int | None = None, *,
                    agent: Any = None) -> AsyncIterator[RunFunction]:
    """Yield the function that runs `runner`: served for a debugger when `debug` or $JIANMU_DEBUG names
    an address (heartbeat $JIANMU_DEBUG_HEARTBEAT, wait for a client $JIANMU_DEBUG_WAIT seconds, hold
    a finished run for a client that asks $JIANMU_DEBUG_HOLD_END seconds at most), plain `runner.run`
    otherwise. `agent`: the `Agent` the runner runs (why its run failed is read through it)."""
    address = debug if debug is not None else os.environ.get("JIANMU_DEBUG") or None
    if address is None:
        yield runner.run
        return
    from .server import DEFAULT_HOLD_END, DebugServer

    async with DebugServer(runner, address, heartbeat=_seconds("JIANMU_DEBUG_HEARTBEAT", DEFAULT_HEARTBEAT, bound=True),
                           wait=_seconds("JIANMU_DEBUG_WAIT", 0.0),
                           hold_end=_seconds("JIANMU_DEBUG_HOLD_END", DEFAULT_HOLD_END), agent=agent) as server:
        yield server.run


Agent.serving = staticmethod(debugging)  # `Agent.run(debug=...)` serves its run with this

__all__ = ["PROTOCOL_VERSION", "DebugClient", "DebugError", "DebugServer", "Debugger", "ProtocolError", "debugging", "parse_address"]

