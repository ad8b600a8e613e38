"""Skill: instructions (and optional tools) the model gets always or when it asks (DESIGN §14).

An *object skill* is built in code with :class:`Skill`; a *folder skill* is read from a
``SKILL.md`` by :func:`arknb.skills.load_skills`. Both are the same value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..domain import invalid_argument
from ..tools import Tool, tool

__all__ = ["SKILL_NAME", "Skill"]

SKILL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,63}$")
"""A skill name: 1-64 letters, digits, ``_`` or ``-`` (what ``activate_skill`` is called with)."""

_MAX_DESCRIPTION = 1024


@dataclass(frozen=True, eq=False)
class Skill:
    """A named set of instructions, with the tools that go with them.

    Args:
        name: what the model activates it by (1-64 letters, digits, ``_``, ``-``).
        description: one or two sentences saying when the skill helps; the model reads it
            in the ``activate_skill`` tool's description to decide.
        instructions: the text added to the system prompt once the skill is active.
        tools: ``@ark.tool`` objects (or typed functions) the model gets with the skill.
        always_on: join the system prompt from the start (no activation needed).
        path: the folder a skill was loaded from (None for a skill built in code).

    Example:
        >>> Skill("haiku", "Answer in a haiku.", "Write every answer as a 5-7-5 haiku.").name
        'haiku'
    """

    name: str
    description: str
    instructions: str
    tools: tuple[Tool, ...] = ()
    always_on: bool = False
    path: Path | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    """Any other front-matter keys of a folder skill (``license``, ``version``, ...)."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not SKILL_NAME.match(self.name):
            raise invalid_argument(f"skill name must be 1-64 letters, digits, '_' or '-' (starting with a letter or "
                                   f"digit), got {self.name!r}")
        if not isinstance(self.description, str) or not self.description.strip():
            raise invalid_argument(f"skill {self.name!r} needs a description: the model reads it to decide when "
                                   "to activate the skill")
        if len(self.description) > _MAX_DESCRIPTION:
            raise invalid_argument(f"skill {self.name!r}: the description has {len(self.description)} characters; "
                                   f"keep it under {_MAX_DESCRIPTION} (the instructions hold the details)")
        if not isinstance(self.instructions, str):
            raise invalid_argument(f"skill {self.name!r}: instructions must be a string, "
                                   f"got {type(self.instructions).__name__}")
        if not isinstance(self.always_on, bool):
            raise invalid_argument(f"skill {self.name!r}: always_on must be True or False, got {self.always_on!r}")
        if isinstance(self.tools, (str, bytes)) or not isinstance(self.tools, Iterable):
            raise invalid_argument(f"skill {self.name!r}: tools must be a list of @ark.tool functions")
        tools = tuple(item if isinstance(item, Tool) else tool(item) for item in self.tools)
        names = [t.name for t in tools]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise invalid_argument(f"skill {self.name!r} has two tools named {', '.join(map(repr, twice))}")
        if not self.instructions.strip() and not tools:
            raise invalid_argument(f"skill {self.name!r} has neither instructions nor tools: nothing to add")
        object.__setattr__(self, "description", self.description.strip())
        object.__setattr__(self, "instructions", self.instructions.strip())
        object.__setattr__(self, "tools", tools)

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The names of the skill's tools."""
        return tuple(t.name for t in self.tools)

    def section(self) -> str:
        """The system-prompt section of an active skill."""
        lines = [f"## Skill: {self.name}", self.instructions] if self.instructions else [f"## Skill: {self.name}"]
        if self.tools:
            lines.append(f"Tools of this skill: {', '.join(self.tool_names)}.")
        return "\n".join(lines)

    def __repr__(self) -> str:
        extra = ", always_on=True" if self.always_on else ""
        tools = f", tools={list(self.tool_names)}" if self.tools else ""
        where = f", path={str(self.path)!r}" if self.path is not None else ""
        return f"Skill(name={self.name!r}{tools}{extra}{where})"
