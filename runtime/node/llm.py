"""LLM nodes: `SimpleLLMNode` makes one model call, `AgentLLMNode` one ReAct round.

Both build the prompt with a context builder (see `runtime.context`), call the model
through the run's I/O recorder, publish `reply.started` / `reply.completed` around it
(the model client adds `model.call.*` and `text.delta`) and persist the reply in ONE
state update. An empty reply (no text, no tool call) is retried once with a nudge; a
second one is an error, never an empty answer.

Ports are named after `StateKeys` fields and default to the config's keys, so
`bind(outputs={"text_output": "summary"})` reroutes one without touching the others.
"""

from __future__ import annotations

import time
from typing import Any

from py_trees.common import Status

from ..config import ModelResilienceConfig, ReActConfig
from ..context import EMPTY_REPLY_NUDGE, FINAL_ANSWER_PROMPT, ContextBuilder, ContextBuilderProtocol
from ..engine.behaviour import AsyncBehaviour
from ..engine.deps import InjectPayload
from ..engine.events import EventType
from ..messages import Message, human
from ..model import ModelConfig, ModelResponse, ModelResponseError, Usage
from ..model.client import checked_client
from ..tools import Tool, ToolSet
from .calls import call_model, elapsed_ms
from .contract import check_react_contract
from .keyed import KeyedPorts
from .toolbox import ToolBox


class EmptyReplyError(ModelResponseError):
    """The model answered with nothing, even after being nudged."""


def _is_empty(response: ModelResponse) -> bool:
    return not response.tool_calls and not (response.message.content or "").strip()


