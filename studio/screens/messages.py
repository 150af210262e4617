"""A chat message drawn for reading: its role, its text (clipped; enter shows all), the tools it
called or answered."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group
from rich.text import Text

SHOWN_LINES = 6  # of a long message in the list; Enter shows all of it
SHOWN_CHARS = 480
ROLE_STYLES = {"system": "bold magenta", "user": "bold cyan", "assistant": "bold green", "tool": "bold yellow"}


def _clip(text: str) -> Text:
    shown = "\n".join(text.splitlines()[:SHOWN_LINES])[:SHOWN_CHARS]
    clipped = Text(shown)
    if len(shown) < len(text.rstrip()):
        clipped.append(f" … {len(text) - len(shown)} more characters (enter shows all)", "dim")
    return clipped


def _arguments(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def message_block(message: dict[str, Any]) -> Group:
    """One message of the conversation: its role, its text, the tools it called or answered."""
    role = str(message.get("role", "?"))
    head = Text(role, ROLE_STYLES.get(role, "bold"))
    if role == "tool":
        head.append(f"  result of {message.get('name') or 'a tool'} ({message.get('tool_call_id') or '-'})", "dim")
    parts: list = [head]
    if message.get("content"):
        parts.append(_clip(str(message["content"])))
    for call in message.get("tool_calls") or ():
        line = Text.assemble(("→ calls ", "dim"), (str(call.get("name")), "bold"),
                             f"({_arguments(call.get('arguments'))})", (f"  {call.get('id') or ''}", "dim"))
        if call.get("parse_error"):
            line.append(f"  ✘ {call['parse_error']}", "red")
        parts.append(line)
    return Group(*parts)


__all__ = ["message_block"]
