"""Conversation messages and tool calls, the currency of every LLM node.

Both types are frozen so that state can hand them out without copying them:
a message, once appended to a history, never changes.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """One function call the model asked for.

    `arguments` is the parsed JSON object; when the model sent something that is not a
    JSON object, `arguments` is empty and `parse_error` says why (the executor turns that
    into an error observation naming the tool instead of calling it).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    parse_error: str | None = None

    @classmethod
    def from_raw(cls, id: str, name: str, raw_arguments: str | dict[str, Any] | None) -> ToolCall:
        """Build a call from the provider's raw argument text, keeping a parse error if any."""
        if isinstance(raw_arguments, dict):
            return cls(id=id, name=name, arguments=raw_arguments)
        text = (raw_arguments or "").strip() or "{}"
        try:
            parsed = json.loads(text, parse_constant=_not_json)
        except json.JSONDecodeError as exc:
            return cls(id=id, name=name, parse_error=f"arguments are not valid JSON ({exc.msg}): {text[:200]}")
        except (ValueError, RecursionError) as exc:  # NaN, a number of 5,000 digits, nesting 100,000 deep
            reason = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
            return cls(id=id, name=name, parse_error=f"arguments cannot be read ({reason}): {text[:200]}")
        if not isinstance(parsed, dict):
            return cls(id=id, name=name, parse_error=f"arguments must be a JSON object, got: {text[:200]}")
        return cls(id=id, name=name, arguments=parsed)

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments, ensure_ascii=False)},
        }


def _not_json(constant: str) -> Any:
    """NaN and Infinity: Python's JSON reads them, a model endpoint refuses them when the call is sent back."""
    raise ValueError(f"{constant} is not a JSON number")


class ImagePart(BaseModel):
    """An image in a message (a tool's screenshot, say): base64 `data` of a `mime_type`."""

    model_config = ConfigDict(frozen=True)

    mime_type: str
    data: str

    def to_openai(self) -> dict[str, Any]:
        return {"type": "image_url", "image_url": {"url": f"data:{self.mime_type};base64,{self.data}"}}


class Message(BaseModel):
    """A chat message in the OpenAI-compatible shape; `images` go with a user message's text as
    content parts."""

    model_config = ConfigDict(frozen=True)

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    images: tuple[ImagePart, ...] = Field(default=(), exclude_if=lambda images: not images)
    """Left out of a dump when there are none: messages recorded before images existed read the same."""

    def to_openai(self) -> dict[str, Any]:
        """The chat-completions shape; a tool message is exactly `role`, `content`, `tool_call_id`
        (strict servers refuse anything else there, such as `name`, or an image)."""
        if self.role == "tool":
            return {"role": "tool", "content": self.content or "", "tool_call_id": self.tool_call_id}
        content: Any = self.content
        if self.images:
            content = [{"type": "text", "text": self.content or ""}, *(image.to_openai() for image in self.images)]
        out: dict[str, Any] = {"role": self.role, "content": content}
        if self.tool_calls:
            out["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out


def human(content: str) -> Message:
    return Message(role="user", content=content)


def ai(content: str | None = None, tool_calls: list[ToolCall] | tuple[ToolCall, ...] = ()) -> Message:
    return Message(role="assistant", content=content, tool_calls=tuple(tool_calls))


def system(content: str) -> Message:
    return Message(role="system", content=content)


def tool(content: str, tool_call_id: str, name: str | None = None) -> Message:
    return Message(role="tool", content=content, tool_call_id=tool_call_id, name=name)


__all__ = ["ImagePart", "Message", "Role", "ToolCall", "ai", "human", "system", "tool"]
