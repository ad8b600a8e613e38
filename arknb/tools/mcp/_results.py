"""An MCP ``CallToolResult`` as an arknb :class:`~arknb.domain.ToolResult` (DESIGN §15).

Text, image and embedded-resource content become ``ContentPart``s; ``structuredContent``
is kept beside them; ``isError`` becomes an error result naming the server and the tool.
The text is capped at ``max_result_chars`` (and inline binary data at the same budget) with
a note saying what was cut, so a huge result costs the run no more than the cap.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from arknb.domain import ContentPart, ErrorCode, ToolResult

__all__ = ["convert_result", "error_result"]


def error_result(server: str, tool: str, what: str, code: str = ErrorCode.TOOL_FAILED.value) -> ToolResult:
    """An error answer naming the server and the tool."""
    return ToolResult.from_text(f"MCP server {server!r}, tool {tool!r}: {what}", is_error=True, error_code=code)


def convert_result(result: types.CallToolResult, *, server: str, tool: str, max_chars: int) -> ToolResult:
    """``result`` as a ToolResult, its text cut to ``max_chars`` with a note."""
    parts: list[ContentPart] = []
    budget = _Budget(max_chars)
    for block in result.content:
        part = _part(block, budget)
        if part is not None:
            parts.append(part)
    structured = result.structured_content
    if structured is not None and not isinstance(structured, dict):
        structured = {"value": structured}
    if structured is not None:
        size = len(json.dumps(structured, ensure_ascii=False, default=str))
        if size > max_chars:
            budget.cut.append(f"structuredContent ({size} characters)")
            structured = None
    if not parts and structured is not None:
        parts.append(ContentPart.from_text(json.dumps(structured, ensure_ascii=False, default=str)))
    if budget.cut:
        parts.append(ContentPart.from_text(
            f"\n[arknb: result cut to max_result_chars={max_chars}: {', '.join(budget.cut)} not shown]"))
    if result.is_error:
        prefix = ContentPart.from_text(f"MCP server {server!r}, tool {tool!r} reported an error: ")
        return ToolResult(contents=(prefix, *parts), is_error=True, error_code=ErrorCode.TOOL_FAILED.value,
                          structured_content=structured)
    return ToolResult(contents=tuple(parts), structured_content=structured)


class _Budget:
    __slots__ = ("left", "cut")

    def __init__(self, chars: int) -> None:
        self.left = chars
        self.cut: list[str] = []

    def text(self, text: str) -> str:
        if len(text) <= self.left:
            self.left -= len(text)
            return text
        kept = text[:max(self.left, 0)]
        self.cut.append(f"{len(text) - len(kept)} of {len(text)} characters")
        self.left = 0
        return kept

    def data(self, data: str, what: str) -> bool:
        if len(data) <= self.left:
            self.left -= len(data)
            return True
        self.cut.append(f"{what} ({len(data)} base64 characters)")
        return False


def _part(block: Any, budget: _Budget) -> ContentPart | None:
    if isinstance(block, types.TextContent):
        return ContentPart.from_text(budget.text(block.text))
    if isinstance(block, types.ImageContent):
        if budget.data(block.data, f"an image ({block.mime_type})"):
            return ContentPart.image_base64(block.data, block.mime_type)
        return None
    if isinstance(block, types.AudioContent):
        return ContentPart.from_text(budget.text(f"[audio ({block.mime_type}), not shown]"))
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return ContentPart.from_text(budget.text(f"[resource {resource.uri}]\n{resource.text}"))
        mime = resource.mime_type or "application/octet-stream"
        if budget.data(resource.blob, f"resource {resource.uri}"):
            if mime.startswith("image/"):
                return ContentPart.image_base64(resource.blob, mime)
            return ContentPart.document(data=resource.blob, mime_type=mime, name=str(resource.uri))
        return None
    if isinstance(block, types.ResourceLink):
        return ContentPart.from_text(budget.text(f"[resource link {block.uri}" +
                                                 (f": {block.description}" if block.description else "") + "]"))
    return ContentPart.from_text(budget.text(f"[unsupported content type {getattr(block, 'type', '?')!r}]"))
