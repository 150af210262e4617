"""A handshake-era MCP server over stdio, written by hand (JSON-RPC lines): what many servers in the
wild still speak (`initialize`, then requests; changes announced as notifications, no
`subscriptions/listen`). `unlock` adds the tool `secret` and sends `notifications/tools/list_changed`."""

from __future__ import annotations

import json
import sys

TOOLS = [{"name": "unlock", "description": "Adds the tool secret.", "inputSchema": {"type": "object"}}]
SECRET = {"name": "secret", "description": "The secret word.", "inputSchema": {"type": "object"}}


def send(message: dict) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def answer(request: dict) -> dict:
    method = request["method"]
    if method == "initialize":
        return {"result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": True}},
                           "serverInfo": {"name": "legacy", "version": "1"}}}
    if method == "tools/list":
        return {"result": {"tools": TOOLS}}
    if method == "tools/call" and request["params"]["name"] == "unlock":
        if SECRET not in TOOLS:
            TOOLS.append(SECRET)
        send({"method": "notifications/tools/list_changed"})
        return {"result": {"content": [{"type": "text", "text": "unlocked"}]}}
    if method == "tools/call" and request["params"]["name"] == "secret":
        return {"result": {"content": [{"type": "text", "text": "swordfish"}]}}
    if method == "ping":
        return {"result": {}}
    return {"error": {"code": -32601, "message": f"method not found: {method}"}}


def serve(answering) -> None:
    """Answer the JSON-RPC requests read from stdin, one a line, until it closes (also for
    hostile_mcp_server.py)."""
    for line in sys.stdin:
        request = json.loads(line)
        if "id" in request:  # a notification needs no answer
            send({"id": request["id"], **answering(request)})


if __name__ == "__main__":
    serve(answer)
