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
from .files import SkillFiles
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
                if item.name == ACTIVATE_SKILL:
                    raise invalid_argument(f"skill {skill.name!r} has a tool named {ACTIVATE_SKILL!r}, the name of "
                                           "the runtime's own tool that activates skills; rename it")
                taken = owner_of.get(item.name)
                if taken is not None and taken[1] is not item:
                    raise invalid_argument(f"skills {taken[0]!r} and {skill.name!r} both have a tool named "
                                           f"{item.name!r}; rename one of them")
                owner_of[item.name] = (skill.name, item)
            self.skills[skill.name] = skill
        self._scope: ExtensionScope | None = None
        self._files = SkillFiles(self.skills.values())  # run_skill_script / read_skill_file (DESIGN §15)
        self._probing = False      # asking the runtime which tools the others offer (tools() is silent)
        self._usable: tuple[AgentState, list[Skill]] | None = None
        self._reported: set[str] = set()  # skills whose skip was announced
        on_demand = [s for s in self.skills.values() if not s.always_on]
        self._activate = self._build_activate(on_demand) if on_demand else None

    # -- the seam --------------------------------------------------------------------

    def for_new_session(self) -> SkillsExtension:
        return SkillsExtension(self.skills.values())

    def setup(self, scope: ExtensionScope) -> None:
        self._scope = scope

    def tools(self, state: AgentState) -> tuple[Tool, ...]:
        if self._probing:
            return ()
        offered: list[Tool] = [self._activate] if self._activate is not None else []
        in_use = self._in_use(state)
        for skill in in_use:
            offered.extend(skill.tools)
        offered.extend(self._files.tools_for(in_use))
        return tuple(offered)

    def hooks(self):
        return self._files.hooks()

    def instructions(self, state: AgentState) -> str | None:
        sections = [skill.section() for skill in self._in_use(state)]
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

    def _in_use(self, state: AgentState) -> list[Skill]:
        """The skills in the prompt, without any activated one whose tools are named like a
        tool the runtime offers otherwise: such a skill (activated in a session saved before
        the runtime had that tool) is skipped, announced once with
        ``skill.skipped``, and stays recorded; the session runs on without it."""
        cached = self._usable
        if cached is not None and cached[0] is state:
            return cached[1]
        in_prompt = self._in_prompt(state)
        usable = in_prompt
        if any(skill.tools for skill in in_prompt):
            taken = self._others_tools()
            usable = []
            for skill in in_prompt:
                clashes = sorted(set(skill.tool_names) & taken)
                if not clashes or skill.always_on:  # (always on: the runtime refuses it as it is built)
                    usable.append(skill)
                elif skill.name not in self._reported:
                    self._reported.add(skill.name)
                    self._scope.emit(EventTypes.SKILL_SKIPPED, lambda skill=skill, clashes=clashes: {
                        "name": skill.name, "clashes": clashes,
                        "reason": f"its tool(s) {_quoted(clashes)} have the name of tool(s) the runtime already "
                                  "offers; rename one of them (@ark.tool(name=...)) to use the skill"})
        self._usable = (state, usable)
        return usable

    def _others_tools(self) -> set[str]:
        """The names of the tools the runtime offers besides this extension's."""
        if self._scope is None:
            return set()
        self._probing = True
        try:
            return set(self._scope.tools.names())
        finally:
            self._probing = False

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
        clashes = sorted(set(skill.tool_names) & self._others_tools()) if skill.tools else []
        if clashes:
            return ToolResult.from_text(
                f"skill {name!r} was not activated: its tool(s) {_quoted(clashes)} have the name of tool(s) the "
                "runtime already offers (its tools= or another extension's); the runtime's tools stay as they "
                "are. Rename the skill's tool (@ark.tool(name=...)) to use the skill", is_error=True)
        # Saved before it is announced: the answer is recorded as the call's result, which a
        # restore reuses without running the call again, so the state must already hold it.
        saved = await scope.save_slice({"active": [*active, name]}, "skill_activated")
        if not saved.ok:
            return saved.refusal(f"skill {name!r} was not activated: its activation could not be saved")
        scope.emit(EventTypes.SKILL_ACTIVATED, lambda: {
            "name": name, "description": skill.description, "tools": list(skill.tool_names), "call_id": call_id})
        tools = f" and its tools ({', '.join(skill.tool_names)})" if skill.tools else ""
        return f"Skill {name!r} is active: its instructions{tools} are available from your next step on."


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(repr(n) for n in names)
