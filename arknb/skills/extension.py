"""SkillsExtension: skills as a runtime extension (DESIGN §14, seed 003 §9).

Always-on skills join the system prompt from the first call. The others are listed,
by name and description, in the description of the built-in ``activate_skill`` tool;
activating one adds its instructions and tools from the next model call on, records it
in ``state.extensions["skills"]`` (read back as ``state.active_skills``, kept across
restores) and publishes ``skill.activated``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Literal

from ..domain import ToolResult, invalid_argument
from ..events import EventTypes
from ..runtime.extensions import Extension, ExtensionScope
from ..state import SKILLS_SLICE, AgentState, active_skills_of
from ..tools import Tool, ToolContext, tool
from .skill import Skill

__all__ = ["ACTIVATE_SKILL", "SkillsExtension", "skills_extension"]

ACTIVATE_SKILL = "activate_skill"


def skills_extension(value: Any) -> SkillsExtension | None:
    """What ``AgentRuntime(skills=value)`` installs: Skill objects or a ``load_skills`` report
    (None when there are none)."""
    if isinstance(value, (str, Path)):
        raise invalid_argument("skills= takes Skill objects; to read a folder use skills=ark.load_skills(path) "
                               "(and look at its .errors)")
    if isinstance(value, Skill):
        value = (value,)
    if not isinstance(value, Iterable):
        raise invalid_argument(f"skills must be a list of Skill objects or an ark.load_skills(...) report, "
                               f"got {type(value).__name__}")
    skills = tuple(value)
    return SkillsExtension(skills) if skills else None


class SkillsExtension(Extension):
    """Offers skills to the model; ``skills=`` installs it.

    Example:
        >>> report = ark.load_skills("skills")                               # doctest: +SKIP
        >>> runtime = ark.AgentRuntime(model, skills=report)                 # doctest: +SKIP
        >>> runtime.state.active_skills                                      # doctest: +SKIP
        ('release-notes',)
    """

    name = SKILLS_SLICE

    def __init__(self, skills: Iterable[Skill]) -> None:
        self.skills: dict[str, Skill] = {}
        owner_of: dict[str, tuple[str, Tool]] = {}
        for skill in skills:
            if not isinstance(skill, Skill):
                raise invalid_argument(f"skills must be Skill objects, got {type(skill).__name__}")
            if skill.name in self.skills:
                raise invalid_argument(f"two skills are named {skill.name!r}; skill names must be unique")
            for item in skill.tools:
                taken = owner_of.get(item.name)
                if taken is not None and taken[1] is not item:
                    raise invalid_argument(f"skills {taken[0]!r} and {skill.name!r} both have a tool named "
                                           f"{item.name!r}; rename one of them")
                owner_of[item.name] = (skill.name, item)
            self.skills[skill.name] = skill
        self._scope: ExtensionScope | None = None
        on_demand = [s for s in self.skills.values() if not s.always_on]
        self._activate = self._build_activate(on_demand) if on_demand else None

    # -- the seam --------------------------------------------------------------------

    def for_new_session(self) -> SkillsExtension:
        return SkillsExtension(self.skills.values())

    def setup(self, scope: ExtensionScope) -> None:
        self._scope = scope

    def tools(self, state: AgentState) -> tuple[Tool, ...]:
        offered: list[Tool] = [self._activate] if self._activate is not None else []
        for skill in self._in_prompt(state):
            offered.extend(skill.tools)
        return tuple(offered)

    def instructions(self, state: AgentState) -> str | None:
        sections = [skill.section() for skill in self._in_prompt(state)]
        return "\n\n".join(sections) if sections else None

    def on_restore(self, state: AgentState) -> None:
        # A malformed slice fails here, naming it. A saved skill this runtime does not have
        # stays recorded (nothing is lost) but adds nothing until it is configured again.
        active_skills_of(state.extensions)

    # -- skills ------------------------------------------------------------------------

    def active(self, state: AgentState) -> tuple[Skill, ...]:
        """The activated skills this runtime knows, oldest first."""
        return tuple(self.skills[n] for n in active_skills_of(state.extensions)
                     if n in self.skills and not self.skills[n].always_on)

    def _in_prompt(self, state: AgentState) -> list[Skill]:
        return [s for s in self.skills.values() if s.always_on] + list(self.active(state))

    def _build_activate(self, on_demand: list[Skill]) -> Tool:
        extension = self
        listing = "\n".join(f"- {s.name}: {s.description}" for s in on_demand)
        description = ("Activate a skill when the task matches its description: its instructions (and tools, if "
                       "it has any) are added from your next step on. Available skills:\n" + listing)

        async def activate_skill(name, ctx):
            return await extension._activate_skill(name, ctx.call_id)

        # The parameter's schema lists the skill names (an enum the model sees).
        activate_skill.__annotations__ = {"name": Literal[tuple(s.name for s in on_demand)],
                                          "ctx": ToolContext, "return": str | ToolResult}
        activate_skill.__doc__ = "Activate a skill.\n\nArgs:\n    name: the skill to activate."
        return tool(activate_skill, name=ACTIVATE_SKILL, description=description, read_only=True)

    async def _activate_skill(self, name: str, call_id: str) -> str | ToolResult:
        skill = self.skills.get(name)
        if skill is None:  # the schema's enum normally catches this first
            return ToolResult.from_text(f"unknown skill {name!r}; available: {', '.join(self.skills)}",
                                        is_error=True, error_code="tool_arguments_invalid")
        if skill.always_on:
            return f"Skill {name!r} is always active; its instructions are already in your system prompt."
        scope = self._scope
        active = active_skills_of(scope.state.extensions)
        if name in active:
            return f"Skill {name!r} is already active."
        # Saved before it is announced: the answer is recorded as the call's result, which a
        # restore reuses without running the call again, so the state must already hold it.
        saved = await scope.save_slice({"active": [*active, name]}, "skill_activated")
        if not saved.ok:
            return saved.refusal(f"skill {name!r} was not activated: its activation could not be saved")
        scope.emit(EventTypes.SKILL_ACTIVATED, lambda: {
            "name": name, "description": skill.description, "tools": list(skill.tool_names), "call_id": call_id})
        tools = f" and its tools ({', '.join(skill.tool_names)})" if skill.tools else ""
        return f"Skill {name!r} is active: its instructions{tools} are available from your next step on."
