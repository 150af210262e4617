"""Tools an agent can call: the `Tool` type, providers (MCP servers among them), tool sets and the
built-in calculator."""

from runtime.tools.base import Tool, ToolArgumentsError, ToolError, ToolNotFoundError, tool
from runtime.tools.calculator import CalculatorTool, CalculatorToolProvider
from runtime.tools.mcp import MCPTool, MCPToolProvider
from runtime.tools.provider import StaticToolProvider, ToolProvider
from runtime.tools.toolset import ToolSet

__all__ = [
    "CalculatorTool",
    "CalculatorToolProvider",
    "MCPTool",
    "MCPToolProvider",
    "StaticToolProvider",
    "Tool",
    "ToolArgumentsError",
    "ToolError",
    "ToolNotFoundError",
    "ToolProvider",
    "ToolSet",
    "tool",
]
