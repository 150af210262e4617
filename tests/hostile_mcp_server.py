"""An MCP server over stdio, written by hand (JSON-RPC lines), that lists what a careless or hostile
server may: names that become one once made valid for a model API (`a.b` and `a_b`, two names alike
in their first 64 characters) and schemas no validator can use (a `$ref` loop, a dangling `$ref`).
Every call answers with the name it reached, so a test sees which tool ran."""

from __future__ import annotations

from legacy_mcp_server import serve

LONG = "x" * 64
OBJECT = {"type": "object"}
TOOLS = [
    {"name": "a.b", "inputSchema": OBJECT},
    {"name": "a_b", "inputSchema": OBJECT},
    {"name": LONG + "1", "inputSchema": OBJECT},
    {"name": LONG + "2", "inputSchema": OBJECT},
    {"name": "looping", "inputSchema": {"type": "object", "$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}},
    {"name": "dangling", "inputSchema": {"type": "object", "properties": {"x": {"$ref": "#/$defs/gone"}}}},
]


def answer(request: dict) -> dict:
    method = request["method"]
    if method == "initialize":
        return {"result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                           "serverInfo": {"name": "hostile", "version": "1"}}}
    if method == "tools/list":
        return {"result": {"tools": TOOLS}}
    if method == "tools/call":
        return {"result": {"content": [{"type": "text", "text": f"ran {request['params']['name']}"}]}}
    return {"error": {"code": -32601, "message": f"method not found: {method}"}}


if __name__ == "__main__":
    serve(answer)
