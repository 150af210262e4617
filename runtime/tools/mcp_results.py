"""What the result of an MCP tool call becomes: the observation the model reads.

Text blocks are joined; a resource is its text, or named when it is binary; an image block
travels with the text as an image (`runtime.tools.observation`), so it reaches the model as
an image part. Text longer than the provider's `max_output_chars` is cut there, with a marker
saying how much was dropped (runtime/tools/bounds.py, as every tool's): a server answering with
a whole file must not send the whole file into every later model request.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import TYPE_CHECKING

from runtime.messages import ImagePart
from runtime.tools.base import Tool, ToolError
from runtime.tools.bounds import capped
from runtime.tools.observation import with_images

if TYPE_CHECKING:
    from mcp.types import CallToolResult, ContentBlock

_IMAGE_TYPE = re.compile(r"image/[A-Za-z0-9.+-]{1,60}")


def observation(result: CallToolResult, *, server: str, tool: str, max_chars: int | None) -> str:
    """The call's observation text (with its images), or a `ToolError` when the server reports one."""
    texts: list[str] = []
    images: list[ImagePart] = []
    for block in result.content:
        fault = _image_fault(block.mime_type, block.data) if block.type == "image" else None
        if fault is not None:
            texts.append(f"[an image dropped: {fault}]")
        elif block.type == "image":
            images.append(ImagePart(mime_type=block.mime_type, data=block.data))
        else:
            texts.append(block_text(block))
    text = "\n".join(texts)
    if result.is_error:
        raise ToolError(f"tool '{tool}' (MCP server {server}): {text or 'failed without a message'}")
    if not text and result.structured_content is not None:
        text = Tool.format_result(result.structured_content)
    return with_images(capped(text, max_chars, f"MCP server {server}"), images)


def _image_fault(mime_type: str, data: str) -> str | None:
    """What makes an image block no image an endpoint takes (None: nothing). Sent on, it would make the
    endpoint refuse every later model call of the run, naming no tool."""
    if not _IMAGE_TYPE.fullmatch(mime_type):
        return f"its type {mime_type[:60]!r} is no image type"
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f"its {mime_type} data is not base64"
    return None


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
