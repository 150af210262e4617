"""`ToolSet`: the tools one agent may call, by name, merged from providers and static tools."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from runtime.tools.base import Tool, ToolError, ToolNotFoundError, error_line
from runtime.tools.provider import ToolProvider

log = logging.getLogger(__name__)


class ToolSet:
    """An ordered name → tool map; a later tool with a name already present replaces the earlier one
    (static tools over provided ones, seed 000), except that two providers may not offer one name."""

    def __init__(self, tools: Iterable[Tool] = (), *, providers: Iterable[ToolProvider] = ()):
        self._tools: dict[str, Tool] = {}
        for item in tools:
            self._tools[item.name] = item
        self._providers = list(providers)

    @classmethod
    async def from_providers(cls, *providers: ToolProvider | Iterable[ToolProvider] | None,
                             **context: Any) -> ToolSet:
        """Initialize each provider and collect its tools in order (`collect`).

        Accepts providers as arguments or as one iterable (or None). If a provider fails,
        or two offer the same tool name, the ones already initialized are closed and a
        `ToolError` names the culprit(s).
        """
        started: list[ToolProvider] = []
        try:
            for provider in _flatten(providers):
                try:
                    await provider.initialize()
                except Exception as exc:
                    raise ToolError(f"tool provider {type(provider).__name__} failed: {exc}") from exc
                started.append(provider)
            return await cls.collect(started, **context)
        except Exception:
            await cls(providers=started).close()
            raise

    @classmethod
    async def collect(cls, providers: Iterable[ToolProvider], **context: Any) -> ToolSet:
        """The tools of providers already initialized, in order: asked again when one's tools changed.

        Two providers offering one tool name is a `ToolError` naming both, never a silent
        replacement (an MCP server's tools can be given a prefix to tell them apart).
        """
        providers = list(providers)
        offered: dict[str, int] = {}  # tool name -> the position of the provider offering it
        tools: list[Tool] = []
        for position, provider in enumerate(providers):
            try:
                found = await provider.get_tools(**context)
            except Exception as exc:
                raise ToolError(f"tool provider {type(provider).__name__} failed: {exc}") from exc
            for item in found:
                first = offered.setdefault(item.name, position)
                if first != position:
                    one, other = providers[first].label, provider.label
                    if one == other:
                        one, other = f"{one} (provider {first + 1})", f"{other} (provider {position + 1})"
                    raise ToolError(f"tool '{item.name}' is offered by both {one} and {other}; "
                                    "give one a prefix (MCPToolProvider(..., prefix=...))")
            tools.extend(found)
        return cls(tools, providers=providers)

    @classmethod
    def merge(cls, *sources: ToolSet | Iterable[Tool] | None) -> ToolSet:
        """One set from several (sets or plain tool lists, None skipped): a later tool replaces an
        earlier one of the same name, and the sets' providers are all kept (closed together)."""
        tools: list[Tool] = []
        providers: list[ToolProvider] = []
        for source in sources:
            if isinstance(source, ToolSet):
                providers.extend(p for p in source._providers if p not in providers)
            tools.extend(source or ())
        return cls(tools, providers=providers)

    def with_tools(self, tools: Iterable[Tool] | None) -> ToolSet:
        """A new set with `tools` added; they win over same-named provider tools."""
        return ToolSet.merge(self, tools)

    def get(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            known = ", ".join(self._tools) or "none"
            raise ToolNotFoundError(f"unknown tool '{name}' (known tools: {known})") from None

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolSet({self.names()})"

    def describe(self) -> str:
        """The prompt's tool block: one `name(args): description` line per tool."""
        return "\n".join(_offered(item, item.describe) for item in self)

    def schemas(self) -> list[dict[str, Any]]:
        """The function-calling `tools` list for the model request."""
        return [_offered(item, item.schema) for item in self]

    async def close(self) -> None:
        """Close providers in reverse order; one failing does not keep the others open."""
        for provider in reversed(self._providers):
            try:
                await provider.close()
            except Exception:
                log.exception("closing tool provider %s failed", type(provider).__name__)


def _flatten(providers: tuple[Any, ...]) -> Iterator[ToolProvider]:
    for item in providers:
        if isinstance(item, ToolProvider):
            yield item
        elif item is not None:
            yield from item


def _offered(tool: Tool, part: Callable[[], Any]) -> Any:
    """What the model is shown of `tool`; a `ToolError` naming it when its schema cannot be shown
    (nested thousands deep, say): the model call fails naming the tool, not a bare RecursionError."""
    try:
        return part()
    except Exception as exc:
        raise ToolError(f"tool '{tool.name}': its schema cannot be offered to the model: {error_line(exc)}") from exc


__all__ = ["ToolSet"]