class StreamBuffer:
    """Streamed fragments, joined for `streaming_output` only now and then: when the text has
    grown by half since it was last written, or `interval` seconds have passed. Writing the
    whole text at every delta made a long stream quadratic (4,000 deltas of 10 KB: 50 s);
    growth by half keeps the total linear, the interval keeps a slow stream live on screen.
    """

    def __init__(self, interval: float = 0.1, clock=time.monotonic):
        self._parts: list[str] = []
        self._size = self._written = 0
        self._interval, self._clock = interval, clock
        self._last = clock()

    def add(self, delta: str) -> str | None:
        """Take a fragment; the whole text when it is due to be written, else None."""
        self._parts.append(delta)
        self._size += len(delta)
        now = self._clock()
        if self._size - self._written < max(64, self._written // 2) and now - self._last < self._interval:
            return None
        return self.flush()

    def flush(self) -> str | None:
        """The whole text if anything came since it was last written."""
        if self._size == self._written:
            return None
        text = "".join(self._parts)
        self._parts = [text]
        self._written, self._last = self._size, self._clock()
        return text


class SimpleLLMNode(KeyedPorts, AsyncBehaviour):
    """One call: build the context from `messages`, invoke the model, append the reply.

    Writes (seed 001's port table) the assistant message to `messages`, its text to
    `text_output` and `final_answer`, `done = True`, and adds the call's tokens to `usage`.
    """

    input_ports = ("messages", "rounds", "usage")
    output_ports = ("messages", "text_output", "done", "final_answer", "usage", "streaming_output")
    prefer_react = False

    def __init__(self, name: str | None = None, *, model_client: Any = None, config: ReActConfig | None = None,
                 context_builder: ContextBuilderProtocol | None = None, namespace: str | None = None):
        super().__init__(name=name, namespace=namespace)
        self.model_client = checked_client(model_client, f"{type(self).__name__} {self.name!r}")
        self.config = config or ReActConfig()
        self.keys = self.config.keys
        self.context_builder = context_builder
        self._stream = StreamBuffer()

    async def update_async(self) -> Status:
        response = await self.reply(self.build_context(), self.model_config(), round=self.read_key("rounds", 0))
        text = response.message.content or ""
        self._persist(response, self._usage(), text_output=text, final_answer=text, done=True)
        return Status.SUCCESS

    @property
    def resilience(self) -> ModelResilienceConfig | None:
        """`ReActConfig.resilience` when the config sets it; else the model client's own applies."""
        return self.config.resilience if "resilience" in self.config.model_fields_set else None

    def _usage(self) -> Usage:
        return Usage.model_validate(self.read_key("usage", {}))

    def _persist(self, response: ModelResponse, usage_before: Usage, *, append: list[Message] | None = None,
                 **ports: Any) -> None:
        """Append the reply (or `append` instead), add its usage, write `ports`: one update, one wake."""
        values = {self._output_key(port): value for port, value in ports.items()}
        added = [response.message] if append is None else append
        if added:
            key, messages = self.appended("messages", added)
            values[key] = messages
        values[self.key_for("usage")] = (usage_before + response.usage).to_dict()
        self.write_state(values)

    def _output_key(self, port: str) -> str:
        """A `StateKeys` port defaults to the config's key, any other (a subclass's `score`,
        `plan`...) to its own name; `bind()` reroutes either."""
        return self.key_for(port) if port in type(self.keys).model_fields else self.resolve_output_port(port)

    # -- the call ------------------------------------------------------------------------
    def build_context(self, toolset: ToolSet | None = None) -> list[Message]:
        ctx = self.ctx
        builder = ContextBuilder.resolve_for_llm(
            self.context_builder, prompt_runtime=ctx.prompt_runtime if ctx is not None else None,
            system_prompt=self.config.system_prompt, prefer_react=self.prefer_react)
        return builder.build(self.read_key("messages", []), tools_description=toolset.describe() if toolset else "")

    def model_config(self, tools: list[dict[str, Any]] | None = None, tool_choice: Any = None) -> ModelConfig:
        """The call's settings from the config; unset values are left to the client's defaults.
        `parallel_tool_calls` goes with the tools when the config sets it."""
        c = self.config
        fields = {"model": c.model, "temperature": c.temperature, "max_tokens": c.max_tokens,
                  "max_completion_tokens": c.max_completion_tokens, "top_p": c.top_p, "top_k": c.top_k,
                  "timeout": c.timeout, "tools": tools or None, "tool_choice": tool_choice if tools else None,
                  "parallel_tool_calls": c.parallel_tool_calls
                  if tools and "parallel_tool_calls" in c.model_fields_set else None}
        extra = {key: value for key, value in c.extra_params.items() if key != "tool_choice"}
        return ModelConfig(stream=c.stream, extra_params=extra, **{k: v for k, v in fields.items() if v is not None})

    async def reply(self, messages: list[Message], config: ModelConfig, *, round: int,
                    path: str | None = None) -> ModelResponse:
        """One reply, with `reply.*` events; an empty one is retried once with a nudge."""
        self.emit(EventType.REPLY_STARTED, {
            "round": round, "model": config.model or getattr(self.model_client, "model", None),
            "messages": len(messages), "tools": len(config.tools or ())})
        started = time.monotonic()
        on_delta, on_restart = (self._stream_to_state, self._restart_stream) if config.stream else (None, None)
        self._stream = StreamBuffer()
        response = await call_model(self, messages, config, round=round, path=path, on_delta=on_delta,
                                    on_restart=on_restart)
        retried = _is_empty(response)
        if retried:
            first_usage = response.usage
            response = await call_model(self, [*messages, human(EMPTY_REPLY_NUDGE)], config, round=round,
                                        attempt=1, path=path, on_delta=on_delta, on_restart=on_restart)
            if _is_empty(response):
                raise EmptyReplyError(f"model {response.model!r} returned an empty reply twice "
                                      f"(round {round}, node {self.path})")
            response = response.model_copy(update={"usage": first_usage + response.usage})
        self._flush_stream()
        self.emit(EventType.REPLY_COMPLETED, {
            "round": round, "model": response.model, "usage": response.usage.to_dict(),
            "tool_calls": [call.name for call in response.tool_calls], "finish_reason": response.finish_reason,
            "empty_retry": retried, "duration_ms": elapsed_ms(started)})
        return response

    def _flush_stream(self) -> None:
        text = self._stream.flush()
        if text is not None:
            self.write_state({self.key_for("streaming_output"): text}, signal=False)

    def _restart_stream(self) -> None:
        """An attempt that streamed failed and the client tries again: what it streamed is no answer."""
        self._stream = StreamBuffer()
        self.write_state({self.key_for("streaming_output"): ""}, signal=False)

    def _stream_to_state(self, delta: str) -> None:
        text = self._stream.add(delta)
        if text is not None:
            self.write_state({self.key_for("streaming_output"): text}, signal=False)


class AgentLLMNode(SimpleLLMNode):
    """One ReAct round: the model either asks for tools or answers.

    Writes (seed's `_persist_result`): `actions` = the tool calls, `rounds + 1`,
    `done = not actions`, `final_answer` (the text when done, else ""), the assistant
    message, and `usage` accumulated across the rounds of this run (restarted when
    `rounds == 0`). `tool_choice` is sent only while `rounds == 0`.
    """

    output_ports = ("messages", "actions", "rounds", "done", "final_answer", "usage", "streaming_output")
    prefer_react = True

    def __init__(self, name: str | None = None, *, model_client: Any = None,
                 tools: ToolBox | ToolSet | list[Tool] | None = None, config: ReActConfig | None = None,
                 context_builder: ContextBuilderProtocol | None = None, namespace: str | None = None):
        super().__init__(name, model_client=model_client, config=config, context_builder=context_builder,
                         namespace=namespace)
        self.toolbox = ToolBox.of(tools)

    def inject(self, payload: InjectPayload) -> None:
        """Check the ReAct state contract once the node knows the run's state (warns, never fails)."""
        new_state = payload.state_manager is not None and payload.state_manager is not self.state_manager
        super().inject(payload)
        if new_state:
            check_react_contract(payload.state_manager, self.keys)

    @property
    def tool_choice(self) -> Any:
        """The explicit field, else the legacy `extra_params["tool_choice"]` (same first-round rule)."""
        c = self.config
        return c.tool_choice if c.tool_choice is not None else c.extra_params.get("tool_choice")

    async def update_async(self) -> Status:
        rounds = self.read_key("rounds", 0)
        toolset = await self.toolbox.resolve()
        config = self.model_config(toolset.schemas(), self.tool_choice if rounds == 0 else None)
        response = await self.reply(self.build_context(toolset), config, round=rounds)
        self._persist_result(response, rounds)
        return Status.SUCCESS

    def _persist_result(self, response: ModelResponse, rounds: int) -> None:
        actions = list(response.tool_calls)
        self._persist(response, self._usage() if rounds else Usage(), actions=actions, rounds=rounds + 1,
                      done=not actions, final_answer="" if actions else response.message.content)

    async def conclude(self) -> str:
        """The `on_max_iterations="final_answer"` call: no tools, answer from the evidence so far.

        Runs outside the loop (the agent calls it after the tree failed on its iteration
        cap); records under the node path + `#final`; writes `final_answer`, not `done`.
        """
        toolset = await self.toolbox.resolve()
        messages = [*self.build_context(toolset), human(FINAL_ANSWER_PROMPT)]
        response = await self.reply(messages, self.model_config(), round=self.read_key("rounds", 0),
                                    path=f"{self.path}#final")
        answer = response.message.content or ""
        self._persist(response, self._usage(), final_answer=answer)
        return answer


__all__ = ["AgentLLMNode", "EmptyReplyError", "SimpleLLMNode"]
