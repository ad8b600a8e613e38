"""Skill scripts and files: ``run_skill_script`` and ``read_skill_file`` (DESIGN §15).

A ``SKILL.md`` folder may hold ``scripts/`` and other files (the Agent Skills layout). While
a skill with such files is active (or always on), the model gets two tools:

* ``read_skill_file(skill, path)`` (read-only): a text file of the skill's folder;
* ``run_skill_script(skill, script, args)``: a file of ``scripts/`` run as a subprocess
  (no shell, working directory the skill folder, a minimal environment, a time limit,
  stdout and stderr capped). A script is dangerous (its call waits for approval) unless
  the front matter says ``scripts: {name: {risk: safe}}``.

Paths are confined to the folder: an absolute path, a ``..`` part and a symlink that leads
out are each refused with an error result naming the rule.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Mapping

from ..domain import ErrorCode, ToolResult, ToolRisk, invalid_argument
from ..hooks import AgentHook, ToolCallHookResult
from ..tools import Tool, ToolContext, tool
from .skill import Skill

__all__ = ["READ_SKILL_FILE", "RUN_SKILL_SCRIPT", "ScriptPolicy", "SkillFiles"]

RUN_SKILL_SCRIPT = "run_skill_script"
READ_SKILL_FILE = "read_skill_file"
SCRIPTS_DIR = "scripts"
_DEFAULT_TIMEOUT = 30.0
_OUTPUT_CAP = 20_000          # characters of stdout and of stderr kept per run
_FILE_CAP = 100_000           # characters of a file read_skill_file returns
_CHUNK = 65536


@dataclass(frozen=True, slots=True)
class ScriptPolicy:
    """What the front matter says of one script (``scripts: {name: {risk: safe, timeout: 10}}``)."""

    risk: ToolRisk = ToolRisk.DANGEROUS
    timeout: float = _DEFAULT_TIMEOUT


def _policies(skill: Skill) -> dict[str, ScriptPolicy]:
    raw = skill.metadata.get("scripts") if isinstance(skill.metadata, Mapping) else None
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise invalid_argument(f"skill {skill.name!r}: 'scripts' in the front matter must map script names to "
                               "options, e.g. scripts: {report.py: {risk: safe}}")
    policies = {}
    for name, options in raw.items():
        options = options or {}
        if not isinstance(options, Mapping):
            raise invalid_argument(f"skill {skill.name!r}: scripts.{name} must be a mapping (risk:, timeout:)")
        try:
            risk = ToolRisk(options.get("risk", "dangerous"))
        except ValueError:
            raise invalid_argument(f"skill {skill.name!r}: scripts.{name}.risk must be 'safe' or 'dangerous'") from None
        timeout = options.get("timeout", _DEFAULT_TIMEOUT)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise invalid_argument(f"skill {skill.name!r}: scripts.{name}.timeout must be seconds > 0")
        policies[str(name)] = ScriptPolicy(risk, float(timeout))
    return policies


class SkillFiles:
    """The two tools for the folder skills that hold files, and the gate for their scripts."""

    def __init__(self, skills: Iterable[Skill]) -> None:
        self.folders: dict[str, Path] = {}
        self.policies: dict[str, dict[str, ScriptPolicy]] = {}
        for skill in skills:
            if skill.path is None or not Path(skill.path).is_dir():
                continue
            folder = Path(skill.path).resolve()
            if not any(p.is_file() and p.name != "SKILL.md" for p in folder.iterdir()) and \
                    not (folder / SCRIPTS_DIR).is_dir():
                continue
            self.folders[skill.name] = folder
            self.policies[skill.name] = _policies(skill)
        self._read = self._build_read() if self.folders else None
        self._run = self._build_run() if any((f / SCRIPTS_DIR).is_dir() for f in self.folders.values()) else None

    def tools_for(self, in_prompt: Iterable[Skill]) -> tuple[Tool, ...]:
        """The tools to offer while ``in_prompt`` skills are active (none if none has files)."""
        if not any(s.name in self.folders for s in in_prompt):
            return ()
        return tuple(t for t in (self._read, self._run) if t is not None)

    def hooks(self) -> tuple[AgentHook, ...]:
        return (_ScriptGate(self),) if self._run is not None else ()

    def risk_of(self, skill: str, script: str) -> ToolRisk:
        policy = self.policies.get(skill, {}).get(script)
        return policy.risk if policy is not None else ToolRisk.DANGEROUS

    # -- the tools ------------------------------------------------------------------------

    def _build_read(self) -> Tool:
        files = self

        async def read_skill_file(skill: str, path: str) -> ToolResult:
            """Read a text file of a skill's folder (SKILL.md, references, templates, scripts).

            Args:
                skill: the skill's name.
                path: the file's path inside the skill folder, e.g. "reference/api.md".
            """
            return files.read(skill, path)

        return tool(read_skill_file, name=READ_SKILL_FILE, read_only=True)

    def _build_run(self) -> Tool:
        files = self

        async def run_skill_script(skill: str, script: str, ctx: ToolContext, args: list[str] | None = None) -> ToolResult:
            """Run a script from a skill's scripts/ folder (no shell; the skill folder is the working directory).

            Args:
                skill: the skill's name.
                script: the script's path inside scripts/, e.g. "report.py".
                args: command-line arguments, each a separate string.
            """
            return await files.run(skill, script, list(args or ()), ctx)

        # Each call is gated by the script's own risk (see _ScriptGate), so the entry itself is safe.
        return tool(run_skill_script, name=RUN_SKILL_SCRIPT)

    def read(self, skill: str, path: str) -> ToolResult:
        found = self._confined(skill, path)
        if isinstance(found, ToolResult):
            return found
        if not found.is_file():
            return _refused(f"{path!r} is not a file of skill {skill!r}")
        with open(found, "rb") as handle:
            data = handle.read(_FILE_CAP * 4 + 1)
        if b"\0" in data[:8192]:
            return _refused(f"{path!r} is not a text file")
        text = data.decode("utf-8", errors="replace")
        if len(text) > _FILE_CAP or found.stat().st_size > len(data):
            return ToolResult.from_text(text[:_FILE_CAP] + f"\n[arknb: file cut at {_FILE_CAP} characters]")
        return ToolResult.from_text(text)

    async def run(self, skill: str, script: str, args: list[str], ctx: ToolContext) -> ToolResult:
        if not all(isinstance(a, str) for a in args):
            return _refused("args must be a list of strings")
        found = self._confined(skill, f"{SCRIPTS_DIR}/{script}", scripts_only=True)
        if isinstance(found, ToolResult):
            return found
        if not found.is_file():
            return _refused(f"skill {skill!r} has no script {script!r} in scripts/")
        if os.access(found, os.X_OK):
            command = [str(found), *args]
        elif found.suffix == ".py":
            command = [sys.executable, str(found), *args]
        elif found.suffix == ".sh":
            command = ["/bin/sh", str(found), *args]
        else:
            return _refused(f"script {script!r} is not executable and is neither .py nor .sh")
        policy = self.policies.get(skill, {}).get(script, ScriptPolicy())
        folder = self.folders[skill]
        env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8",
               "HOME": str(folder), "SKILL_DIR": str(folder)}
        process = await asyncio.create_subprocess_exec(
            *command, cwd=str(folder), env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True)
        out, err = _Capped(), _Capped()
        try:
            await asyncio.wait_for(asyncio.gather(out.drain(process.stdout), err.drain(process.stderr),
                                                  process.wait()), policy.timeout)
        except asyncio.TimeoutError:
            _kill(process)
            await process.wait()
            return ToolResult.from_text(
                f"script {script!r} of skill {skill!r} ran longer than {policy.timeout:g} s and was stopped\n"
                + _streams(out, err), is_error=True, error_code=ErrorCode.TOOL_TIMEOUT.value)
        except BaseException:
            _kill(process)
            raise
        code = process.returncode
        text = f"exit code {code}\n" + _streams(out, err)
        return ToolResult.from_text(text, is_error=code != 0,
                                    error_code=ErrorCode.TOOL_FAILED.value if code != 0 else None)

    def _confined(self, skill: str, path: str, *, scripts_only: bool = False) -> Path | ToolResult:
        folder = self.folders.get(skill)
        if folder is None:
            known = ", ".join(sorted(self.folders)) or "none"
            return _refused(f"unknown skill {skill!r} (skills with files: {known})")
        if not isinstance(path, str) or not path.strip():
            return _refused("the path is empty")
        if path.startswith(("/", "\\")) or os.path.isabs(path) or (len(path) > 1 and path[1] == ":"):
            return _refused(f"refused {path!r}: absolute paths are not allowed; give a path inside the skill folder")
        parts = PurePosixPath(path.replace("\\", "/")).parts
        if ".." in parts:
            return _refused(f"refused {path!r}: '..' is not allowed; paths stay inside the skill folder")
        target = folder.joinpath(*parts)
        try:
            real = target.resolve(strict=False)
        except (OSError, RuntimeError):
            return _refused(f"refused {path!r}: it cannot be resolved (a symlink loop?)")
        root = (folder / SCRIPTS_DIR).resolve() if scripts_only else folder
        if real != root and root not in real.parents:
            where = "the skill's scripts/ folder" if scripts_only else "the skill folder"
            return _refused(f"refused {path!r}: a symlink leads outside {where}")
        return real


class _ScriptGate(AgentHook):
    """Defers a ``run_skill_script`` call whose script is not declared safe (it waits for a person)."""

    name = "skill_script_gate"

    def __init__(self, files: SkillFiles) -> None:
        self._files = files

    async def before_tool_call(self, ctx: Any) -> ToolCallHookResult:
        call = ctx.call
        proceed = ToolCallHookResult.proceed(call)
        if call.name != RUN_SKILL_SCRIPT:
            return proceed
        try:
            arguments = call.arguments
        except Exception:
            return proceed  # the tool answers tool_arguments_invalid
        skill, script = arguments.get("skill"), arguments.get("script")
        if not isinstance(skill, str) or not isinstance(script, str) or skill not in self._files.folders:
            return proceed  # the tool refuses it with a clear error result
        if self._files.risk_of(skill, script) is ToolRisk.SAFE:
            return proceed
        return ToolCallHookResult.defer(
            f"script {script!r} of skill {skill!r} is dangerous and needs approval (its front matter can say "
            f"scripts: {{{script}: {{risk: safe}}}})")


class _Capped:
    """Keeps the first ``_OUTPUT_CAP`` characters of a stream and counts the rest (bounded memory)."""

    __slots__ = ("data", "dropped")

    def __init__(self) -> None:
        self.data = bytearray()
        self.dropped = 0

    async def drain(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while True:
            chunk = await stream.read(_CHUNK)
            if not chunk:
                return
            room = _OUTPUT_CAP - len(self.data)
            if room > 0:
                self.data += chunk[:room]
            self.dropped += max(0, len(chunk) - max(room, 0))

    def text(self) -> str:
        text = self.data.decode("utf-8", errors="replace")
        return text + (f"\n[arknb: {self.dropped} more bytes not shown]" if self.dropped else "")


def _streams(out: _Capped, err: _Capped) -> str:
    parts = [f"--- stdout ---\n{out.text()}"]
    if err.data or err.dropped:
        parts.append(f"--- stderr ---\n{err.text()}")
    return "\n".join(parts)


def _kill(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, OSError):
            pass


def _refused(text: str) -> ToolResult:
    return ToolResult.from_text(text, is_error=True, error_code=ErrorCode.TOOL_ARGUMENTS_INVALID.value)
