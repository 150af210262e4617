"""The optional parts of the install, each named where it is missing.

The base install is the runtime and the studio; PostgreSQL stores, MCP tools, OpenTelemetry traces
and the browser studio need packages a library user may not want, so they are extras
(`pip install 'jianmu-studio[mcp]'`). Their modules are imported only when used, through
`require`: a missing one is a `MissingExtra` whose text is the one line that says which extra
brings it.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

EXTRAS = {
    "postgres": "PostgreSQL checkpoint stores",
    "mcp": "MCP tools",
    "otel": "OpenTelemetry traces",
    "web": "the studio in a browser",
}


class MissingExtra(ImportError):
    """A feature whose extra is not installed; `str()` is the line to show."""

    def __init__(self, extra: str, module: str):
        self.extra = extra
        super().__init__(f"the [{extra}] extra is not installed ({module} is missing), needed for {EXTRAS[extra]}: "
                         f"pip install 'jianmu-studio[{extra}]'", name=module)


def require(extra: str, module: str) -> ModuleType:
    """`module` imported, or `MissingExtra` naming `extra` when it (or a package it needs) is not installed."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise MissingExtra(extra, exc.name or module) from exc


def check(extra: str, *modules: str) -> None:
    """`MissingExtra` now if one of `modules` is not installed, without importing any (a provider made in a
    tree's `build()` says so when the tree loads, not at its first call)."""
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ModuleNotFoundError, ValueError):  # a finder that refuses it; a module entry set to None
            found = False
        if not found:
            raise MissingExtra(extra, module)


__all__ = ["EXTRAS", "MissingExtra", "check", "require"]
