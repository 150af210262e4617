"""What the result of an MCP tool call becomes: the observation the model reads.

Text blocks are joined; a resource is its text, or named when it is binary; an image block
travels with the text as an image (`runtime.tools.observation`), so it reaches the model as
an image part. Text longer than the provider's `max_output_chars` is cut there, with a marker
saying how much was dropped (runtime/tools/bounds.py, as every tool's): a server answering with
a whole file must not send the whole file into every later model request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime.messages import ImagePart
from runtime.tools.base import Tool, ToolError
from runtime.tools.bounds import capped
from runtime.tools.observation import with_images

if TYPE_CHECKING:
    from mcp.types import CallToolResult, ContentBlock

def observation(result: CallToolResult, *, server: str, tool: str, max_chars: int | None) -> str:
    """The call's observation text (with its images), or a `ToolError` when the server reports one."""
    texts: list[str] = []
    images: list[ImagePart] = []
    for block in result.content:
        if block.type == "image":
            images.append(ImagePart(mime_type=block.mime_type, data=block.data))
        else:
            texts.append(block_text(block))
    text = "\n".join(texts)
    if result.is_error:
        raise ToolError(f"tool '{tool}' (MCP server {server}): {text or 'failed without a message'}")
    if not text and result.structured_content is not None:
        text = Tool.format_result(result.structured_content)
    return with_images(capped(text, max_chars, f"MCP server {server}"), images)


def block_text(block: ContentBlock) -> str:
    """A content block as observation text (non-text media other than images are named, not inlined)."""
    if block.type == "text":
        return block.text
    if block.type == "resource":
        contents = block.resource
        text = getattr(contents, "text", None)
        return text if text is not None else f"[resource {contents.uri} ({contents.mime_type or 'binary'})]"
    if block.type == "resource_link":
        return f"[resource {block.uri}]"
    return f"[{block.type} {block.mime_type}]"


__all__ = ["observation"]
