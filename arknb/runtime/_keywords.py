"""The constructor keywords that install a built-in capability as an extension (DESIGN §14).

``AgentRuntime(plan_mode=..., skills=...)`` only installs extensions: each keyword is one
entry of :data:`KEYWORDS`, built here. The capability packages (``arknb.planner``,
``arknb.skills``, ``arknb.memory``) import the runtime's public seam, so they are
imported here lazily, inside the factory functions: this module is the only place in
``arknb.runtime`` that names them (``tests/test_architecture.py`` checks both).
"""

from __future__ import annotations

from typing import Any, Callable

from .extensions import Extension

__all__ = ["KEYWORDS", "keyword_extensions"]


def _plan_mode(value: Any) -> Extension | None:
    from ..planner import plan_extension
    return plan_extension(value)


def _skills(value: Any) -> Extension | None:
    from ..skills import skills_extension
    return skills_extension(value)


def _compressor(value: Any) -> Extension | None:
    from ..memory import compressor_extension
    return compressor_extension(value)


def _memory(value: Any) -> Extension | None:
    from ..memory import memory_extension
    return memory_extension(value)


def _subagents(value: Any) -> Extension | None:
    from ..memory import subagents_extension
    return subagents_extension(value)


KEYWORDS: tuple[tuple[str, Callable[[Any], Extension | None]], ...] = (
    ("plan_mode", _plan_mode),
    ("skills", _skills),
    ("compressor", _compressor),
    ("memory", _memory),
    ("subagents", _subagents),
)
"""``(keyword, factory)``: a factory turns the keyword's value into an extension, or None
for a value that installs nothing (``PlanMode.OFF``, no skills)."""


def keyword_extensions(**values: Any) -> list[Extension]:
    """The extensions the given keyword values install, in :data:`KEYWORDS` order."""
    installed: list[Extension] = []
    for keyword, factory in KEYWORDS:
        value = values.get(keyword)
        if value is None:
            continue
        extension = factory(value)
        if extension is not None:
            installed.append(extension)
    return installed
