"""`MCPToolProvider`: the tools of an MCP server (stdio, streamable HTTP or legacy SSE) as runtime `Tool`s.

    provider = MCPToolProvider(sys.executable, ["server.py"])             # stdio: a child process
    provider = MCPToolProvider(url="http://127.0.0.1:8000/mcp", headers={"Authorization": "Bearer ..."})
    provider = MCPToolProvider(url="http://127.0.0.1:8000/sse")           # legacy HTTP+SSE, by its path
    create_react_node(..., tool_providers=[provider])

The transport and session are async context managers, which must be entered and exited in
one task, while the tree lists and calls tools from its own tasks: so one task owns the
connection for its whole life and `close()` asks it to unwind (or, while it is still
connecting, cancels it). Left unclosed, that task is cancelled when the event loop shuts
down, which still stops the server process.

When the server says its tools changed (`notifications/tools/list_changed`, or a
`subscriptions/listen` event on a 2026 connection), `generation` grows and the next
`get_tools()` lists them again: the agent offers the new list from its next round.

A stdio server runs in a process group of its own (the SDK starts it a session), and closing
the provider stops the whole group: the SDK stops the server, then whatever it started that
outlived it is killed (npx runs the server under two more processes). A run stopped by a signal
closes its providers the same way (`Agent.run`, studio/stopping.py).

A server's stderr is kept in a temporary file (it would scribble over the studio's
screen); its last line is quoted when the server fails to start or exits. A stdio server
that dies mid-call is named with how it ended: its exit status, or the signal that killed
it (its stderr then holds only what it said before, a start-up banner at best).

The `mcp` package is imported on first connection: it is slow to import, and a runtime
that never speaks MCP should not pay for it. It comes with the `[mcp]` extra: a provider made
without it says so at once (`MissingExtra`), so a tree file that makes one fails to load with that line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import re
import shlex
import signal
import tempfile
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from runtime.extras import check
from runtime.tools.base import Tool, ToolError
from runtime.tools.bounds import DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_OUTPUT_CHARS, checked_bounds
from runtime.tools.mcp_results import observation
from runtime.tools.provider import ToolProvider
from runtime.tools.schema_check import check_arguments, schema_validator
from runtime.urls import masked_url

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import Tool as ToolSpec

log = logging.getLogger(__name__)

MAX_TOOL_PAGES = 100  # a server whose tools/list never stops paginating cannot hang initialize()
EXIT_WAIT = 2.0  # seconds a server whose connection closed mid-call gets to be seen exiting
LISTEN_ACK_WAIT = 5.0  # seconds a server has to acknowledge listening for its tool changes
_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
Transport = Literal["stdio", "streamable-http", "sse"]


class MCPToolProvider(ToolProvider):
    """Connects in `initialize()`, lists the server's tools, calls them, disconnects in `close()`.

    Give `command` (+ `args`, `env` over a minimal inherited environment, `cwd`) for a
    stdio server, or `url` (+ `headers`) for an HTTP one: streamable HTTP, or the legacy
    HTTP+SSE transport when the URL's path ends in `/sse` or `transport="sse"`. `name`
    labels the server in errors (default: the command line or the URL). Every call is
    bounded by `call_timeout` seconds, connecting and listing by `connect_timeout`.

    `prefix` is put before the names of the server's tools (`fs_` + `read_file`): two servers
    offering one name are otherwise an error naming both. `max_output_chars` caps what one call
    puts in front of the model (None: no cap); the rest is dropped with a marker saying how much.
    """

    def __init__(self, command: str | None = None, args: Sequence[str] = (), *,
                 env: Mapping[str, str] | None = None, cwd: str | Path | None = None,
                 url: str | None = None, headers: Mapping[str, str] | None = None, name: str | None = None,
                 transport: Transport | None = None, prefix: str = "",
                 max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS,
                 call_timeout: float = DEFAULT_CALL_TIMEOUT, connect_timeout: float = 30.0):
        if (command is None) == (url is None):
            raise ValueError("MCPToolProvider needs command= (a stdio server) or url= (an HTTP one), not both")
        check("mcp", "mcp", "jsonschema", *(["httpx2"] if url is not None else []))
        checked_bounds("MCPToolProvider", call_timeout, max_output_chars)
        self.command, self.args = command, list(args)
        self.env, self.cwd = (dict(env) if env is not None else None), cwd
        self.url, self.headers = url, dict(headers or {})
        self.transport = _transport_of(command, url, transport)
        self.target = masked_url(shlex.join([command, *self.args]) if command is not None else str(url))
        self.name = name or self.target
        self.prefix, self.max_output_chars = prefix, max_output_chars
        self.call_timeout, self.connect_timeout = call_timeout, connect_timeout
        self.generation = 0
        self._client: Client | None = None
        self._tools: list[MCPTool] = []
        self._stale = False  # the server said its tools changed: list them again
        self._task: asyncio.Task[None] | None = None
        self._connected: asyncio.Future[Any] | None = None  # done once the tools are listed (or it failed)
        self._stop = asyncio.Event()
        self._stderr: Any = None  # the stdio server's stderr file while it runs
        self._stdio: Any = None  # the stdio transport while it runs: where its process is found

    def __repr__(self) -> str:
        return f"MCPToolProvider({self.name!r})"

    @property
    def label(self) -> str:
        return f"MCP server {self.name}"

    # -- lifecycle -----------------------------------------------------------------------
    async def initialize(self) -> None:
        """Start (or reach) the server and list its tools; `ToolError` naming the server if that fails."""
        if self._task is not None:
            return
        ready: asyncio.Future[list[ToolSpec]] = asyncio.get_running_loop().create_future()
        self._connected = ready
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self._own_connection(ready), name=f"mcp: {self.name}")
        try:
            specs = await asyncio.shield(ready)  # a cancelled caller must not cancel the owner's future
        except BaseException:
            await self.close()
            raise
        self._tools = self._offered(specs)

    def _offered(self, specs: list[ToolSpec]) -> list[MCPTool]:
        """The tools a plain `tools/call` can run: one whose `execution.taskSupport` is "required"
        (MCP 2025-11-25 tasks, which this client does not speak) is left out, and logged."""
        skipped = [spec.name for spec in specs if _needs_tasks(spec)]
        if skipped:
            log.info("MCP server %s: not offering %s (task-augmented execution required, which this client "
                     "does not support)", self.name, ", ".join(skipped))
        tools: list[MCPTool] = []
        taken: set[str] = set()
        for spec in specs:
            if not _needs_tasks(spec):
                tools.append(MCPTool(self, spec, _unique(_valid_name(self, spec), taken)))
        return tools

    async def get_tools(self, **kwargs: Any) -> list[Tool]:
        if self._task is None:
            raise RuntimeError(f"{self!r}: call initialize() before get_tools()")
        if self._stale and self._client is not None:
            self._stale = False
            try:
                self._tools = self._offered(await _list_tools(self._client, refresh=True))
            except Exception as exc:
                raise ToolError(f"MCP server {self.name} changed its tools but cannot list them: "
                                f"{_reason(exc)}{self._stderr_hint()}") from exc
        return list(self._tools)

    async def close(self) -> None:
        """Close the session and the transport (a stdio server is asked to exit, then killed); a
        provider still connecting stops at once."""
        task, self._task = self._task, None
        if task is None:
            return
        if not self._connected.done():
            task.cancel()  # still connecting: nothing to unwind politely, no answer to wait for
        self._stop.set()
        try:
            await task
        except asyncio.CancelledError:
            if not task.cancelled():
                raise  # the caller is cancelled, not the connection
        except Exception as exc:  # a server that died first: nothing left to release, say so in one line
            log.warning("MCP server %s did not close cleanly: %s", self.name, _reason(exc))

    async def _own_connection(self, ready: asyncio.Future[list[ToolSpec]]) -> None:
        """The connection's task: connect and list (within `connect_timeout`), then wait for `close()`."""
        with tempfile.TemporaryFile("w+") if self.command is not None else contextlib.nullcontext() as stderr:
            self._stderr = stderr
            try:
                await self._connect_and_wait(ready)
            except Exception as exc:
                if ready.done():
                    raise
                ready.set_exception(self._start_error(_reason(exc)))
            finally:
                self._client = None
                if not ready.done():  # cancelled while connecting
                    ready.set_exception(self._start_error("cancelled"))
                    ready.exception()  # retrieved: nobody may be waiting for it any more
                self._stderr = self._stdio = None

    async def _connect_and_wait(self, ready: asyncio.Future[list[ToolSpec]]) -> None:
        import anyio
        from mcp import Client

        with anyio.CancelScope(deadline=anyio.current_time() + self.connect_timeout) as scope:
            async with contextlib.AsyncExitStack() as stack:
                client = await stack.enter_async_context(
                    Client(await self._transport(stack), read_timeout_seconds=self.call_timeout,
                           message_handler=self._on_message))
                async with anyio.create_task_group() as tasks:
                    await tasks.start(self._listen_for_tool_changes, client)  # before listing: no change missed
                    specs = await _list_tools(client)
                    scope.deadline = math.inf
                    self._client = client
                    ready.set_result(specs)
                    await self._stop.wait()
                    tasks.cancel_scope.cancel()
        if scope.cancelled_caught and not ready.done():
            ready.set_exception(self._start_error(f"no answer within {self.connect_timeout:g}s"))

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        """The transport for `Client`: a child process over stdio, streamable HTTP or legacy SSE."""
        if self.transport == "stdio":
            return self._stdio_in_its_group()
        # a response may stream for a whole call; 300 s is also the SDK's own read timeout
        read_timeout = max(self.call_timeout, 300.0)
        if self.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(str(self.url), headers=self.headers, timeout=self.connect_timeout,
                              sse_read_timeout=read_timeout)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        timeout = httpx2.Timeout(self.connect_timeout, read=read_timeout)
        http = await stack.enter_async_context(httpx2.AsyncClient(headers=self.headers, timeout=timeout))
        return streamable_http_client(str(self.url), http_client=http)

    @contextlib.asynccontextmanager
    async def _stdio_in_its_group(self) -> Any:
        """The stdio transport: the server is started in a process group (session) of its own, and once
        the SDK has stopped it, whatever is left of that group (children that outlived it: npx's node,
        a server's helpers) is killed, however the connection ended (closed, failed, cancelled)."""
        from mcp import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=self.command, args=self.args, env=self.env, cwd=self.cwd)
        self._stdio = stdio_client(params, errlog=self._stderr)
        group = None
        try:
            async with self._stdio as streams:
                process = _process_of(self._stdio)
                group = process.pid if process is not None else None  # the SDK starts it a session: pgid = pid
                yield streams
        finally:
            if group is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):  # (none left: the usual case)
                    os.killpg(group, signal.SIGKILL)

    # -- the server's tools changing ------------------------------------------------------------
    def _tools_changed(self) -> None:
        self._stale = True
        self.generation += 1

    async def _on_message(self, message: Any) -> None:
        """A connection before 2026 announces changes as notifications."""
        from mcp.types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self._tools_changed()

    async def _listen_for_tool_changes(self, client: Client, *, task_status: Any) -> None:
        """A 2026 connection announces changes only to who listens for them, if the server says it
        will; `task_status.started()` once the server has acknowledged (or there is nothing to hear)."""
        import anyio
        from mcp.client.subscriptions import ListenNotSupportedError

        tools = client.server_capabilities.tools
        try:
            if not (tools and tools.list_changed):
                return
            async with contextlib.AsyncExitStack() as stack:
                with anyio.fail_after(LISTEN_ACK_WAIT):  # a server that never acknowledges still starts
                    changes = await stack.enter_async_context(client.listen(tools_list_changed=True))
                task_status.started()
                async for _ in changes:
                    self._tools_changed()
        except ListenNotSupportedError:
            return  # an earlier connection: its notifications come as messages (`_on_message`)
        except Exception as exc:  # the tools keep working; only their changes go unseen
            log.info("MCP server %s: no longer listening for tool changes: %s", self.name, _reason(exc))
        finally:
            with contextlib.suppress(RuntimeError):  # started already
                task_status.started()

    # -- calling -------------------------------------------------------------------------
    async def call_tool(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        """Call `tool` on the server: its text (else its structured content), or a `ToolError`."""
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        client = self._client
        if client is None:
            raise ToolError(f"tool '{tool}': MCP server {self.name} is not connected (it stopped or was "
                            f"closed){self._stderr_hint()}")
        started = time.monotonic()
        try:
            result = await client.call_tool(tool, dict(arguments), read_timeout_seconds=self.call_timeout)
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT and time.monotonic() - started >= self.call_timeout:  # not the server's
                raise ToolError(f"tool '{tool}': MCP server {self.name} gave no answer within "
                                f"{self.call_timeout:g}s") from exc
            if exc.code == CONNECTION_CLOSED and await _closed(client):
                self._client = None  # later calls fail at once; close() still unwinds the owner task
                raise ToolError(f"tool '{tool}': MCP server {self.name} {await self._how_it_ended()} before "
                                "answering") from exc
            raise ToolError(f"tool '{tool}': MCP server {self.name} refused the call: {exc}") from exc
        except Exception as exc:
            raise ToolError(f"tool '{tool}': MCP server {self.name}: {_reason(exc)}{self._stderr_hint()}") from exc
        return observation(result, server=self.name, tool=tool, max_chars=self.max_output_chars)

    async def _how_it_ended(self) -> str:
        """"was killed by signal SIGKILL", "exited with status 3 (stderr: ...)", or, when the process
        cannot be seen (an HTTP server), "exited or closed the connection"."""
        process = _process_of(self._stdio)
        if process is None:
            return f"exited or closed the connection{self._stderr_hint()}"
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(EXIT_WAIT):
                while process.returncode is None:  # its stdout closed first, the exit is seen just after
                    await asyncio.sleep(0.01)  # (polled as the SDK does: its wait() also waits for pipes)
        code = process.returncode
        if code is None:
            return f"closed the connection{self._stderr_hint()}"
        if code < 0:
            return f"was killed by signal {_signal_name(-code)}"
        return f"exited with status {code}{self._stderr_hint()}"

    # -- errors --------------------------------------------------------------------------
    def _start_error(self, reason: str) -> ToolError:
        where = self.name if self.name == self.target else f"{self.name} ({self.target})"
        return ToolError(f"MCP server {where} failed to start: {reason}{self._stderr_hint()}")

    def _stderr_hint(self) -> str:
        """`(stderr: <last line>)` of a stdio server, read without moving the file offset it writes at."""
        if self._stderr is None:
            return ""
        fd = self._stderr.fileno()
        size = os.fstat(fd).st_size
        tail = os.pread(fd, 2000, max(0, size - 2000)).decode(errors="replace")
        lines = [line.strip() for line in tail.splitlines() if line.strip()]
        return f" (stderr: {lines[-1]})" if lines else ""


class _AnyObject(BaseModel):
    """Accepts any JSON object: the server's own JSON schema does the checking (`MCPTool.validate`)."""

    model_config = ConfigDict(extra="allow")


class MCPTool(Tool):
    """One tool of an MCP server: the server's JSON schema is what the model sees and what arguments
    are checked against before the call leaves the process.

    Names outside `[A-Za-z0-9_-]{1,64}` (what function-calling APIs accept) are rewritten with
    `_` (and numbered where two would then be one); `remote_name` keeps the server's name. A tool
    runs alone in its round only when the server says it has side effects (`destructiveHint`, not
    `readOnlyHint`); any other runs in parallel with the round's other calls, as every tool does
    by default.
    """

    Args = _AnyObject

    def __init__(self, provider: MCPToolProvider, spec: ToolSpec, name: str | None = None):
        self.provider = provider
        self.remote_name = spec.name
        self.input_schema = dict(spec.input_schema)
        self._validator = schema_validator(self.input_schema)
        annotations = spec.annotations
        super().__init__(name=name or _unique(_valid_name(provider, spec), set()),
                         description=spec.description or spec.title or f"{spec.name} (MCP server {provider.name})",
                         parallel_safe=not _has_side_effects(annotations),
                         timeout=None, max_output_chars=None)  # the provider's call_timeout and cap bound it

    def offered_parameters(self) -> dict[str, Any]:
        """The server's input schema but its title and `$schema` (a JSON-schema dialect tag: strict model APIs
        refuse it)."""
        return {key: value for key, value in self.input_schema.items() if key not in ("title", "$schema")}

    def validate(self, arguments: Mapping[str, Any]) -> BaseModel:
        model = super().validate(arguments)  # the "must be an object" check
        check_arguments(self.name, self._validator, arguments)
        return model

    async def call(self, arguments: Mapping[str, Any]) -> Any:
        self.validate(arguments)
        return await self.provider.call_tool(self.remote_name, arguments)


async def _closed(client: Client) -> bool:
    """Whether the connection is really gone after an error -32000: the SDK says "connection closed"
    with that code, but JSON-RPC gives it to ordinary server errors too (a tool may raise it), so the
    session is asked (a page of tools: `ping` is gone from the 2026 protocol): a closed one fails at
    once, a live server answers (or is busy)."""
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED

    try:
        async with asyncio.timeout(EXIT_WAIT):
            await client.list_tools(cache_mode="refresh")
    except TimeoutError:
        return False  # still there, only slow
    except MCPError as exc:
        return exc.code == CONNECTION_CLOSED
    except Exception:
        return True  # its transport broke
    return False


def _valid_name(provider: MCPToolProvider, spec: ToolSpec) -> str:
    """The server's tool name (after the provider's prefix) in the characters a model API accepts."""
    return _INVALID_NAME_CHARS.sub("_", provider.prefix + spec.name)


def _unique(name: str, taken: set[str]) -> str:
    """`name` cut to 64 characters, with `_2`, `_3`… when a tool listed before has it: a server's
    `a.b` and `a_b`, or two names alike in their first 64 characters, stay two tools (`taken` grows)."""
    unique, number = name[:64] or "_", 1
    while unique in taken:
        number += 1
        unique = f"{name[:64 - len(str(number)) - 1]}_{number}"
    taken.add(unique)
    return unique


def _has_side_effects(annotations: Any) -> bool:
    """What a server says explicitly: destructive and not read-only (an unannotated tool says nothing)."""
    return bool(annotations and annotations.destructive_hint and not annotations.read_only_hint)


def _needs_tasks(spec: ToolSpec) -> bool:
    """A tool whose `execution.taskSupport` is "required" cannot be called with a plain tools/call."""
    execution = getattr(spec, "execution", None)
    return getattr(execution, "task_support", None) == "required"


async def _list_tools(client: Client, refresh: bool = False) -> list[ToolSpec]:
    """Every page of the server's tools (`refresh`: from the server, not the client's cache)."""
    specs: list[ToolSpec] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh" if refresh else "use")
        specs.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return specs


def _transport_of(command: str | None, url: str | None, transport: Transport | None) -> Transport:
    """stdio for a command; for a URL, what was asked, else legacy SSE when its path ends in /sse."""
    if command is not None:
        if transport not in (None, "stdio"):
            raise ValueError(f"MCPToolProvider: a command speaks stdio, not {transport!r}")
        return "stdio"
    if transport not in (None, "streamable-http", "sse"):
        raise ValueError(f"MCPToolProvider: transport must be 'streamable-http' or 'sse' for a URL, not {transport!r}")
    path = urllib.parse.urlsplit(str(url)).path.rstrip("/")
    return transport or ("sse" if path.endswith("/sse") else "streamable-http")


def _process_of(stdio: Any) -> Any:
    """The server process of a running `stdio_client`, read from its generator's frame: the SDK keeps it
    to itself (its local `process`); None when it cannot be found."""
    frame = getattr(getattr(stdio, "gen", None), "ag_frame", None)
    process = frame.f_locals.get("process") if frame is not None else None
    return process if hasattr(process, "returncode") else None


def _signal_name(number: int) -> str:
    try:
        return f"{signal.Signals(number).name} ({number})"
    except ValueError:
        return str(number)


def _reason(exc: BaseException) -> str:
    """One line for an exception, looking inside the exception groups task groups raise."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


__all__ = ["MCPTool", "MCPToolProvider"]
