"""The two cell constructors the notebook specs use."""

from __future__ import annotations

__all__ = ["code", "md"]


def md(text: str) -> tuple[str, str]:
    """A markdown cell."""
    return ("markdown", text.strip("\n"))


def code(text: str, *, tags: tuple[str, ...] = ()) -> tuple:
    """A code cell; ``tags`` go in its metadata (``nbval-ignore-output`` for a cell whose
    first line must be a cell magic, so it cannot carry the comment marker)."""
    return ("code", text.strip("\n"), {"tags": list(tags)}) if tags else ("code", text.strip("\n"))
