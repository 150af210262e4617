"""`MCPToolProvider`: the tools of an MCP server (stdio or streamable HTTP) as runtime `Tool`s.

    provider = MCPToolProvider(sys.executable, ["server.py"])             # stdio: a child process
    provider = MCPToolProvider(url="http://127.0.0.1:8000/mcp", headers={"Authorization": "Bearer ..."})
    create_react_node(..., tool_providers=[provider])

The transport and session are async context managers, which must be entered and exited in
one task, while the tree lists and calls tools from its own tasks: so one task owns the
connection for its whole life and `close()` asks it to unwind. Left unclosed, that task is
cancelled when the event loop shuts down, which still stops the server process.

A server's stderr is kept in a temporary file (it would scribble over the studio's
screen); its last line is quoted when the server fails to start or dies.

The `mcp` package is imported on first connection: it is slow to import, and a runtime
that never speaks MCP should not pay for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import math
import os
import re
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from runtime.tools.base import Tool, ToolError
from runtime.tools.provider import ToolProvider
from runtime.tools.schema_check import check_arguments, schema_validator

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult, ContentBlock
    from mcp.types import Tool as ToolSpec

log = logging.getLogger(__name__)

MAX_TOOL_PAGES = 100  # a server whose tools/list never stops paginating cannot hang initialize()
_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


class MCPToolProvider(ToolProvider):
    """Connects in `initialize()`, lists the server's tools, calls them, disconnects in `close()`.

    Give `command` (+ `args`, `env` over a minimal inherited environment, `cwd`) for a
    stdio server, or `url` (+ `headers`) for a streamable-HTTP one. `name` labels the
    server in errors (default: the command line or the URL). Every call is bounded by
    `call_timeout` seconds, connecting and listing by `connect_timeout`.
    """

    def __init__(self, command: str | None = None, args: Sequence[str] = (), *,
                 env: Mapping[str, str] | None = None, cwd: str | Path | None = None,
                 url: str | None = None, headers: Mapping[str, str] | None = None, name: str | None = None,
                 call_timeout: float = 60.0, connect_timeout: float = 30.0):
        if (command is None) == (url is None):
            raise ValueError("MCPToolProvider needs command= (a stdio server) or url= (streamable HTTP), not both")
        self.command, self.args = command, list(args)
        self.env, self.cwd = (dict(env) if env is not None else None), cwd
        self.url, self.headers = url, dict(headers or {})
        self.target = shlex.join([command, *self.args]) if command is not None else str(url)
        self.name = name or self.target
        self.call_timeout, self.connect_timeout = call_timeout, connect_timeout
        self._client: Client | None = None
        self._tools: list[MCPTool] = []
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._stderr: Any = None  # the stdio server's stderr file while it runs

    def __repr__(self) -> str:
        return f"MCPToolProvider({self.name!r})"

    # -- lifecycle -----------------------------------------------------------------------
    async def initialize(self) -> None:
        """Start (or reach) the server and list its tools; `ToolError` naming the server if that fails."""
        if self._task is not None:
            return
        ready: asyncio.Future[list[ToolSpec]] = asyncio.get_running_loop().create_future()
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
        return [MCPTool(self, spec) for spec in specs if not _needs_tasks(spec)]

    async def get_tools(self, **kwargs: Any) -> list[Tool]:
        if self._task is None:
            raise RuntimeError(f"{self!r}: call initialize() before get_tools()")
        return list(self._tools)

    async def close(self) -> None:
        """Close the session and the transport (a stdio server is asked to exit, then killed)."""
        task, self._task = self._task, None
        if task is None:
            return
        self._stop.set()
        try:
            await task
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
                self._stderr = None

    async def _connect_and_wait(self, ready: asyncio.Future[list[ToolSpec]]) -> None:
        import anyio
        from mcp import Client

        with anyio.CancelScope(deadline=anyio.current_time() + self.connect_timeout) as scope:
            async with contextlib.AsyncExitStack() as stack:
                client = await stack.enter_async_context(
                    Client(await self._transport(stack), read_timeout_seconds=self.call_timeout))
                specs = await _list_tools(client)
                scope.deadline = math.inf
                self._client = client
                ready.set_result(specs)
                await self._stop.wait()
        if scope.cancelled_caught and not ready.done():
            ready.set_exception(self._start_error(f"no answer within {self.connect_timeout:g}s"))

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        """The transport for `Client`: a child process over stdio, or streamable HTTP."""
        if self.command is not None:
            from mcp import StdioServerParameters, stdio_client

            params = StdioServerParameters(command=self.command, args=self.args, env=self.env, cwd=self.cwd)
            return stdio_client(params, errlog=self._stderr)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        # a response may stream for a whole call; 300 s is also the SDK's own read timeout
        timeout = httpx2.Timeout(self.connect_timeout, read=max(self.call_timeout, 300.0))
        http = await stack.enter_async_context(httpx2.AsyncClient(headers=self.headers, timeout=timeout))
        return streamable_http_client(str(self.url), http_client=http)

    # -- calling -------------------------------------------------------------------------
    async def call_tool(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        """Call `tool` on the server: its text (else its structured content), or a `ToolError`."""
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        client = self._client
        if client is None:
            raise ToolError(f"tool '{tool}': MCP server {self.name} is not connected (it stopped or was "
                            f"closed){self._stderr_hint()}")
        try:
            result = await client.call_tool(tool, dict(arguments), read_timeout_seconds=self.call_timeout)
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise ToolError(f"tool '{tool}': MCP server {self.name} gave no answer within "
                                f"{self.call_timeout:g}s") from exc
            if exc.code == CONNECTION_CLOSED:
                self._client = None  # later calls fail at once; close() still unwinds the owner task
                raise ToolError(f"tool '{tool}': MCP server {self.name} exited or closed the connection before "
                                f"answering{self._stderr_hint()}") from exc
            raise ToolError(f"tool '{tool}': MCP server {self.name} refused the call: {exc}") from exc
        except Exception as exc:
            raise ToolError(f"tool '{tool}': MCP server {self.name}: {_reason(exc)}{self._stderr_hint()}") from exc
        return self._result(tool, result)

    def _result(self, tool: str, result: CallToolResult) -> Any:
        text = "\n".join(_block_text(block) for block in result.content)
        if result.is_error:
            raise ToolError(f"tool '{tool}' (MCP server {self.name}): {text or 'failed without a message'}")
        if not text and result.structured_content is not None:
            return result.structured_content
        return text

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
    `_`; `remote_name` keeps the server's name. A tool runs alone in its round only when the
    server says it has side effects (`destructiveHint`, not `readOnlyHint`); any other runs in
    parallel with the round's other calls, as every tool does by default.
    """

    Args = _AnyObject

    def __init__(self, provider: MCPToolProvider, spec: ToolSpec):
        self.provider = provider
        self.remote_name = spec.name
        self.input_schema = dict(spec.input_schema)
        self._validator = schema_validator(self.input_schema)
        annotations = spec.annotations
        super().__init__(name=_INVALID_NAME_CHARS.sub("_", spec.name)[:64] or "_",
                         description=spec.description or spec.title or f"{spec.name} (MCP server {provider.name})",
                         parallel_safe=not _has_side_effects(annotations))

    def parameters(self) -> dict[str, Any]:
        params = copy.deepcopy(self.input_schema)
        params.pop("title", None)
        params.pop("$schema", None)  # a JSON-schema dialect tag: strict model APIs refuse it
        return params

    def validate(self, arguments: Mapping[str, Any]) -> BaseModel:
        model = super().validate(arguments)  # the "must be an object" check
        check_arguments(self.name, self._validator, arguments)
        return model

    async def call(self, arguments: Mapping[str, Any]) -> Any:
        self.validate(arguments)
        return await self.provider.call_tool(self.remote_name, arguments)


def _has_side_effects(annotations: Any) -> bool:
    """What a server says explicitly: destructive and not read-only (an unannotated tool says nothing)."""
    return bool(annotations and annotations.destructive_hint and not annotations.read_only_hint)


def _needs_tasks(spec: ToolSpec) -> bool:
    """A tool whose `execution.taskSupport` is "required" cannot be called with a plain tools/call."""
    execution = getattr(spec, "execution", None)
    return getattr(execution, "task_support", None) == "required"


async def _list_tools(client: Client) -> list[ToolSpec]:
    specs: list[ToolSpec] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        specs.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return specs


def _block_text(block: ContentBlock) -> str:
    """A content block as observation text (non-text media are named, not inlined)."""
    if block.type == "text":
        return block.text
    if block.type == "resource":
        contents = block.resource
        text = getattr(contents, "text", None)
        return text if text is not None else f"[resource {contents.uri} ({contents.mime_type or 'binary'})]"
    if block.type == "resource_link":
        return f"[resource {block.uri}]"
    return f"[{block.type} {block.mime_type}]"


def _reason(exc: BaseException) -> str:
    """One line for an exception, looking inside the exception groups task groups raise."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


__all__ = ["MCPTool", "MCPToolProvider"]
