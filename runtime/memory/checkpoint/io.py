"""Recorded model and tool I/O: what makes a replay deterministic and offline.

Nodes call `ctx.io_recorder.model_call(...)` / `tool_call(...)` around every model
request and tool call, keyed by node path, round and attempt/call index:

- `IORecorder` performs the call and stores request and response (or the error) with
  the run. A growing conversation is stored as appended chunks, so recording costs the
  new messages only. A model keeping a position of its own (a scripted model) has that
  position recorded after each call, and put back whenever the recorded answer is served.
  Each call also keeps the tick its answer landed in (`LANDED`: the line's tick count when it
  came back; it lands after that tick's end, before the next tick), so a check can hand a
  served answer over when the recorded one arrived, not at once.
- `IOReplayer` serves the recorded answers without calling anything. When the request
  differs from the recorded one, strict mode stops the run with `ReplayDivergence`
  naming the node and the first differing message; non-strict mode goes live (the real
  call, recorded under the current run and branch).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from ...model.errors import ModelError
from ...tools.base import ToolError
from .model import ListTracker, jsonable
from .positions import positioned
from .store import CheckpointStore, IORecord

if TYPE_CHECKING:
    from ...messages import Message
    from ...model import ModelConfig, ModelResponse

_SHOWN = 80  # characters of a message shown in a divergence
POSITION_AFTER = "position_after"  # in a model call's request: its model's position once it answered
LANDED = "landed"  # in a call's request: the line's tick count when its answer (or error) came back


class Line(Protocol):
    """What a recorder follows once attached: a runner's line of checkpoints (`RunnerCheckpoints`,
    which attaches it), whose run and branch its records go under and whose nodes make the calls
    (`node(path)`: a swarm agent's too)."""

    runner: Any  # the `ReactiveRunner`: its `run_id` and `nodes`
    branch: str

    def node(self, path: str) -> Any: ...


def _positioned(checkpoints: Line | None, node: str) -> Any:
    """The model provider of the node at path `node` (a swarm agent's too) when it keeps a position of
    its own (a scripted model), else None.

    Its position after each call is recorded with the call; serving the recorded answer puts
    the position there again, so a replay or fork leaves the model where the recorded run did
    and a request the recording lacks gets the answer that came next, not one already used.
    """
    return positioned(checkpoints.node(node)) if checkpoints is not None else None


class ReplayDivergence(RuntimeError):
    """A replayed request differs from the recorded one (the message names node and message)."""


class ReplayedModelError(ModelError):
    """A recorded model failure, raised again on replay."""


class ReplayedToolError(ToolError):
    """A recorded tool failure, raised again on replay."""


def _error_record(exc: BaseException) -> dict[str, str]:
    return {"type": type(exc).__name__, "module": type(exc).__module__, "message": str(exc)}


def _recorded_error(error: dict[str, str], fallback: type[Exception]) -> Exception:
    """The recorded exception again: the same class when it is a runtime model/tool error."""
    base = fallback.__mro__[1]
    try:
        cls = getattr(importlib.import_module(error["module"]), error["type"])
        if isinstance(cls, type) and issubclass(cls, base) and error["module"].startswith("runtime."):
            return cls(error["message"])
    except (ImportError, AttributeError, TypeError):
        pass
    return fallback(f"{error['type']}: {error['message']}")


class IORecorder:
    """Performs each call and records it under the current run and branch."""

    def __init__(self, store: CheckpointStore, run_id: str | None = None, branch: str = "main"):
        self.store = store
        self._run_id = run_id
        self._branch = branch
        self._checkpoints: Line | None = None
        self._lists = ListTracker()

    def attach(self, checkpoints: Line) -> None:
        """Follow a runner's run id and branch (done by `ReactiveRunner(..., checkpointer=)`)."""
        self._checkpoints = checkpoints

    @property
    def run_id(self) -> str:
        if self._checkpoints is not None:
            return self._checkpoints.runner.run_id or ""
        return self._run_id or ""

    @property
    def branch(self) -> str:
        return self._checkpoints.branch if self._checkpoints is not None else self._branch

    def _landed(self, request: dict[str, Any]) -> None:
        if self._checkpoints is not None:
            request[LANDED] = self._checkpoints.runner.tick_count

    async def _record(self, kind: str, node: str, round: int, index: int, request: dict[str, Any],
                      chunks: list, call: Callable[[], Awaitable[Any]], dump: Callable[[Any], Any]) -> Any:
        provider = _positioned(self._checkpoints, node) if kind == "model" else None
        try:
            result = await call()
        except Exception as exc:
            self._landed(request)
            if provider is not None:
                request[POSITION_AFTER] = provider.dump_resume_state()
            await self._put(IORecord(self.run_id, self.branch, kind, node, round, index, request,
                                     error=_error_record(exc)), chunks)
            raise
        self._landed(request)
        if provider is not None:
            request[POSITION_AFTER] = provider.dump_resume_state()
        await self._put(IORecord(self.run_id, self.branch, kind, node, round, index, request, dump(result)), chunks)
        return result

    async def _put(self, record: IORecord, chunks: list) -> None:
        """Into an asyncio store, awaited (the event loop runs on meanwhile)."""
        put_async = getattr(self.store, "put_io_async", None)
        if put_async is not None:
            await put_async(record, chunks)
        else:
            self.store.put_io(record, chunks)

    async def model_call(self, node: str, round: int, attempt: int, messages: list[Message], config: ModelConfig,
                         call: Callable[[], Awaitable[ModelResponse]]) -> ModelResponse:
        chunks: list = []
        request = {"messages": self._lists.encode(node, list(messages), chunks),
                   "config": config.model_dump(mode="json")}
        return await self._record("model", node, round, attempt, request, chunks, call,
                                  lambda r: r.model_dump(mode="json"))

    async def tool_call(self, node: str, round: int, index: int, name: str, arguments: dict,
                        call: Callable[[], Awaitable[str]]) -> str:
        request = {"name": name, "arguments": jsonable(arguments)}
        return await self._record("tool", node, round, index, request, [], call, str)


def _show(message: dict[str, Any] | None) -> str:
    if message is None:
        return "nothing"
    text = message.get("content")
    if not text and message.get("tool_calls"):
        text = jsonable(message["tool_calls"])
    text = str(text or "")
    text = text if len(text) <= _SHOWN else text[:_SHOWN - 1] + "…"
    return f"{message.get('role')} {text!r}"


def first_difference(recorded: list[dict[str, Any]], actual: list[dict[str, Any]]) -> str | None:
    """'message 3: recorded user '…' vs actual user '…'', or None when the lists are equal."""
    for i in range(max(len(recorded), len(actual))):
        old = recorded[i] if i < len(recorded) else None
        new = actual[i] if i < len(actual) else None
        if old != new:
            return f"message {i}: recorded {_show(old)} vs actual {_show(new)}"
    return None


class IOReplayer:
    """Serves the I/O recorded for `source_run_id`; diverging requests stop the run or go live.

    Records of `source_branch` (the branch replayed) come first; without one, those of the
    runner's current branch.
    """

    def __init__(self, store: CheckpointStore, source_run_id: str, strict: bool = True,
                 live_fallback: IORecorder | None = None, source_branch: str | None = None):
        self.store = store
        self.source_run_id = source_run_id
        self.source_branch = source_branch
        self.strict = strict
        self.live = live_fallback or IORecorder(store)
        self.divergences: list[str] = []  # what differed (and went live, when not strict)
        self._pending: ReplayDivergence | None = None
        self._checkpoints: Line | None = None

    def attach(self, checkpoints: Line) -> None:
        self._checkpoints = checkpoints
        self.live.attach(checkpoints)

    async def _lookup(self, kind: str, node: str, round: int, index: int) -> IORecord | None:
        """The recorded call; from an asyncio store, awaited (the event loop runs on meanwhile)."""
        branch = self.source_branch or (self._checkpoints.branch if self._checkpoints is not None else None)
        get_async = getattr(self.store, "get_io_async", None)
        if get_async is not None:
            return await get_async(self.source_run_id, kind, node, round, index, branch)
        return self.store.get_io(self.source_run_id, kind, node, round, index, branch)

    def _diverge(self, problem: str) -> None:
        self.divergences.append(problem)
        if self.strict:
            self._pending = ReplayDivergence(problem)
            raise self._pending

    def take_divergence(self) -> ReplayDivergence | None:
        """The strict divergence met since the last call: the runner raises it after its tick,
        so the run stops even when the failing node would have been retried or caught."""
        pending, self._pending = self._pending, None
        return pending

    async def model_call(self, node: str, round: int, attempt: int, messages: list[Message], config: ModelConfig,
                         call: Callable[[], Awaitable[ModelResponse]]) -> ModelResponse:
        record = await self._lookup("model", node, round, attempt)
        problem = self.model_problem(record, node, round, attempt, messages, config)
        if problem:
            self._diverge(problem)
            return await self.live.model_call(node, round, attempt, messages, config, call)
        await self.landing(record)
        return self._served_model(record, node)

    def model_problem(self, record: IORecord | None, node: str, round: int, attempt: int,
                      messages: list[Message], config: ModelConfig) -> Any:
        """What makes the recorded call unfit to serve this request (None: it fits)."""
        if record is None:
            return f"no recorded model call for node {node!r} round {round}" + (f" attempt {attempt}" if attempt else "")
        ref = record.request["messages"]
        difference = first_difference(self.store.read_list(ref[1], ref[2]), [jsonable(m) for m in messages])
        return difference and f"replay diverged at node {node!r} round {round}: {difference}"

    def _served_model(self, record: IORecord, node: str) -> ModelResponse:
        from ...model import ModelResponse

        self.position_after(record, node)
        if record.error is not None:
            raise _recorded_error(record.error, ReplayedModelError)
        return ModelResponse.model_validate(record.response)

    def position_after(self, record: IORecord, node: str) -> None:
        """Put the model of `node`, when it keeps a position of its own, where the recorded call left it."""
        provider = _positioned(self._checkpoints, node)
        if provider is not None and POSITION_AFTER in record.request:
            provider.restore_resume_state(record.request[POSITION_AFTER])

    async def tool_call(self, node: str, round: int, index: int, name: str, arguments: dict,
                        call: Callable[[], Awaitable[str]]) -> str:
        record = await self._lookup("tool", node, round, index)
        problem = self.tool_problem(record, node, round, index, name, arguments)
        if problem:
            self._diverge(problem)
            return await self.live.tool_call(node, round, index, name, arguments, call)
        await self.landing(record)
        if record.error is not None:
            raise _recorded_error(record.error, ReplayedToolError)
        return record.response

    async def landing(self, record: IORecord) -> None:
        """Wait until the recorded answer is due (here: at once; a check holds it until the tick it
        landed in, `LANDED`)."""

    def tool_problem(self, record: IORecord | None, node: str, round: int, index: int, name: str,
                     arguments: dict) -> Any:
        """What makes the recorded call unfit to serve this one (None: it fits)."""
        if record is None:
            return f"no recorded tool call for node {node!r} round {round} call {index}"
        if tool_request(record) != {"name": name, "arguments": jsonable(arguments)}:
            return (f"replay diverged at node {node!r} round {round} tool call {index}: recorded "
                    f"{record.request['name']}({record.request['arguments']}) vs actual {name}({jsonable(arguments)})")
        return None


def recorded_messages(store: CheckpointStore, record: IORecord) -> list[dict[str, Any]]:
    """A recorded model call's messages, as JSON (a conversation is stored as a list reference)."""
    ref = record.request.get("messages")
    if isinstance(ref, list) and len(ref) == 3 and ref[0] == "l":
        return list(store.read_list(ref[1], ref[2]))
    return list(ref or [])


def tool_request(record: IORecord) -> dict[str, Any]:
    """A recorded tool call's name and arguments (what a call now is compared with)."""
    return {"name": record.request.get("name"), "arguments": record.request.get("arguments")}


__all__ = ["LANDED", "IORecorder", "IOReplayer", "ReplayDivergence", "ReplayedModelError", "ReplayedToolError",
           "first_difference", "recorded_messages", "tool_request"]
