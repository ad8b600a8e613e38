"""Tools: ``@tool``, the context a tool may take, and the registry that runs calls (DESIGN §6)."""

from .context import ToolContext
from .decorator import Tool, tool
from .registry import ToolRegistry

__all__ = ["Tool", "ToolContext", "ToolRegistry", "tool"]
