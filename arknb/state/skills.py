"""Which skills are active: the skills extension's saved slice, read without importing it.

The slice is ``state.extensions["skills"] == {"active": ["name", ...]}`` in activation
order (DESIGN §14: ``state.active_skills`` keeps them across restores).
"""

from __future__ import annotations

from typing import Any

from arknb.domain import ArkError, ErrorCode, ErrorLayer

__all__ = ["SKILLS_SLICE", "active_skills_of"]

SKILLS_SLICE = "skills"
"""The skills extension's name: the key of its slice in ``state.extensions``."""


def active_skills_of(extensions: dict[str, Any]) -> tuple[str, ...]:
    """The names of the activated skills, oldest first (empty before any activation).

    Raises:
        ArkError: ``state_corrupt`` if the slice is not a list of names.
    """
    slice_ = extensions.get(SKILLS_SLICE)
    if not slice_:
        return ()
    active = slice_.get("active", []) if isinstance(slice_, dict) else None
    if not isinstance(active, list) or not all(isinstance(name, str) for name in active):
        raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                       "the saved active skills (state.extensions['skills']['active']) are not a list of names")
    return tuple(active)
