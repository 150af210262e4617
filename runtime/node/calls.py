"""How nodes reach the outside world: model calls and tool calls, through the I/O recorder.

Every model and tool call goes through `RunContext.io_recorder` when one is installed, so
a run can be recorded and replayed deterministically; without one, the call just runs.
`run_tool` also publishes the seed's `tool.call.*` telemetry, and folds every failure
into a `ToolError` whose one-line message becomes the observation the model reads.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..engine.events import EventType
from ..engine.loop_share import take_turn
from ..engine.user_code import FAILURES, PASSED_ON, described
from ..messages import Message
from ..model import ModelConfig, ModelResponse
from ..model.client import checked_client
from ..tools import Tool, ToolError
from ..tools.base import error_line
from ..tools.bounds import capped
from ..tools.observation import split_images, with_images

ToolRunner = Callable[[Tool, Mapping[str, Any]], Awaitable[Any]]
"""Runs a validated tool call in place of `tool.call(arguments)` (a sandbox, a remote worker)."""


def tool_runner_of(node: Any, runner: ToolRunner | None) -> ToolRunner | None:
    """The node's own runner, else the run's `RunContext.sandbox` (a `ToolRunner`, or an object
    whose `run(tool, arguments)` is one), else None: the tool runs in process."""
    if runner is not None:
        return runner
    sandbox = node.ctx.sandbox if node.ctx is not None else None
    if sandbox is None or callable(sandbox):
        return sandbox
    run = getattr(sandbox, "run", None)
    if not callable(run):
        raise TypeError(f"RunContext.sandbox must be a ToolRunner or have a run(tool, arguments) method, "
                        f"not a {type(sandbox).__name__}")
    return run


def _recorder(node: Any) -> Any:
    ctx = node.ctx
    return ctx.io_recorder if ctx is not None else None


async def call_model(node: Any, messages: list[Message], config: ModelConfig, *, round: int, attempt: int = 0,
                     path: str | None = None, on_delta: Callable[[str], None] | None = None,
                     on_restart: Callable[[], None] | None = None) -> ModelResponse:
    """One logical model call of `node` (its ModelClient publishes `model.call.*` and `text.delta`),
    with the node's `resilience` when it has one."""
    client = checked_client(node.model_client, f"node {node.path!r}")
    if client is None:
        raise RuntimeError(f"node {node.path!r} has no model client: pass model_client= or set RunContext.model_client")

    async def call() -> ModelResponse:
        response = await client.invoke(messages, config, event_bus=node.event_bus, node=node.path, on_delta=on_delta,
                                       on_restart=on_restart, resilience=getattr(node, "resilience", None))
        if (turn := take_turn(node.ctx)) is not None:  # answers come due together: their work takes turns
            await turn
        return response

    recorder = _recorder(node)
    if recorder is None:
        return await call()
    return await recorder.model_call(path or node.path, round, attempt, messages, config, call)


async def run_tool(node: Any, tool: Tool, call_id: str, arguments: Mapping[str, Any], *, round: int, index: int,
                   runner: ToolRunner | None = None) -> str:
    """Execute one tool call (through `runner`, else the run's sandbox) and return its observation
    text; raises `ToolError` on any failure."""
    runner = tool_runner_of(node, runner)
    node.emit(EventType.TOOL_CALL_STARTED, {"tool": tool.name, "call_id": call_id, "arguments": dict(arguments),
                                            "index": index, "round": round})
    started = time.monotonic()

    async def call() -> str:
        try:
            result = await _within(runner(tool, arguments) if runner is not None else tool.call(arguments), tool)
        except ToolError:
            raise
        except asyncio.CancelledError as exc:
            if _stopping():
                raise
            raise ToolError(f"tool '{tool.name}' failed: CancelledError (a cancellation the run did not ask "
                            "for)") from exc
        except PASSED_ON:
            raise
        except FAILURES as exc:  # sys.exit() in a tool is its failure (runtime.engine.user_code)
            raise ToolError(f"tool '{tool.name}' failed: {described(exc)}") from exc
        if (turn := take_turn(node.ctx)) is not None:  # (as a model's answer)
            await turn
        try:
            observation = Tool.format_result(result)
        except Exception as exc:  # bytes that are not UTF-8, a structure holding itself, a broken __str__
            raise ToolError(f"tool '{tool.name}' returned a value of type {type(result).__name__} that is "
                            f"neither text nor JSON: {error_line(exc)}") from exc
        return _capped(observation, tool)

    recorder = _recorder(node)
    try:
        if recorder is None:
            observation = await call()
        else:
            observation = await recorder.tool_call(node.path, round, index, tool.name, dict(arguments), call)
    except ToolError as exc:
        tool_failed(node, tool.name, call_id, str(exc), started)
        raise
    node.emit(EventType.TOOL_CALL_COMPLETED, {"tool": tool.name, "call_id": call_id, "index": index,
                                              "duration_ms": elapsed_ms(started),
                                              "observation": split_images(observation)[0][:500]})
    return observation


async def _within(call: Awaitable[Any], tool: Tool) -> Any:
    """`await call`, or a `ToolError` naming the tool once its `timeout` has run out (its own
    TimeoutError, raised sooner, is its failure)."""
    deadline = asyncio.timeout(tool.timeout)
    try:
        async with deadline:
            return await call
    except TimeoutError as exc:
        if not deadline.expired():
            raise
        raise ToolError(f"tool '{tool.name}' gave no answer within {tool.timeout:g}s") from exc


def _capped(observation: str, tool: Tool) -> str:
    """The observation's text cut at the tool's `max_output_chars` (the images it carries kept whole)."""
    text, images = split_images(observation)
    if tool.max_output_chars is None or len(text) <= tool.max_output_chars:
        return observation
    text = capped(text, tool.max_output_chars, f"tool '{tool.name}'")
    return with_images(text, images) if images else text


def _stopping() -> bool:
    """Whether this task is being cancelled (the run stops), not a tool raising CancelledError itself."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def tool_failed(node: Any, tool: str, call_id: str | None, error: str, started: float | None = None) -> None:
    """Publish `tool.call.failed` (also for calls refused before they ran: bad arguments, denied)."""
    node.emit(EventType.TOOL_CALL_FAILED, {"tool": tool, "call_id": call_id, "error": error,
                                           "duration_ms": elapsed_ms(started) if started is not None else 0.0})


def elapsed_ms(started: float) -> float:
    """Milliseconds since a `time.monotonic()` reading."""
    return round((time.monotonic() - started) * 1000, 1)


__all__ = ["ToolRunner", "call_model", "elapsed_ms", "run_tool", "tool_failed"]
