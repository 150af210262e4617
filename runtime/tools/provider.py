"""`ToolProvider`: a source of tools that may need setting up and tearing down (an MCP server, say)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any

from runtime.tools.base import Tool


class ToolProvider(ABC):
    """Lifecycle: `initialize()` once, `get_tools(**context)` as often as needed, `close()` at the end.

    The context is the `tool_provider_context` of the agent (seed 000: any object): a mapping
    arrives as keyword arguments, any other object as `context=` (`context_arguments`).

    `generation` grows when the provider's tools change while it is open (an MCP server's
    `tools/list_changed`): whoever holds its tools asks `get_tools` again. `label` names the
    provider in errors (two providers offering one tool name, say).
    """

    generation: int = 0

    @property
    def label(self) -> str:
        return type(self).__name__

    async def initialize(self) -> None:  # noqa: B027 - optional hook
        """Acquire resources (connections, processes); nothing by default."""

    @abstractmethod
    async def get_tools(self, **kwargs: Any) -> list[Tool]:
        """The tools available now; `kwargs` is the caller's context (user, session, ...)."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release what `initialize()` acquired; nothing by default."""


def context_arguments(context: Any) -> dict[str, Any]:
    """The keyword arguments `get_tools` receives for a `tool_provider_context`."""
    if context is None:
        return {}
    return dict(context) if isinstance(context, Mapping) else {"context": context}


class StaticToolProvider(ToolProvider):
    """A fixed list of tools behind the provider interface."""

    def __init__(self, tools: Iterable[Tool]):
        self._tools = list(tools)

    async def get_tools(self, **kwargs: Any) -> list[Tool]:
        return list(self._tools)


__all__ = ["StaticToolProvider", "ToolProvider", "context_arguments"]
