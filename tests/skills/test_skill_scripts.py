"""Skill scripts and files (DESIGN §15): run_skill_script and read_skill_file on SKILL.md folders."""

from __future__ import annotations

import asyncio
import json
import os
import textwrap
from pathlib import Path

import pytest

import arknb as ark
from arknb.skills.files import READ_SKILL_FILE, RUN_SKILL_SCRIPT, SkillFiles

SECRET_ENV = "ARKNB_TEST_PARENT_SECRET"


def write_skill(root: Path, *, scripts_front: str = "") -> Path:
    folder = root / "report"
    (folder / "scripts").mkdir(parents=True)
    (folder / "reference").mkdir()
    (folder / "SKILL.md").write_text(textwrap.dedent(f"""\
        ---
        name: report
        description: Build reports with the scripts of this folder.
        always_on: true
        {scripts_front}
        ---
        Use scripts/summary.py to summarise.
        """))
    (folder / "reference" / "api.md").write_text("# API\nCall summary.py with a title.\n")
    (folder / "scripts" / "summary.py").write_text(textwrap.dedent(f"""\
        import os, sys
        print("cwd=" + os.getcwd())
        print("args=" + repr(sys.argv[1:]))
        print("secret=" + repr(os.environ.get("{SECRET_ENV}")))
        open("ran.txt", "a").write("ran\\n")
        """))
    (folder / "scripts" / "noisy.py").write_text("import sys\nsys.stdout.write('y' * 5_000_000)\nsys.exit(2)\n")
    (folder / "scripts" / "sleepy.py").write_text("import time\ntime.sleep(60)\n")
    return folder


def skills_of(root: Path):
    report = ark.load_skills(root)
    assert report.ok, report.errors
    return report.skills


def call(name: str, arguments: dict, call_id: str = "c1") -> ark.ToolCall:
    return ark.ToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))


def answers(runtime: ark.AgentRuntime) -> dict[str, ark.AgentMessage]:
    return {m.tool_call_id: m for m in runtime.state.history if m.role == "tool"}


CTX = ark.ToolContext(session_id="s", run_id="r", call_id="c")


