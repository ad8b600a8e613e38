"""ark.MCPServer against servers no one here wrote: mcp-server-time and mcp-server-git (PyPI), over stdio."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import arknb as ark

BIN = Path(sys.executable).parent


def executable(name: str) -> str:
    path = BIN / name
    if not path.exists():
        found = shutil.which(name)
        if found is None:
            message = f"{name} is not installed (pip install 'arknb[dev]')"
            if os.environ.get("CI") == "true":
                pytest.fail(message)
            pytest.skip(message)
        return found
    return str(path)


def call(name: str, arguments: dict, call_id: str = "c1") -> ark.ToolCall:
    return ark.ToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))


def answers(runtime: ark.AgentRuntime) -> dict[str, ark.AgentMessage]:
    return {m.tool_call_id: m for m in runtime.state.history if m.role == "tool"}


async def test_mcp_server_time_lists_and_answers():
    server = ark.MCPServer.stdio(executable("mcp-server-time"), ["--local-timezone", "UTC"], name="time")
    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[call("get_current_time", {"timezone": "Europe/Paris"})]),
                               "It is late."])
    runtime = ark.AgentRuntime(model, tools=[server])
    result = await runtime.run("What time is it in Paris?")
    assert result.stop_reason == "completed"
    names = [t.name for t in model.requests[0].tools]
    assert "get_current_time" in names and "convert_time" in names
    schema = runtime.tools.get("get_current_time").definition.parameters
    assert schema["required"] == ["timezone"]
    answer = answers(runtime)["c1"]
    assert not answer.is_error and "Europe/Paris" in answer.text
    await runtime.aclose()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    (path / "a.txt").write_text("one\n")
    subprocess.run(["git", "-C", str(path), "add", "a.txt"], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", "first"], check=True, env=env)
    return path


def staged(repo: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(repo), "diff", "--cached", "--name-only"], capture_output=True, text=True,
                         check=True)
    return out.stdout.split()


async def test_mcp_server_git_add_runs_and_reset_waits_for_approval(repo: Path):
    server = ark.MCPServer.stdio(executable("mcp-server-git"), ["--repository", str(repo)], name="git")
    await server.connect()
    tools = {t.name: t for t in server.current_tools()}
    # The server's own annotations: git_status is read-only, git_add says destructiveHint=false,
    # git_reset destructiveHint=true.
    assert tools["git_status"].read_only and tools["git_status"].risk == "safe"
    assert tools["git_add"].risk == "safe" and not tools["git_add"].read_only
    assert tools["git_reset"].risk == "dangerous"
    (repo / "b.txt").write_text("two\n")
    model = ark.ScriptedModel([
        ark.ScriptedTurn(tool_calls=[call("git_add", {"repo_path": str(repo), "files": ["b.txt"]}, "c1")]),
        ark.ScriptedTurn(tool_calls=[call("git_reset", {"repo_path": str(repo)}, "c2")]),
        "Reset.",
    ])
    runtime = ark.AgentRuntime(model, tools=[server])
    result = await runtime.run("stage then unstage b.txt")
    assert result.stop_reason == "awaiting_approval"
    assert staged(repo) == ["b.txt"]  # git_add ran without asking
    [item] = runtime.controller.list_pending_approvals()
    assert item.tool_call.name == "git_reset" and "MCP server 'git'" in item.reason
    assert item.detail["annotations"]["destructiveHint"] is True
    await runtime.controller.approve(item.approval_id)
    final = await asyncio.wait_for(runtime.current_run.wait(), 60)
    assert final.stop_reason == "completed"
    assert staged(repo) == []  # git_reset ran once approved
    assert not answers(runtime)["c2"].is_error
    await runtime.aclose()
    assert not server.connected
