"""`ToolBox`: the tools of an agent, resolved on first use and shared by the nodes that need them.

Tool providers (an MCP server, say) are asynchronous, while tree factories are not: the
box keeps static tools and providers and builds the `ToolSet` on the first `resolve()`,
inside the run, and again when a provider says its tools changed (`generation`). The LLM
node (which describes the tools to the model) and the executor (which runs them) hold the
same box, so they always agree on the set.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from ..tools import Tool, ToolProvider, ToolSet
from ..tools.provider import context_arguments


class ToolBox:
    def __init__(self, tools: Iterable[Tool] | None = None, providers: Iterable[ToolProvider] | None = None,
                 provider_context: Any = None):
        self._tools = list(tools or ())
        self._providers = list(providers or ())
        self._provider_context = context_arguments(provider_context)
        self._toolset: ToolSet | None = None if self._providers else ToolSet(self._tools)
        self._generations: list[int] = []  # of the providers, when their tools were collected
        self._lock: asyncio.Lock | None = None

    @classmethod
    def of(cls, tools: ToolBox | ToolSet | Iterable[Tool] | None = None,
           providers: Iterable[ToolProvider] | None = None, provider_context: Any = None) -> ToolBox:
        """Accept whatever a node's `tools=` may hold (a box is shared as it is)."""
        if isinstance(tools, ToolBox):
            if providers:
                raise ValueError("pass tool providers to the ToolBox itself, not next to it")
            return tools
        return cls(tools, providers, provider_context)

    @property
    def toolset(self) -> ToolSet | None:
        """The resolved set, or None while providers have not been asked yet."""
        return self._toolset

    @property
    def providers(self) -> tuple[ToolProvider, ...]:
        return tuple(self._providers)

    def stand_in(self, tools: Iterable[Tool]) -> None:
        """Resolve to `tools` (and the static tools) without asking the providers: a check serves
        recorded answers, so no provider (an MCP server) is started; `close()` has nothing to close."""
        self._toolset = ToolSet.merge(list(tools), self._tools)
        self._generations = [provider.generation for provider in self._providers]  # the stand-ins stay

    async def resolve(self) -> ToolSet:
        """Providers' tools first, then the static tools (which win on a name clash); cached until a
        provider's tools change."""
        if self._toolset is None or self._changed():
            self._lock = self._lock or asyncio.Lock()
            async with self._lock:
                if self._toolset is None:
                    provided = await ToolSet.from_providers(self._providers, **self._provider_context)
                elif self._changed():
                    provided = await ToolSet.collect(self._providers, **self._provider_context)
                else:
                    return self._toolset
                self._generations = [provider.generation for provider in self._providers]
                self._toolset = ToolSet.merge(provided, self._tools)
        return self._toolset

    def _changed(self) -> bool:
        return any(provider.generation != seen for provider, seen in zip(self._providers, self._generations, strict=True))

    async def close(self) -> None:
        """Close the providers (their tools are asked for again on the next `resolve()`)."""
        if self._toolset is not None and self._providers:
            toolset, self._toolset = self._toolset, None
            await toolset.close()


__all__ = ["ToolBox"]
