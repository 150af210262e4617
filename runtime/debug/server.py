"""`DebugServer`: a WebSocket endpoint through which one front end drives a runner's debugger.

It lives in the agent's own event loop and hosts the agent's run on a `runtime.debug.Debugger`
(the one a local studio drives in its own process): with nobody attached it installs nothing
on the runner (no hooks, no subscriptions), so the agent runs at full speed. A client proves
itself with the token in its `hello`; a second client is refused while one is attached;
a client that goes away, or stops answering the WebSocket keepalive pings for a heartbeat,
is dropped, its breakpoints cleared and a held run released. Bad messages are answered
with an `error` and change nothing.

    async with DebugServer(runner, "127.0.0.1:7777") as server:
        await server.run()                  # runner.run(), held while a client says so
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import inspect
import ipaddress
import logging
import os
import secrets
import sys
import threading
import time
from collections.abc import Awaitable, Mapping
from typing import Any

from py_trees.common import Status
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from ..engine.runner import ReactiveRunner
from .controller import DebugController
from .debugger import Debugger
from .protocol import (
    DEFAULT_HEARTBEAT,
    MAX_FRAME,
    PROTOCOL_VERSION,
    ProtocolError,
    encode,
    error,
    frame,
    parse_address,
    parse_request,
)

log = logging.getLogger(__name__)
FLUSH_INTERVAL = 0.02  # seconds changes wait for more before they are sent as one update
SEND_SHARE = 0.25  # at most this share of the run's process goes to building and sending updates (while it moves):
# at a tenth, a counter run at full speed ticked 1.25x faster attached but its client lost half its events
DEFAULT_HOLD_END = 300.0  # seconds a finished run waits for a client that asked to keep it (`hold_end`)
_generated_token: str | None = None  # one per process, printed the first time it is made


def _resolve_token(token: str | None) -> tuple[str, bool]:
    """(token, whether it was just generated) from the argument, $JIANMU_DEBUG_TOKEN or a new one."""
    global _generated_token
    token = token or os.environ.get("JIANMU_DEBUG_TOKEN")
    if token:
        return token, False
    fresh = _generated_token is None
    if fresh:
        _generated_token = secrets.token_urlsafe(18)
    return _generated_token, fresh


def _bytes(token: str) -> bytes:
    """A token as compared: any string JSON can carry, a lone surrogate (`"\\ud800"`) too, has bytes."""
    return token.encode("utf-8", "surrogatepass")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class DebugServer:
    def __init__(self, runner: ReactiveRunner, address: str | int = "127.0.0.1:7777", *, token: str | None = None,
                 heartbeat: float = DEFAULT_HEARTBEAT, wait: float = 0.0, hold_end: float = DEFAULT_HOLD_END,
                 agent: Any = None):
        """`wait`: seconds to wait for a client before the run starts (it then starts paused);
        `hold_end`: seconds at most a finished run is held for a client whose hello asked for it;
        `agent`: the `Agent` the runner runs, whose `failure()` says why a failed run failed (a bare
        runner's tree is read as `Agent(runner.root)` would read it)."""
        self.runner = runner
        self.debugger = Debugger(runner, agent=agent)
        self.debugger.hold_end_seconds = hold_end
        self.host, self.port = parse_address(address)
        self.token, self._show_token = _resolve_token(token)
        self.heartbeat = heartbeat
        self.wait = wait
        self.controller: DebugController | None = None  # the attached client's, if any
        self._server: Server | None = None
        self._ready = asyncio.Event()  # something to send
        self._idle = asyncio.Event()  # nothing left to send
        self._urgent = asyncio.Event()  # a reply or a stop to send: no waiting for more changes
        self._attached = asyncio.Event()
        self._waiting = False  # inside start()'s wait for a client: the one who comes starts paused
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        self._answering: set[asyncio.Task] = set()  # requests answered once their work is done

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ws://{host}:{self.port}"

    async def __aenter__(self) -> DebugServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def start(self) -> None:
        """Listen, then wait for a client if asked to (`wait` seconds at most)."""
        await self.listen()
        await self.wait_for_client()

    async def listen(self) -> None:
        """Open the socket (port 0 picks a free one) and say where on stderr, with a generated token once."""
        if not _is_loopback(self.host):
            log.warning("debug server on %s: reachable from other machines; the token travels unencrypted",
                        self.host)
        self._loop, self._thread = asyncio.get_running_loop(), threading.get_ident()
        ping = max(self.heartbeat / 2, 0.05)
        # on loopback, deflating each frame costs the run's process more than the bytes it saves
        compression = None if _is_loopback(self.host) else "deflate"
        self._server = await serve(self._serve, self.host, self.port, max_size=MAX_FRAME, ping_interval=ping,
                                   ping_timeout=ping, close_timeout=ping, logger=log, compression=compression)
        self.port = self._server.sockets[0].getsockname()[1]
        where = f"jianmu debug server on {self.url}"
        print(f"{where} token {self.token}" if self._show_token else where, file=sys.stderr, flush=True)
        self._show_token = False

    async def wait_for_client(self) -> None:
        """Up to `wait` seconds for a client; the one who comes in that time finds the run paused at its start."""
        if self.wait <= 0 or self.controller is not None:
            return
        self._waiting = True
        try:
            await asyncio.wait_for(self._attached.wait(), self.wait)
        except TimeoutError:
            log.info("no debug client within %ss: running on", self.wait)
        finally:
            self._waiting = False

    async def close(self) -> None:
        """Tell the client the run ended, let it read what is queued (a heartbeat at most), stop listening."""
        if self.controller is not None:
            self.controller.post({"type": "bye", "reason": "the run ended", "status": self.runner.status.value})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), self.heartbeat)
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def run(self, max_ticks: int | None = None, *, input_data: Mapping[str, Any] | None = None) -> Status:
        """`runner.run()`, held where the client says (`Debugger.run`): before a node it stops at, at a
        suspension until it answers, and at the end for a client that asked (`hold_end`) so that it can
        still read, replay and fork the run; returns the root's status like `runner.run()`."""
        return await self.debugger.run(max_ticks, input_data=input_data)

    # -- one connection --------------------------------------------------------------
    def _wakeup(self, urgent: bool) -> None:
        """Something to send; called several times a tick, so a change while one is due costs one test."""
        if not urgent and self._ready.is_set():  # (a read: safe from any thread)
            return
        if self._thread != threading.get_ident():  # a state write from a worker thread
            self._loop.call_soon_threadsafe(self._wakeup, urgent)
        elif urgent:
            self._idle.clear()
            self._ready.set()
            self._urgent.set()
        else:
            self._idle.clear()
            self._ready.set()

    async def _serve(self, ws: ServerConnection) -> None:
        peer = "{}:{}".format(*ws.remote_address[:2])
        try:
            hello = await self._hello(ws, peer)
        except ConnectionClosed:
            return
        if hello is None:
            await ws.close(1008, "refused")
            return
        controller = self.controller = DebugController(self.debugger, self._wakeup)
        picture = controller.attach(paused=self._waiting, hold_end=hello.get("hold_end") is True)
        self._attached.set()
        log.info("debug client %s attached", peer)
        sender = asyncio.create_task(self._send_loop(ws, controller))
        try:
            await ws.send(frame({"type": "welcome", "protocol": PROTOCOL_VERSION, "re": hello.get("id"),
                                 "heartbeat": self.heartbeat, **picture}), text=True)
            async for text in ws:
                self._answer(controller, text)
        except ConnectionClosed:
            pass
        finally:
            sender.cancel()
            controller.detach()
            self.controller = None
            self._idle.set()
            log.info("debug client %s gone: breakpoints cleared, the run goes on", peer)

    async def _hello(self, ws: ServerConnection, peer: str) -> dict[str, Any] | None:
        """The first message: protocol version and token, checked; None (after an error sent) if refused."""
        try:
            text = await asyncio.wait_for(ws.recv(), self.heartbeat)
        except TimeoutError:
            await ws.send(encode(error("no_hello", f"send hello within {self.heartbeat}s of connecting")))
            return None
        try:
            hello = parse_request(text)
        except ProtocolError as exc:
            await ws.send(encode(error(exc.code, exc.message, exc.re)))
            return None
        re = hello.get("id")
        if hello["type"] != "hello":
            await ws.send(encode(error("no_hello", "the first message must be hello", re)))
            return None
        if hello["protocol"] != PROTOCOL_VERSION:
            await ws.send(encode(error("version", f"protocol {hello['protocol']!r} is not supported: "
                                                  f"this server speaks {PROTOCOL_VERSION}", re)))
            return None
        token = hello["token"]
        if not isinstance(token, str) or not hmac.compare_digest(_bytes(token), _bytes(self.token)):
            log.warning("debug client %s refused: %s", peer, "wrong token" if token else "no token")
            await ws.send(encode(error("auth", "wrong or missing token", re)))
            return None
        if self.controller is not None:
            await ws.send(encode(error("busy", "another debugger is attached to this run", re)))
            return None
        return hello

    def _answer(self, controller: DebugController, text: str | bytes) -> None:
        re = None
        try:
            message = parse_request(text)
            re = message.get("id")
            result = controller.handle(message)
        except ProtocolError as exc:
            controller.post(error(exc.code, exc.message, re if re is not None else exc.re))
            return
        except Exception as exc:  # a bug serving one request must not end the session or the run
            log.exception("debug request failed")
            controller.post(error("internal", f"{type(exc).__name__}: {exc}", re))
            return
        if inspect.isawaitable(result):
            self._later(controller, result, re)
            return
        controller.post({"type": "ok", "re": re, **result})

    def _later(self, controller: DebugController, pending: Awaitable[dict[str, Any]], re: Any) -> None:
        """Answer a request once its work is done (a model call re-sent): the run and the other requests
        go on meanwhile."""
        async def answer() -> None:
            try:
                result = await pending
            except ProtocolError as exc:
                controller.post(error(exc.code, exc.message, re))
            except Exception as exc:  # as `_answer`: a bug serving one request must not end the session
                log.exception("debug request failed")
                controller.post(error("internal", f"{type(exc).__name__}: {exc}", re))
            else:
                controller.post({"type": "ok", "re": re, **result})

        task = asyncio.get_running_loop().create_task(answer())
        self._answering.add(task)
        task.add_done_callback(self._answering.discard)

    async def _send_loop(self, ws: ServerConnection, controller: DebugController) -> None:
        """The one task that sends: what changed waits for more (a burst of ticks becomes one update)
        until a reply or a stop is due, which goes out at once behind the update before it. The wait
        grows with the time the last update took to build and encode, so that a run continuing at
        full speed gives that work at most `SEND_SHARE` of its process; a client slow to drain holds
        only this task. The run never waits for either: its events wait in the controller's bounded
        backlog for the next update."""
        outbox = controller.outbox
        wait = FLUSH_INTERVAL
        try:
            while True:
                await self._ready.wait()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._urgent.wait(), wait)
                self._ready.clear()
                self._urgent.clear()
                started = time.perf_counter()
                controller.seal()
                texts = [frame(message) for message in outbox]
                outbox.clear()
                wait = max(FLUSH_INTERVAL, (time.perf_counter() - started) * (1 / SEND_SHARE - 1))
                for text in texts:
                    await ws.send(text, text=True)
                if not self._ready.is_set():
                    self._idle.set()
        except ConnectionClosed:
            pass  # the reading side sees it too and detaches


__all__ = ["DebugServer"]
