"""The two cell constructors the notebook specs use."""

from __future__ import annotations

__all__ = ["code", "md"]


def md(text: str) -> tuple[str, str]:
    """A markdown cell."""
    return ("markdown", text.strip("\n"))


def code(text: str) -> tuple[str, str]:
    """A code cell."""
    return ("code", text.strip("\n"))
