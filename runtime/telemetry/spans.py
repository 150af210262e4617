"""A run's events as OpenTelemetry GenAI spans: one trace per run, nested as the tree ran.

`RunTracer` reads `RuntimeEvent`s in the order they happened, live from a run's event bus or
afterwards from a store, and makes the same spans from both, at the events' own times:

    invoke_agent ROOT                      the run (run.started or its first event, to its end)
      NODE ...                             each stretch a node ran over ticks (its status RUNNING:
        NODE                               composites, and leaves waiting on a model or a tool)
          chat MODEL                       one model call (an attempt), under the node that made it
          execute_tool TOOL                one tool call; the MCP client's own spans nest under it

`spans="ticks"` puts a span per tick under the run instead of the node spans (model and tool calls
run between ticks, so they sit beside them, under the run); `spans="run"` keeps only the run and
its calls. The attribute names are the GenAI semantic conventions'; `jianmu.*` ones say where in
the tree. Contents (messages, arguments, results) only with the conventions' opt-in
(`content.py`).

Live, a call's span is also made the current span of the task that makes the call (the events of
one call are published in its task), so spans other libraries make inside it (the MCP SDK's
`MCP send tools/call`, an HTTP client's) nest under it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from ..engine.events import EventType, RuntimeEvent
from .content import captures_content

SPAN_MODES = ("nodes", "ticks", "run")
RUNNING = "RUNNING"
LIBRARY = "jianmu.runtime"
EVENT_TYPES = frozenset({
    EventType.RUN_STARTED, EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_SUSPENDED,
    EventType.TICK_STARTED, EventType.TICK_COMPLETED,
    EventType.MODEL_CALL_STARTED, EventType.MODEL_CALL_COMPLETED, EventType.MODEL_CALL_FAILED,
    EventType.TOOL_CALL_STARTED, EventType.TOOL_CALL_COMPLETED, EventType.TOOL_CALL_FAILED,
})
"""What a tracer reads (the bus builds no other event for it)."""


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


@dataclass
class _Call:
    """An open chat or tool span, and the context token that made it current in its task (live only)."""

    span: Span
    model: str | None = None
    token: Any = None
    task: Any = None


@dataclass
class _Run:
    span: Span
    tick_started: float
    nodes: dict[str, Span] = field(default_factory=dict)
    tick: Span | None = None
    chats: dict[str | None, list[_Call]] = field(default_factory=dict)
    tools: dict[tuple[str | None, str | None], _Call] = field(default_factory=dict)


class RunTracer:
    """Spans from one bus's (or one recording's) events; `close()` ends whatever is still open."""

    def __init__(self, tracer_provider: Any = None, *, agent: str | None = None, spans: str = "nodes",
                 live: bool = False):
        if spans not in SPAN_MODES:
            raise ValueError(f"spans={spans!r}: one of {', '.join(SPAN_MODES)}")
        self.tracer = trace.get_tracer(LIBRARY, tracer_provider=tracer_provider)
        self.agent = agent
        self.spans = spans
        self.live = live
        self.content = captures_content()
        self._runs: dict[str, _Run] = {}

    @property
    def wanted(self) -> frozenset[str]:
        """The event types this tracer reads with its span mode."""
        if self.spans == "run":
            return EVENT_TYPES - {EventType.TICK_STARTED, EventType.TICK_COMPLETED}
        return EVENT_TYPES

    def feed(self, events: Iterable[RuntimeEvent]) -> None:
        for event in events:
            self.on_event(event)

    def on_event(self, event: RuntimeEvent) -> None:
        if event.run_id is None or event.type not in EVENT_TYPES:
            return
        run = self._runs.get(event.run_id)
        if run is None:
            if event.type in (EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_SUSPENDED):
                return  # the end of a run this tracer never saw begin
            run = self._start_run(event)
        handler = _HANDLERS.get(event.type)
        if handler is not None:
            handler(self, run, event)

    def close(self, end: float | None = None) -> None:
        """End every open span (a run stopped before it finished: the studio quit, the process exits)."""
        for run_id in list(self._runs):
            self._end_run(run_id, end, stopped="unfinished")

    # -- the run ---------------------------------------------------------------------------
    def _start_run(self, event: RuntimeEvent) -> _Run:
        for other in list(self._runs):  # a bus runs one run at a time: a new one replaces the last
            self._end_run(other, event.time, stopped="replaced")
        agent = self.agent or (event.node or "").partition("/")[0] or "agent"
        parent = None if self.live else otel_context.Context()  # live: under the host's current span, if any
        span = self.tracer.start_span(f"invoke_agent {agent}", context=parent, kind=SpanKind.INTERNAL,
                                      start_time=_ns(event.time), attributes={
                                          "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent,
                                          "gen_ai.agent.id": event.run_id, "jianmu.run.id": event.run_id})
        run = _Run(span, event.time)
        self._runs[str(event.run_id)] = run
        return run

    def _finished(self, run: _Run, event: RuntimeEvent) -> None:
        payload = event.payload
        if event.type == EventType.RUN_SUSPENDED:
            stopped = "suspended"
        elif event.type == EventType.RUN_FAILED:
            stopped = "failed"
            error = str(payload.get("error") or "")
            run.span.set_attribute("error.type", _error_type(error) if error else str(payload.get("status")))
            run.span.set_status(Status(StatusCode.ERROR, error or f"the tree returned {payload.get('status')}"))
        else:
            stopped = "completed"
        if "ticks" in payload:
            run.span.set_attribute("jianmu.run.ticks", int(payload["ticks"]))
        self._end_run(str(event.run_id), event.time, stopped=stopped)

    def _end_run(self, run_id: str, end: float | None, stopped: str) -> None:
        run = self._runs.pop(run_id)
        end_ns = None if end is None else _ns(end)
        for key in list(run.tools):
            self._end_call(run.tools.pop(key), end_ns)
        for calls in run.chats.values():
            for call in calls:
                self._end_call(call, end_ns)
        if run.tick is not None:
            run.tick.end(end_ns)
        for path in sorted(run.nodes, key=_depth, reverse=True):
            run.nodes[path].end(end_ns)
        run.span.set_attribute("jianmu.run.stopped", stopped)
        run.span.end(end_ns)

    # -- ticks and nodes -------------------------------------------------------------------
    def _tick_started(self, run: _Run, event: RuntimeEvent) -> None:
        run.tick_started = event.time
        if self.spans == "ticks":
            run.tick = self.tracer.start_span(f"tick {event.tick}", context=trace.set_span_in_context(run.span),
                                              start_time=_ns(event.time), attributes={"jianmu.tick": event.tick})

    def _tick_completed(self, run: _Run, event: RuntimeEvent) -> None:
        if run.tick is not None:
            run.tick.set_attribute("jianmu.tick.status", str(event.payload.get("status")))
            run.tick.end(_ns(event.time))
            run.tick = None
        if self.spans != "nodes":
            return
        changed = event.payload.get("changed") or {}
        for path in sorted(changed, key=_depth, reverse=True):  # children end before their parents
            old, new = changed[path]
            if old == RUNNING and path in run.nodes:
                span = run.nodes.pop(path)
                span.set_attribute("jianmu.node.status", new)
                span.end(_ns(event.time))
        for path in sorted(changed, key=_depth):  # parents start before their children
            if changed[path][1] == RUNNING and path not in run.nodes:
                name = path.rpartition("/")[2]
                run.nodes[path] = self.tracer.start_span(
                    name, context=trace.set_span_in_context(self._parent(run, path.rpartition("/")[0])),
                    start_time=_ns(run.tick_started), attributes={"jianmu.node.path": path, "jianmu.tick": event.tick})

    def _parent(self, run: _Run, path: str | None) -> Span:
        """The span of the node at `path`, else of its nearest ancestor with one, else the run's."""
        while path:
            if path in run.nodes:
                return run.nodes[path]
            path = path.rpartition("/")[0]
        return run.span

    # -- model and tool calls --------------------------------------------------------------
    def _call_span(self, run: _Run, event: RuntimeEvent, name: str, kind: SpanKind,
                   attributes: dict[str, Any]) -> _Call:
        attributes = {**attributes, "jianmu.tick": event.tick}
        if event.node:
            attributes["jianmu.node.path"] = event.node
        span = self.tracer.start_span(name, context=trace.set_span_in_context(self._parent(run, event.node)),
                                      kind=kind, start_time=_ns(event.time), attributes=attributes)
        call = _Call(span)
        if self.live:  # spans made inside the call (the MCP SDK's) nest under it
            call.task = _current_task()
            call.token = otel_context.attach(trace.set_span_in_context(span))
        return call

    def _end_call(self, call: _Call, end_ns: int | None) -> None:
        if call.token is not None and call.task is _current_task():
            otel_context.detach(call.token)
        call.span.end(end_ns)

    def _model_started(self, run: _Run, event: RuntimeEvent) -> None:
        model = event.payload.get("model")
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat"}
        if model:
            attributes["gen_ai.request.model"] = model
        if self.content and "input_messages" in event.payload:
            attributes["gen_ai.input.messages"] = json.dumps(event.payload["input_messages"], ensure_ascii=False)
        call = self._call_span(run, event, f"chat {model}" if model else "chat", SpanKind.CLIENT, attributes)
        call.model = model
        run.chats.setdefault(event.node, []).append(call)

    def _model_ended(self, run: _Run, event: RuntimeEvent) -> None:
        calls = run.chats.get(event.node)
        if not calls:
            return
        call = calls.pop(0)
        span, payload = call.span, event.payload
        if event.type == EventType.MODEL_CALL_FAILED:
            error = str(payload.get("error") or "model call failed")
            span.set_attribute("error.type", _error_type(error))
            span.set_status(Status(StatusCode.ERROR, error))
        else:
            model = payload.get("model")
            if model:
                span.set_attribute("gen_ai.response.model", model)
                if not call.model:  # the provider's default model answered
                    span.set_attribute("gen_ai.request.model", model)
                    span.update_name(f"chat {model}")
            usage = payload.get("usage") or {}
            for ours, theirs in (("prompt_tokens", "gen_ai.usage.input_tokens"),
                                 ("completion_tokens", "gen_ai.usage.output_tokens")):
                if usage.get(ours) is not None:
                    span.set_attribute(theirs, int(usage[ours]))
            if payload.get("finish_reason"):
                span.set_attribute("gen_ai.response.finish_reasons", [str(payload["finish_reason"])])
            if self.content and "output_message" in payload:
                output = {**payload["output_message"], "finish_reason": payload.get("finish_reason")}
                span.set_attribute("gen_ai.output.messages", json.dumps([output], ensure_ascii=False))
        self._end_call(call, _ns(event.time))

    def _tool_started(self, run: _Run, event: RuntimeEvent) -> None:
        payload = event.payload
        attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": payload["tool"],
                                      "gen_ai.tool.type": "function"}
        if payload.get("call_id"):
            attributes["gen_ai.tool.call.id"] = payload["call_id"]
        if self.content and "arguments" in payload:
            attributes["gen_ai.tool.call.arguments"] = json.dumps(payload["arguments"], ensure_ascii=False)
        run.tools[(event.node, payload.get("call_id"))] = self._call_span(
            run, event, f"execute_tool {payload['tool']}", SpanKind.INTERNAL, attributes)

    def _tool_ended(self, run: _Run, event: RuntimeEvent) -> None:
        payload = event.payload
        call = run.tools.pop((event.node, payload.get("call_id")), None)
        if call is None:  # refused before it ran (bad arguments, denied): a span of its own, at once
            self._tool_started(run, event)
            call = run.tools.pop((event.node, payload.get("call_id")))
        if event.type == EventType.TOOL_CALL_FAILED:
            call.span.set_attribute("error.type", "ToolError")
            call.span.set_status(Status(StatusCode.ERROR, str(payload.get("error") or "tool call failed")))
        elif self.content and "observation" in payload:
            call.span.set_attribute("gen_ai.tool.call.result", str(payload["observation"]))
        self._end_call(call, _ns(event.time))


_HANDLERS = {
    EventType.RUN_COMPLETED: RunTracer._finished,
    EventType.RUN_FAILED: RunTracer._finished,
    EventType.RUN_SUSPENDED: RunTracer._finished,
    EventType.TICK_STARTED: RunTracer._tick_started,
    EventType.TICK_COMPLETED: RunTracer._tick_completed,
    EventType.MODEL_CALL_STARTED: RunTracer._model_started,
    EventType.MODEL_CALL_COMPLETED: RunTracer._model_ended,
    EventType.MODEL_CALL_FAILED: RunTracer._model_ended,
    EventType.TOOL_CALL_STARTED: RunTracer._tool_started,
    EventType.TOOL_CALL_COMPLETED: RunTracer._tool_ended,
    EventType.TOOL_CALL_FAILED: RunTracer._tool_ended,
}


def _depth(path: str) -> int:
    return path.count("/")


def _error_type(error: str) -> str:
    """`ValueError` of "ValueError: bad", the low-cardinality name the conventions want; else the text's start."""
    head = error.partition(":")[0].strip()
    return head if head.isidentifier() else "error"


def _current_task() -> Any:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no loop running
        return None


__all__ = ["EVENT_TYPES", "SPAN_MODES", "RunTracer"]
