"""`ScriptedProvider`: a deterministic, offline model that replays a script.

Every sample runs on it by default, and tests use it to assert what a node sent.
"""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from runtime.messages import Message, ToolCall, ai
from runtime.model.errors import ModelTimeoutError, ScriptExhaustedError
from runtime.model.types import DeltaCallback, ModelConfig, ModelResponse, Usage


class ScriptedResponse(BaseModel):
    """One scripted reply.

    Tool calls are `ToolCall`s or dicts `{"name", "arguments", "id"?}` where `arguments`
    is a dict or raw JSON text (malformed text becomes the call's `parse_error`). Without
    `usage` the provider estimates it with `Usage.estimate`. `delay` seconds pass before
    the reply; a delay longer than the call's `timeout` raises `ModelTimeoutError`.
    """

    model_config = ConfigDict(extra="forbid")

    content: str | None = None
    tool_calls: list[dict[str, Any] | ToolCall] = Field(default_factory=list)
    usage: Usage | None = None
    delay: float = Field(default=0.0, ge=0)


@dataclass(frozen=True)
class ScriptedRequest:
    """What the provider was asked: the messages and the config of one attempt."""

    messages: list[Message]
    config: ModelConfig


def _snapshot(config: ModelConfig) -> ModelConfig:
    """`config` as sent, its mutable parts copied (a caller may change them after the call): pydantic's
    deep copy walks every field generically, and costs about ten times this every call of a ReAct run."""
    return config.model_copy(update={"tools": _copied(config.tools), "tool_choice": _copied(config.tool_choice),
                                     "extra_params": _copied(config.extra_params)})


def _copied(value: Any) -> Any:
    """A copy of JSON-like data (dicts, lists, scalars shared); anything else deep-copied."""
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return copy.deepcopy(value)


def _fragments(text: str) -> list[str]:
    """Split after each run of whitespace, the way a model streams words."""
    return re.split(r"(?<=\s)(?=\S)", text)


class ScriptedProvider:
    """Answers request #n with the script's n-th response, whatever was asked.

    A tool call without an id gets `call_<k>` for the script's k-th tool call (from 1), so
    ids depend only on the script. `position` is the index of the next response; it is part
    of a checkpoint (`dump_resume_state`), like a node's resume data.
    """

    def __init__(self, responses: Sequence[ScriptedResponse | str | dict[str, Any]]):
        self.requests: list[ScriptedRequest] = []
        self.position = 0
        self._replies: list[tuple[ScriptedResponse, Message]] = []
        call_number = 0
        for number, raw in enumerate(responses, start=1):
            if isinstance(raw, str):
                raw = ScriptedResponse(content=raw)
            response = ScriptedResponse.model_validate(raw)
            calls = []
            for call in response.tool_calls:
                call_number += 1
                if isinstance(call, dict):
                    if not call.get("name"):
                        raise ValueError(f"scripted response #{number}: a tool call needs a 'name'")
                    call = ToolCall.from_raw(
                        call.get("id") or f"call_{call_number}", call["name"], call.get("arguments")
                    )
                calls.append(call)
            self._replies.append((response, ai(response.content, calls)))

    @property
    def remaining(self) -> int:
        return len(self._replies) - self.position

    def dump_resume_state(self) -> dict[str, int]:
        """How far the script has been read: saved with every checkpoint of a run using it, so a
        restored or forked run gets the answers that came next then, not the ones after them."""
        return {"position": self.position}

    def restore_resume_state(self, data: dict[str, Any]) -> None:
        self.position = int(data.get("position", 0))

    async def complete(
        self, messages: list[Message], config: ModelConfig, on_delta: DeltaCallback | None = None
    ) -> ModelResponse:
        self.requests.append(ScriptedRequest(list(messages), _snapshot(config)))
        if self.remaining <= 0:
            raise ScriptExhaustedError(
                f"scripted model has no response left for request #{len(self.requests)} "
                f"(script had {len(self._replies)})"
            )
        response, reply = self._replies[self.position]
        self.position += 1
        if response.delay:
            if config.timeout is not None and response.delay > config.timeout:
                await asyncio.sleep(config.timeout)
                raise ModelTimeoutError(f"scripted model timed out after {config.timeout:g}s")
            await asyncio.sleep(response.delay)
        if config.stream and on_delta is not None and reply.content:
            for fragment in _fragments(reply.content):
                on_delta(fragment)
                await asyncio.sleep(0)  # let listeners see each fragment before the next
        return ModelResponse(
            message=reply,
            usage=response.usage or Usage.estimate(messages, reply),
            model=config.model or "scripted",
            finish_reason="tool_calls" if reply.tool_calls else "stop",
        )


__all__ = ["ScriptedProvider", "ScriptedRequest", "ScriptedResponse"]
