"""`ToolProvider`: a source of tools that may need setting up and tearing down (an MCP server, say)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from runtime.tools.base import Tool


class ToolProvider(ABC):
    """Lifecycle: `initialize()` once, `get_tools(**context)` as often as needed, `close()` at the end."""

    async def initialize(self) -> None:  # noqa: B027 - optional hook
        """Acquire resources (connections, processes); nothing by default."""

    @abstractmethod
    async def get_tools(self, **kwargs: Any) -> list[Tool]:
        """The tools available now; `kwargs` is the caller's context (user, session, ...)."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release what `initialize()` acquired; nothing by default."""


class StaticToolProvider(ToolProvider):
    """A fixed list of tools behind the provider interface."""

    def __init__(self, tools: Iterable[Tool]):
        self._tools = list(tools)

    async def get_tools(self, **kwargs: Any) -> list[Tool]:
        return list(self._tools)


__all__ = ["StaticToolProvider", "ToolProvider"]
