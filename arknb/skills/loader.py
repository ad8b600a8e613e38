"""load_skills: discover folder skills (``SKILL.md`` with YAML front matter, optional ``tools.py``).

A skill folder looks like Claude Code's and deepagents' skills::

    skills/
      release-notes/
        SKILL.md       ---
                       name: release-notes
                       description: Write release notes from a list of merged changes.
                       ---
                       (the body: instructions, in Markdown)
        tools.py       optional: its @ark.tool functions belong to the skill

Nothing raises for a bad skill: :func:`load_skills` returns a :class:`SkillLoadReport`
whose ``skills`` loaded and whose ``errors`` name each bad file and its problem. The
front matter is parsed with PyYAML's safe loader (no arbitrary objects). A ``tools.py``
is imported from its file path inside the folder the caller named (a symlink leading
out of it is refused), never looked up on ``sys.path``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import yaml

from ..domain import ArkError, invalid_argument
from ..state.file_types import file_type
from ..tools import Tool
from .skill import Skill

__all__ = ["SkillLoadError", "SkillLoadReport", "load_skills"]

SKILL_FILE = "SKILL.md"
TOOLS_FILE = "tools.py"
_MAX_BYTES = 256 * 1024
_MAX_DEPTH = 64  # nesting levels of the front matter (PyYAML recurses per level)
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True, slots=True)
class SkillLoadError:
    """One skill that did not load: the file at fault and what is wrong with it."""

    path: Path
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True, slots=True)
class SkillLoadReport:
    """What :func:`load_skills` found. Iterating it yields the skills that loaded, so
    ``AgentRuntime(..., skills=ark.load_skills("skills"))`` works directly.

    Attributes:
        skills: the skills that loaded, in folder-name order.
        errors: one :class:`SkillLoadError` per skill that did not.
    """

    skills: tuple[Skill, ...] = ()
    errors: tuple[SkillLoadError, ...] = ()

    @property
    def ok(self) -> bool:
        """True when every skill loaded."""
        return not self.errors

    def raise_on_errors(self) -> SkillLoadReport:
        """Return ``self``, or raise ``invalid_argument`` listing every problem."""
        if self.errors:
            raise invalid_argument(f"{len(self.errors)} skill(s) did not load:\n" +
                                   "\n".join(f"  {e}" for e in self.errors))
        return self

    def __iter__(self) -> Iterator[Skill]:
        return iter(self.skills)

    def __len__(self) -> int:
        return len(self.skills)

    def __repr__(self) -> str:
        lines = [f"SkillLoadReport({len(self.skills)} loaded, {len(self.errors)} failed)"]
        lines += [f"  ok    {s.name}: {s.description}" for s in self.skills]
        lines += [f"  error {e}" for e in self.errors]
        return "\n".join(lines)


class _Problem(Exception):
    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def load_skills(path: str | Path) -> SkillLoadReport:
    """Discover the skills under ``path``.

    ``path`` is a folder of skill folders (each holding a ``SKILL.md``), a single skill
    folder, or a ``SKILL.md`` file. Hidden folders and ``__pycache__`` are skipped.

    Raises:
        ArkError: ``invalid_argument`` only if ``path`` itself does not exist; every problem
            of a skill is reported in the returned :class:`SkillLoadReport` instead.

    Example:
        >>> report = load_skills("skills")                                # doctest: +SKIP
        >>> runtime = AgentRuntime(model, skills=report)                  # doctest: +SKIP
    """
    if not isinstance(path, (str, Path)):
        raise invalid_argument(f"load_skills expects a folder path, got {type(path).__name__}")
    root = Path(path).expanduser()
    if root.is_file() and root.name == SKILL_FILE:
        folders, root = [root.parent], root.parent
    elif root.is_dir():
        folders = [root] if (root / SKILL_FILE).is_file() else sorted(
            (p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))
             and (p / SKILL_FILE).exists()), key=lambda p: p.name)
    else:
        raise invalid_argument(f"load_skills: {str(root)!r} is not a folder (nor a SKILL.md file)")
    boundary = root.resolve()
    skills: list[Skill] = []
    errors: list[SkillLoadError] = []
    names: dict[str, Path] = {}
    for folder in folders:
        try:
            skill = _load_one(folder, boundary)
            if skill.name in names:
                raise _Problem(folder / SKILL_FILE, f"a skill named {skill.name!r} was already loaded from "
                                                    f"{names[skill.name]}; skill names must be unique")
        except _Problem as problem:
            errors.append(SkillLoadError(problem.path, problem.message))
            continue
        names[skill.name] = folder
        skills.append(skill)
    return SkillLoadReport(tuple(skills), tuple(errors))


def _load_one(folder: Path, boundary: Path) -> Skill:
    skill_file = folder / SKILL_FILE
    front, body = _read(skill_file, boundary)
    meta = _front_matter(skill_file, front)
    name = meta.pop("name", None)
    description = meta.pop("description", None)
    always_on = meta.pop("always_on", False)
    if name is None:
        raise _Problem(skill_file, "the front matter has no 'name'")
    if not isinstance(name, str):
        raise _Problem(skill_file, f"'name' must be a string, got {type(name).__name__} {name!r} (quote it)")
    if description is None:
        raise _Problem(skill_file, "the front matter has no 'description' (the model reads it to decide when "
                                   "to use the skill)")
    if not isinstance(description, str):
        raise _Problem(skill_file, f"'description' must be a string, got {type(description).__name__}")
    if not isinstance(always_on, bool):
        raise _Problem(skill_file, f"'always_on' must be true or false, got {always_on!r}")
    tools = _tools(folder / TOOLS_FILE, boundary, name) if (folder / TOOLS_FILE).exists() else ()
    try:
        return Skill(name=name, description=description, instructions=body, tools=tools, always_on=always_on,
                     path=folder, metadata=meta)
    except ArkError as exc:
        raise _Problem(skill_file, exc.message) from None


def _read(skill_file: Path, boundary: Path) -> tuple[str, str]:
    _inside(skill_file, boundary)
    data = _read_capped(skill_file)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _Problem(skill_file, f"is not UTF-8 text (byte {exc.start})") from None
    match = _FRONT.match(text)
    if match is None:
        if text.lstrip().startswith("---"):
            raise _Problem(skill_file, "the YAML front matter is not closed: end it with a line '---'")
        raise _Problem(skill_file, "has no YAML front matter: start the file with a line '---', then "
                                   "'name:' and 'description:', then a line '---'")
    return match.group(1), text[match.end():]


def _read_capped(skill_file: Path) -> bytes:
    """The file's bytes, once ``os.stat`` says it is a regular file of at most ``_MAX_BYTES``:
    a FIFO would block the read for ever and a 300 MB file would be read whole before
    being refused (issue 26), so both are refused from the stat alone."""
    try:
        info = os.stat(skill_file)
    except OSError as exc:
        raise _Problem(skill_file, f"cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        raise _Problem(skill_file, f"is not a regular file (it is {file_type(info.st_mode)}); a SKILL.md must be "
                                   "a text file")
    if info.st_size > _MAX_BYTES:
        raise _Problem(skill_file, _too_big(info.st_size))
    try:
        # O_NONBLOCK: were it swapped for a FIFO since the stat, the open would not wait.
        fd = os.open(skill_file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise _Problem(skill_file, f"cannot be read ({exc.strerror or exc})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _Problem(skill_file, "is not a regular file; a SKILL.md must be a text file")
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while size <= _MAX_BYTES:  # never more than the cap (+1), even if the file grows meanwhile
            chunk = os.read(fd, _MAX_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise _Problem(skill_file, f"cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if size > _MAX_BYTES:
        raise _Problem(skill_file, _too_big(size, grew=True))
    return b"".join(chunks)


def _too_big(size: int, *, grew: bool = False) -> str:
    return (f"is {'more than ' if grew else ''}{size} bytes; a SKILL.md holds at most {_MAX_BYTES} (move long "
            "material into files the skill's tools read)")


def _deepest(front: str) -> tuple[int, int]:
    """(nesting depth, file line) where the front matter first nests deeper than
    ``_MAX_DEPTH``, or (the deepest level, 0) if it never does. Block levels are counted
    by indentation (each deeper indent, each leading ``- ``) and flow levels by open
    brackets; quoted text is skipped. An estimate that errs on the deep side."""
    indents: list[int] = []
    flow = 0
    deepest = 0
    for index, line in enumerate(front.splitlines()):
        stripped = line.lstrip(" ")
        if flow == 0 and stripped and not stripped.startswith("#"):
            indent = len(line) - len(stripped)
            while indents and indents[-1] >= indent:
                indents.pop()
            indents.append(indent)
            dashes = len(re.match(r"(?:-[ \t]+)*", stripped).group(0).replace(" ", "").replace("\t", ""))
        else:
            dashes = 0
        quote = None
        for char in line:
            if quote is not None:
                if char == quote:
                    quote = None
            elif char in "\"'":
                quote = char
            elif char in "[{":
                flow += 1
            elif char in "]}":
                flow = max(0, flow - 1)
            elif char == "#" and flow == 0:
                break
            depth = len(indents) + dashes + flow
            if depth > _MAX_DEPTH:
                return depth, index + 2  # line 1 of the file is the opening '---'
            deepest = max(deepest, depth)
    return deepest, 0


def _front_matter(skill_file: Path, front: str) -> dict[str, Any]:
    depth, line = _deepest(front)
    if line:
        raise _Problem(skill_file, f"the YAML front matter nests more than {_MAX_DEPTH} levels deep at line {line}; "
                                   "front matter holds a few keys (name:, description:, ...), not deep data")
    try:
        meta = yaml.safe_load(front)
    except RecursionError:  # (the estimate above missed it)
        raise _Problem(skill_file, "the YAML front matter nests too deeply to be read") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise _Problem(skill_file, f"the YAML front matter is invalid{where}: {problem}") from None
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise _Problem(skill_file, f"the front matter must be a mapping of keys (name:, description:), "
                                   f"got a {type(meta).__name__}")
    return {str(k): v for k, v in meta.items()}


def _inside(path: Path, boundary: Path) -> Path:
    real = path.resolve()
    if not real.is_relative_to(boundary):
        raise _Problem(path, f"leads outside {boundary} (to {real}); skills are read only from the folder "
                             "given to load_skills")
    return real


def _tools(tools_file: Path, boundary: Path, skill_name: str) -> tuple[Tool, ...]:
    real = _inside(tools_file, boundary)
    if not real.is_file():
        raise _Problem(tools_file, "is not a file")
    digest = hashlib.sha1(str(real).encode()).hexdigest()[:10]
    module_name = f"_arknb_skill_{re.sub(r'[^A-Za-z0-9_]', '_', skill_name)}_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, real)
    if spec is None or spec.loader is None:
        raise _Problem(tools_file, "cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    # Registered under a private name so dataclasses and pydantic models inside it resolve;
    # loading the skill again replaces it (re-running a notebook cell).
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # a broken tools.py is this skill's problem, not the caller's
        sys.modules.pop(module_name, None)
        raise _Problem(tools_file, f"raised {type(exc).__name__} on import: {exc}") from None
    found: list[Tool] = []
    for value in vars(module).values():
        # Only the tools defined in this file belong to the skill (not ones it imported).
        if isinstance(value, Tool) and getattr(value.fn, "__module__", None) == module_name \
                and all(value is not t for t in found):
            found.append(value)
    return tuple(found)

