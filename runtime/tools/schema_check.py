"""Arguments checked against a tool's JSON schema, refused with the one line a tool's own check gives.

An MCP tool checks its calls against the schema its server publishes; a debugger in
another process checks corrected arguments against the schema the debug server sent,
before it sends them. Both name the first argument at fault the same way.

jsonschema comes with the `[mcp]` extra (an MCP tool cannot be made without it); an attached studio
installed without it leaves the check to the debug server, which checks the call again in any case.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import ToolArgumentsError, error_line


def schema_validator(schema: Mapping[str, Any]) -> Any:
    """A jsonschema validator for `schema`, of the dialect it declares (None without jsonschema);
    for a schema none can be made of, one whose every check fails with why."""
    try:
        from jsonschema.validators import validator_for
    except ModuleNotFoundError:
        return None
    try:
        return validator_for(schema)(schema)
    except Exception as exc:
        return _Unusable(exc)


class _Unusable:
    """The validator of a schema that cannot be one (`check_arguments` names the tool and why)."""

    def __init__(self, error: Exception):
        self.error = error

    def iter_errors(self, instance: Any) -> Any:
        raise self.error


def check_arguments(tool: str, validator: Any, arguments: Any) -> None:
    """`ToolArgumentsError` naming the argument when `arguments` (an object) break the schema
    (a None validator checks only that they are an object), or naming the tool when its schema
    is broken (a server may publish any schema)."""
    if not isinstance(arguments, Mapping):
        raise ToolArgumentsError(f"tool '{tool}': arguments must be an object, got {type(arguments).__name__}",
                                 tool=tool)
    if validator is None:
        return
    from jsonschema.exceptions import best_match

    try:
        errors = list(validator.iter_errors(dict(arguments)))
    except Exception as exc:  # the schema itself: a dangling or looping $ref, an unknown type
        raise ToolArgumentsError(f"tool '{tool}': its schema cannot check arguments: {error_line(exc)}",
                                 tool=tool) from None
    error = best_match(errors)
    if error is None:
        return
    field = ".".join(str(part) for part in error.absolute_path) or _missing_property(error)
    where = f"argument '{field}'" if field else "arguments"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    raise ToolArgumentsError(f"tool '{tool}': invalid {where}: {error.message}{more}", tool=tool, field=field)


def _missing_property(error: Any) -> str | None:
    """The first missing name of a `required` error (jsonschema reports those at the parent)."""
    if error.validator != "required" or not isinstance(error.instance, Mapping):
        return None
    return next((name for name in error.validator_value if name not in error.instance), None)


__all__ = ["check_arguments", "schema_validator"]
