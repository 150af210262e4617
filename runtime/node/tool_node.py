"""`ToolNode`: one tool call in a workflow, with no model deciding it.

Arguments come from the state key `input_key` (the `input` port): a JSON object of
arguments, or, for a tool with one parameter, that parameter's value. Without one, each
of the tool's parameters is an input port of its own (read from the state key of the same
name unless bound elsewhere). The observation text goes to `output_key` (the `output`
port, default key `output`).

    ToolNode(CalculatorTool(), input_key="formula", output_key="total")
    ToolNode(CalculatorTool()).bind(inputs={"expression": "formula"}, outputs={"output": "total"})

A failing tool makes the node FAILURE, with a one-line `node.error` naming the tool.
`execute=False` skips the call (SUCCESS, nothing written): a dry run of the workflow.
Like `ToolExecutor`, the node runs the tool through `tool_runner`, else `RunContext.sandbox`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from py_trees.common import Status

from ..engine.behaviour import AsyncBehaviour
from ..tools import Tool, ToolArgumentsError
from .calls import ToolRunner, run_tool


class ToolNode(AsyncBehaviour):
    output_ports = ("output",)

    def __init__(self, tool: Tool, name: str | None = None, *, input_key: str | None = None,
                 output_key: str | None = None, execute: bool = True, tool_runner: ToolRunner | None = None,
                 namespace: str | None = None):
        super().__init__(name=name or tool.name, namespace=namespace)
        self.tool = tool
        self.execute = execute
        self.tool_runner = tool_runner
        self.parameters = tuple(tool.offered_parameters().get("properties", {}))
        self.input_ports = ("input", *self.parameters)
        self.bind(inputs={"input": input_key} if input_key else None,
                  outputs={"output": output_key} if output_key else None)

    async def update_async(self) -> Status:
        if not self.execute:
            return Status.SUCCESS
        arguments = self._arguments()
        self.tool.validate(arguments)  # also when a runner or sandbox, not the tool, makes the call
        observation = await run_tool(self, self.tool, self.path, arguments, round=0, index=0,
                                     runner=self.tool_runner)
        self.write_port("output", observation)
        return Status.SUCCESS

    def _arguments(self) -> Mapping[str, Any]:
        if "input" not in self.input_bindings:
            return {port: value for port in self.parameters if (value := self.read_port(port)) is not None}
        value = self.read_port("input")
        if isinstance(value, Mapping):
            return value
        if len(self.parameters) == 1:
            return {self.parameters[0]: value}
        key = self.resolve_input_port("input")
        raise ToolArgumentsError(f"tool '{self.tool.name}': state key '{key}' must hold an object of arguments "
                                 f"({', '.join(self.parameters)}), not {type(value).__name__}", tool=self.tool.name)


__all__ = ["ToolNode"]
