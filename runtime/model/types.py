"""The vocabulary shared by the model client and every provider."""

from __future__ import annotations

import json
import math
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from runtime.messages import Message, ToolCall

DeltaCallback = Callable[[str], None]
"""Receives each streamed text fragment as it arrives."""


_CALL_CHARS: dict[int, int] = {}  # id of a message with tool calls -> characters of their arguments' JSON


def _chars(message: Message) -> int:
    """Characters of a message's content and tool-call arguments; a message never changes, so
    its arguments are dumped once, not on every estimate of a growing history."""
    if not message.tool_calls:
        return len(message.content or "")
    key = id(message)
    calls = _CALL_CHARS.get(key)
    if calls is None:
        calls = _CALL_CHARS[key] = sum(len(json.dumps(c.arguments, ensure_ascii=False)) for c in message.tool_calls)
        weakref.finalize(message, _CALL_CHARS.pop, key, None)
    return len(message.content or "") + calls


class Usage(BaseModel):
    """Token counts of one call, or of many added together."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        return self.model_dump()

    @classmethod
    def estimate(cls, messages: Sequence[Message], reply: Message) -> Usage:
        """A provider-independent guess, used when the model reports no usage.

        Rule: one token per four characters (rounded up, at least one), counting every
        message's content plus the JSON of its tool-call arguments: the request messages
        give `prompt_tokens`, the reply gives `completion_tokens`. Crude, but it keeps
        token budgets meaningful offline and against servers that omit usage.
        """
        prompt = max(1, math.ceil(sum(map(_chars, messages)) / 4))
        completion = max(1, math.ceil(_chars(reply) / 4))
        return cls(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)


class ModelConfig(BaseModel):
    """Per-call settings; `None` means "the provider's default": nothing is sent for it, so a
    model's own sampling defaults apply unless a setting was configured."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    """The newer name some endpoints require instead of `max_tokens` (OpenAI's reasoning models)."""
    top_p: float | None = None
    top_k: int | None = None
    timeout: float | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: Any = None
    parallel_tool_calls: bool | None = None
    """Sent only with `tools` (the API refuses it without them)."""
    extra_params: dict[str, Any] = Field(default_factory=dict)
    stream: bool = False


class ModelResponse(BaseModel):
    """One completion: the assistant message, what it cost and why it stopped."""

    message: Message
    usage: Usage = Field(default_factory=Usage)
    model: str
    finish_reason: str | None = None

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return self.message.tool_calls


@runtime_checkable
class ModelProvider(Protocol):
    """Anything that turns a conversation into one assistant reply.

    A provider makes exactly one attempt and raises a `ModelError` on failure; retries,
    fallback models and telemetry belong to `ModelClient`. With `config.stream` it calls
    `on_delta` with each text fragment and still returns the whole merged response.
    Providers holding connections may also define `async aclose()`.
    """

    async def complete(
        self, messages: list[Message], config: ModelConfig, on_delta: DeltaCallback | None = None
    ) -> ModelResponse: ...


__all__ = ["DeltaCallback", "ModelConfig", "ModelProvider", "ModelResponse", "Usage"]
