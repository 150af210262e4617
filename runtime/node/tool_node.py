"""`ToolNode`: one tool call in a workflow, with no model deciding it.

The tool's arguments are the node's input ports (read from the state keys of the same
names unless bound elsewhere); its observation text goes to the output port `result`.

    ToolNode(CalculatorTool()).bind(inputs={"expression": "formula"}, outputs={"result": "total"})

A failing tool makes the node FAILURE, with a one-line `node.error` naming the tool.
`execute=False` skips the call (SUCCESS, nothing written): a dry run of the workflow.
"""

from __future__ import annotations

from py_trees.common import Status

from ..engine.behaviour import AsyncBehaviour
from ..tools import Tool
from .calls import ToolRunner, run_tool


class ToolNode(AsyncBehaviour):
    output_ports = ("result",)

    def __init__(self, tool: Tool, name: str | None = None, *, execute: bool = True,
                 tool_runner: ToolRunner | None = None, namespace: str | None = None):
        super().__init__(name=name or tool.name, namespace=namespace)
        self.tool = tool
        self.execute = execute
        self.tool_runner = tool_runner
        self.input_ports = tuple(tool.parameters().get("properties", {}))

    async def update_async(self) -> Status:
        if not self.execute:
            return Status.SUCCESS
        arguments = {port: value for port in self.input_ports if (value := self.read_port(port)) is not None}
        observation = await run_tool(self, self.tool, self.path, arguments, round=0, index=0,
                                     runner=self.tool_runner)
        self.write_port("result", observation)
        return Status.SUCCESS


__all__ = ["ToolNode"]
