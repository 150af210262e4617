"""What a debugger's edits must satisfy before they touch a run, in one place for every front end.

A state key is edited only when the schema declares it, the runtime owns it (`StateKeys`)
or the state holds it, in a namespace the tree or the state knows; a port is rebound only
to such a key, or to `<namespace>.<field>` for a known namespace. The checks read
`StateFacts`, so the debugger (`runtime.debug.Debugger`, from the runner) and an attached
studio (from the facts the server sent, before anything is sent back) refuse the same edits
with the same one line (`EditRefused`; `NotPaused` while the run moves).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..engine.runner import ReactiveRunner
from ..state import StateKeys, normalize_namespace
from ..tools.base import Tool, ToolError

RUNTIME_KEYS = frozenset(StateKeys().model_dump().values())


class EditRefused(ValueError):
    """An edit that does not fit the run; the message is the reason."""


class NotPaused(EditRefused):
    """An edit (or a restore) asked for while the run moves: pause it first."""


def _shown(text: str, limit: int = 60) -> str:
    """A typed key as a refusal quotes it: a key pasted 200,000 characters long is not echoed whole."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"… ({len(text):,} characters)"


@dataclass(frozen=True)
class StateFacts:
    """What the checks know of a run's state."""

    schema: str  # the state schema's name
    fields: tuple[str, ...]  # its fields, in order (named in refusals)
    names: frozenset[str]  # every key that is a schema field (fields and their aliases)
    namespaces: frozenset[str]  # of the tree's nodes and of the state
    holds: Callable[[str, str | None], bool]  # whether the state holds a key (in a namespace)

    @classmethod
    def of(cls, runner: ReactiveRunner) -> StateFacts:
        sm = runner.state_manager
        schema = sm.schema
        names = {name for attr, info in schema.model_fields.items() for name in (attr, info.alias or attr)}
        from_tree = {ns for node in runner.nodes.values() if (ns := getattr(node, "namespace", None))}
        return cls(schema.__name__, tuple(schema.model_fields), frozenset(n for n in names if sm.has_field(n)),
                   frozenset(from_tree | {ns for ns in sm.namespaces() if ns}), sm.contains)

    def describe(self) -> dict[str, Any]:
        """The schema part, as the debug server sends it (namespaces and values come with the state)."""
        return {"name": self.schema, "fields": list(self.fields), "names": sorted(self.names)}


def check_state_key(facts: StateFacts, namespace: Any, key: Any) -> str | None:
    """The normalised namespace of an edit to `key`; `EditRefused` when the key or namespace is unknown."""
    if not isinstance(key, str) or not key:
        raise EditRefused(f"a state key is non-empty text, not {key!r:.40}")
    try:
        namespace = normalize_namespace(namespace)
    except ValueError as exc:
        raise EditRefused(str(exc)) from None
    if namespace is not None and namespace not in facts.namespaces:
        raise EditRefused(f"no namespace {_shown(namespace)} (namespaces: {', '.join(sorted(facts.namespaces))})")
    if not (key in facts.names or key in RUNTIME_KEYS or facts.holds(key, namespace)):
        where = f"{namespace}.{key}" if namespace else key
        raise EditRefused(f"no state key {_shown(where)} (fields of {facts.schema}: {', '.join(facts.fields)})")
    return namespace


def check_binding_key(facts: StateFacts, key: Any, node_namespace: str | None) -> str:
    """The normalised key a port of a node in `node_namespace` can be bound to; `EditRefused` if none."""
    if not isinstance(key, str):
        raise EditRefused(f"a state key is text, not {type(key).__name__} ({key!r:.40})")
    key = key.strip().removeprefix("state.")
    if not key:
        raise EditRefused("a binding needs a state key")
    qualified = any(key.startswith(ns + ".") and key[len(ns) + 1:] in facts.names for ns in facts.namespaces)
    if (qualified or key in facts.names or key in RUNTIME_KEYS or facts.holds(key, node_namespace)
            or facts.holds(key, None)):
        return key
    raise EditRefused(f"no state field {_shown(key)} in {facts.schema} (fields: {', '.join(facts.fields)})")


def check_port(path: str, direction: Any, port: Any, ports: list[Any]) -> None:
    """`EditRefused` unless `port` is one of the node's `[direction, port, key]` ports in that direction."""
    if direction not in ("in", "out"):
        raise EditRefused(f"direction must be 'in' or 'out', not {direction!r}")
    mine = [name for way, name, _ in ports if way == direction]
    if port not in mine:
        declared = ", ".join(mine) or "none"
        raise EditRefused(f"{path} has no {direction}put port {port!r} (ports: {declared})")


def waiting_tool(runner: ReactiveRunner, request: Any) -> Tool | None:
    """The tool a pending approval would call, as its node's toolset knows it; None when the node has
    no toolset (yet); `ToolError` for a tool it does not have."""
    toolbox = getattr(runner.nodes.get(request.node or ""), "toolbox", None)
    toolset = toolbox.toolset if toolbox is not None else None
    return toolset.get(request.tool) if toolset is not None else None


def check_tool_arguments(runner: ReactiveRunner, request: Any, arguments: Any) -> None:
    """`EditRefused` naming the argument when corrected `arguments` do not fit the waiting tool's schema
    (a tool not known here is left to the executor, which checks them when the call runs)."""
    if not isinstance(arguments, dict):
        raise EditRefused(f"tool '{request.tool}': arguments must be a JSON object")
    try:
        tool = waiting_tool(runner, request)
        if tool is not None:
            tool.validate(arguments)
    except ToolError as exc:
        raise EditRefused(str(exc)) from None


__all__ = ["EditRefused", "NotPaused", "StateFacts", "check_binding_key", "check_port", "check_state_key",
           "check_tool_arguments", "waiting_tool"]
