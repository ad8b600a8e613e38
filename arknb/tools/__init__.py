"""Tools: ``@tool``, the context a tool may take, tool sources, and the registry that runs calls (DESIGN §6, §15)."""

from .context import ToolContext
from .decorator import Tool, tool
from .registry import ToolRegistry
from .source import SourceTool, ToolSource

__all__ = ["SourceTool", "Tool", "ToolContext", "ToolRegistry", "ToolSource", "tool"]
