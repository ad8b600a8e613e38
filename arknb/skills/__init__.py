"""Skills: instructions and tools the model gets always or when it asks (DESIGN §14).

* object skills: ``ark.Skill(name, description, instructions, tools=(), always_on=False)``;
* folder skills: ``ark.load_skills(path)`` reads ``SKILL.md`` folders (YAML front matter
  with ``name`` and ``description``, the body as instructions, an optional ``tools.py``)
  and returns a :class:`SkillLoadReport` (``.skills``, ``.errors``);
* ``AgentRuntime(..., skills=...)`` installs a :class:`SkillsExtension`: always-on skills
  join the system prompt, the others come with the built-in ``activate_skill`` tool.
"""

from .extension import ACTIVATE_SKILL, SkillsExtension, skills_extension
from .loader import SkillLoadError, SkillLoadReport, load_skills
from .skill import Skill

__all__ = ["ACTIVATE_SKILL", "Skill", "SkillLoadError", "SkillLoadReport", "SkillsExtension", "load_skills",
           "skills_extension"]
