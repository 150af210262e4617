"""Message contents in traces: off unless the user opts in, as the GenAI conventions ask.

`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` puts each model call's messages and
answer on its events (and so in its store and trace) and on its `chat` span, and a tool call's
arguments and result on its `execute_tool` span. Without it a span says which model, how many
tokens and why it stopped, never what was said. The messages take the conventions' shape: a role
and a list of parts.
"""

from __future__ import annotations

import os
from typing import Any

CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def captures_content() -> bool:
    return os.environ.get(CAPTURE, "").strip().lower() == "true"


def message_parts(message: Any) -> dict[str, Any]:
    """A runtime `Message` as the conventions' message: role, parts (text, tool calls, a tool's result)."""
    parts: list[dict[str, Any]] = []
    if message.role == "tool":
        parts.append({"type": "tool_call_response", "id": message.tool_call_id, "response": message.content})
    elif message.content:
        parts.append({"type": "text", "content": message.content})
    parts += [{"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
              for call in message.tool_calls]
    return {"role": message.role, "parts": parts}


__all__ = ["CAPTURE", "captures_content", "message_parts"]