async def test_read_skill_file_reads_inside_and_refuses_each_way_out_naming_the_rule(tmp_path):
    folder = write_skill(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("private")
    (folder / "reference" / "leak.md").symlink_to(outside)
    files = SkillFiles(skills_of(tmp_path))
    read = files._read
    assert (await read.invoke({"skill": "report", "path": "reference/api.md"}, CTX)).text.startswith("# API")
    dotdot = await read.invoke({"skill": "report", "path": "../outside.txt"}, CTX)
    assert dotdot.is_error and "'..' is not allowed" in dotdot.text
    absolute = await read.invoke({"skill": "report", "path": str(outside)}, CTX)
    assert absolute.is_error and "absolute paths are not allowed" in absolute.text
    link = await read.invoke({"skill": "report", "path": "reference/leak.md"}, CTX)
    assert link.is_error and "a symlink leads outside the skill folder" in link.text
    assert "private" not in dotdot.text + absolute.text + link.text
    unknown = await read.invoke({"skill": "nope", "path": "SKILL.md"}, CTX)
    assert unknown.is_error and "unknown skill 'nope'" in unknown.text


async def test_a_script_runs_without_a_shell_in_the_skill_folder_with_a_minimal_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(SECRET_ENV, "parent-secret-value")
    folder = write_skill(tmp_path, scripts_front="scripts: {summary.py: {risk: safe}}")
    files = SkillFiles(skills_of(tmp_path))
    result = await files._run.invoke({"skill": "report", "script": "summary.py",
                                      "args": ["Q3 $(touch pwned)", "; rm -rf x"]}, CTX)
    assert not result.is_error, result.text
    assert "exit code 0" in result.text
    assert f"cwd={folder.resolve()}" in result.text
    assert "args=['Q3 $(touch pwned)', '; rm -rf x']" in result.text  # passed as argv, never through a shell
    assert "secret=None" in result.text  # the kernel's environment is not inherited
    assert (folder / "ran.txt").read_text() == "ran\n" and not (folder / "pwned").exists()


async def test_script_output_is_capped_a_failing_exit_is_an_error_and_a_slow_script_is_stopped(tmp_path):
    write_skill(tmp_path, scripts_front="scripts: {noisy.py: {risk: safe}, sleepy.py: {risk: safe, timeout: 1}}")
    files = SkillFiles(skills_of(tmp_path))
    noisy = await files._run.invoke({"skill": "report", "script": "noisy.py"}, CTX)
    assert noisy.is_error and "exit code 2" in noisy.text
    assert len(noisy.text) < 21_000 and "4980000 more bytes not shown" in noisy.text
    sleepy = await files._run.invoke({"skill": "report", "script": "sleepy.py"}, CTX)
    assert sleepy.is_error and sleepy.error_code == "tool_timeout" and "longer than 1 s" in sleepy.text


async def test_scripts_outside_scripts_folder_are_refused(tmp_path):
    folder = write_skill(tmp_path)
    (folder / "scripts" / "escape.py").symlink_to(tmp_path / "elsewhere.py")
    (tmp_path / "elsewhere.py").write_text("print('escaped')")
    files = SkillFiles(skills_of(tmp_path))
    escaped = await files._run.invoke({"skill": "report", "script": "escape.py"}, CTX)
    assert escaped.is_error and "a symlink leads outside the skill's scripts/ folder" in escaped.text
    dotdot = await files._run.invoke({"skill": "report", "script": "../SKILL.md"}, CTX)
    assert dotdot.is_error and "'..' is not allowed" in dotdot.text


async def test_a_script_not_declared_safe_waits_for_approval_then_runs(tmp_path):
    folder = write_skill(tmp_path)
    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[call(RUN_SKILL_SCRIPT, {"skill": "report",
                                                                                   "script": "summary.py"})]),
                               "Summarised."])
    runtime = ark.AgentRuntime(model, skills=skills_of(tmp_path))
    offered = None
    result = await runtime.run("summarise")
    offered = [t.name for t in model.requests[0].tools]
    assert RUN_SKILL_SCRIPT in offered and READ_SKILL_FILE in offered
    assert result.stop_reason == "awaiting_approval" and not (folder / "ran.txt").exists()
    [item] = runtime.controller.list_pending_approvals()
    assert "script 'summary.py' of skill 'report' is dangerous" in item.reason
    await runtime.controller.approve(item.approval_id)
    final = await asyncio.wait_for(runtime.current_run.wait(), 30)
    assert final.stop_reason == "completed"
    assert (folder / "ran.txt").read_text() == "ran\n"
    assert "exit code 0" in answers(runtime)["c1"].text


async def test_a_safe_script_runs_at_once_and_file_tools_come_only_with_an_active_skill(tmp_path):
    folder = write_skill(tmp_path, scripts_front="scripts: {summary.py: {risk: safe}}")
    text = (folder / "SKILL.md").read_text().replace("always_on: true\n", "")
    (folder / "SKILL.md").write_text(text)
    model = ark.ScriptedModel([
        ark.ScriptedTurn(tool_calls=[call("activate_skill", {"name": "report"}, "c1")]),
        ark.ScriptedTurn(tool_calls=[call(RUN_SKILL_SCRIPT, {"skill": "report", "script": "summary.py"}, "c2")]),
        "Done."])
    runtime = ark.AgentRuntime(model, skills=skills_of(tmp_path))
    result = await runtime.run("go")
    assert result.stop_reason == "completed"
    assert RUN_SKILL_SCRIPT not in [t.name for t in model.requests[0].tools]
    assert RUN_SKILL_SCRIPT in [t.name for t in model.requests[1].tools]
    assert "exit code 0" in answers(runtime)["c2"].text and (folder / "ran.txt").exists()


def test_a_bad_scripts_front_matter_is_a_clear_error(tmp_path):
    write_skill(tmp_path, scripts_front="scripts: {summary.py: {risk: maybe}}")
    with pytest.raises(ark.ArkError) as caught:
        SkillFiles(skills_of(tmp_path))
    assert "scripts.summary.py.risk must be 'safe' or 'dangerous'" in caught.value.message
