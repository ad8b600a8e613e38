"""Reading a tool's description and parameter descriptions from a Google-style docstring."""

from __future__ import annotations

import inspect
import re

__all__ = ["ParsedDocstring", "parse_docstring"]

_ARGS_HEADERS = frozenset({"args", "arguments", "parameters", "params"})
# "Returns:", "Raises:", "Example:", ... : a word or two at column 0 ending with a colon.
_SECTION = re.compile(r"^([A-Za-z][A-Za-z ]{0,30}):\s*$")
# "name: text" or "name (type): text"; the text may be empty and continue below.
_ARG_LINE = re.compile(r"^\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


class ParsedDocstring:
    """The parts of a docstring a tool uses.

    Attributes:
        description: The first paragraph, lines joined by single spaces.
        params: Parameter name to description, from the ``Args:`` section.
    """

    __slots__ = ("description", "params")

    def __init__(self, description: str, params: dict[str, str]) -> None:
        self.description = description
        self.params = params


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Split a docstring into its first paragraph and its ``Args:`` entries.

    Args:
        doc: The raw ``__doc__`` (may be ``None``).

    Returns:
        The description and per-parameter descriptions; both empty for no docstring.
    """
    if not doc:
        return ParsedDocstring("", {})
    lines = inspect.cleandoc(doc).splitlines()

    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line):
            break
        summary.append(line.strip())

    params: dict[str, str] = {}
    in_args = False
    entry_indent: int | None = None
    current: str | None = None
    for line in lines:
        header = _SECTION.match(line)
        if header:
            in_args = header.group(1).strip().lower() in _ARGS_HEADERS
            entry_indent, current = None, None
            continue
        if not in_args or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0:  # text back at column 0 ends the section
            in_args, current = False, None
            continue
        if entry_indent is None:
            entry_indent = indent
        match = _ARG_LINE.match(line.strip()) if indent == entry_indent else None
        if match:
            current = match.group(1)
            params[current] = match.group(2).strip()
        elif current is not None and indent > entry_indent:
            params[current] = f"{params[current]} {line.strip()}".strip()
    return ParsedDocstring(" ".join(summary), {k: v for k, v in params.items() if v})
