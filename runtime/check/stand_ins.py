"""Tools that stand in for a provider's (an MCP server's) during a check: no server is started.

A check serves every tool result from the recording, but the model request still lists the
tools offered, and the tool executor still checks each call's arguments before it would run
it. Both come from the tools' JSON schemas, which the recording holds: each model request
keeps the tools it offered. So a box with providers is given stand-ins built from the
schemas its first recorded model call offered; they check arguments as the real tools did
and are never called.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..memory.checkpoint.store import CheckpointStore
from ..node.toolbox import ToolBox
from ..tools import Tool, ToolError


class _AnyObject(BaseModel):
    """Any JSON object: the recorded schema does the checking."""

    model_config = ConfigDict(extra="allow")


class RecordedTool(Tool):
    """A tool as a recorded model request offered it: its name, description and parameters."""

    Args = _AnyObject

    def __init__(self, schema: Mapping[str, Any]):
        function = schema.get("function") or schema
        self._parameters = dict(function.get("parameters") or {"type": "object"})
        self._validator = _validator(self._parameters)
        super().__init__(name=function["name"], description=function.get("description") or "")

    def offered_parameters(self) -> dict[str, Any]:
        return self._parameters

    def validate(self, arguments: Mapping[str, Any]) -> BaseModel:
        model = super().validate(arguments)
        if self._validator is not None:
            from ..tools.schema_check import check_arguments

            check_arguments(self.name, self._validator, arguments)
        return model

    async def call(self, arguments: Mapping[str, Any]) -> Any:
        raise ToolError(f"tool '{self.name}' stands in for a provider's tool during a check and never runs")


def _validator(schema: Mapping[str, Any]) -> Any:
    try:
        from ..tools.schema_check import schema_validator

        return schema_validator(schema)
    except ImportError:  # without jsonschema: arguments are only checked to be an object
        return None


def stand_in_providers(nodes: Mapping[str, Any], store: CheckpointStore, run_id: str, branch: str) -> list[str]:
    """Give every tool box with providers stand-ins from the tools its node's first recorded model
    request offered; returns the names of the tools stood in for."""
    boxes: dict[int, tuple[ToolBox, list[str]]] = {}
    for path, node in nodes.items():
        box = getattr(node, "toolbox", None)
        if isinstance(box, ToolBox) and box.providers:
            boxes.setdefault(id(box), (box, []))[1].append(path)
    named: list[str] = []
    for box, paths in boxes.values():
        tools = [RecordedTool(schema) for schema in _offered(store, run_id, branch, paths)]
        box.stand_in(tools)  # (the box's static tools win over a stand-in of the same name, as over the provider's)
        named += [tool.name for tool in tools]
    return named


def _offered(store: CheckpointStore, run_id: str, branch: str, paths: Iterable[str]) -> list[dict[str, Any]]:
    for path in paths:
        record = store.get_io(run_id, "model", path, 0, 0, branch)
        if record is not None:
            return list((record.request.get("config") or {}).get("tools") or ())
    return []


__all__ = ["RecordedTool", "stand_in_providers"]
