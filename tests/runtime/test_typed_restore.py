"""A per-run ``output_type`` survives a restore (issue 24, DESIGN §17): the state keeps the type's
name, schema and where it was defined; a restored paused run asks for the same type, finds it
again where it was defined, or refuses to go on (nothing changed) naming the type to give."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pydantic import BaseModel

import arknb as ark
from arknb import ScriptedModel, ScriptedTurn, ToolCall

from ._typed_kit import Capital

ROOT = Path(__file__).resolve().parents[2]
PARIS = Capital(country="France", city="Paris")


@ark.tool(risk="dangerous")
def wipe(path: str) -> str:
    """Wipe a folder."""
    return f"wiped {path}"


WIPE = ScriptedTurn(tool_calls=[ToolCall(id="w1", name="wipe", arguments_json='{"path": "/x"}')])


async def pause(store, output_type) -> None:
    runtime = ark.AgentRuntime(ScriptedModel([WIPE]), tools=[wipe], storage=store, session_id="typed")
    paused = await runtime.run("Wipe, then answer.", output_type=output_type)
    assert paused.stop_reason == "awaiting_approval"
    await runtime.aclose()


def child(mode: str, folder: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "tests.runtime._typed_restore_child", mode, str(folder)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_per_run_output_type_is_asked_again_by_a_new_process_whose_runtime_has_none(tmp_path):
    assert child("pause", tmp_path) == {"stop": "awaiting_approval"}
    resumed = child("approve", tmp_path)
    assert resumed["ok"] and resumed["stop"] == "completed"
    assert resumed["type"] == "Capital" and resumed["output"] == {"country": "France", "city": "Paris"}
    assert resumed["asked"] == ["Capital", "Capital"]  # natively, and the wrong try went back to the model


def test_a_new_process_that_cannot_rebuild_the_type_refuses_the_decision_naming_it(tmp_path):
    assert child("pause", tmp_path) == {"stop": "awaiting_approval"}
    refused = child("approve-without-type", tmp_path)
    assert refused["ok"] is False and refused["code"] == "output_type_unavailable"
    assert "Capital" in refused["message"] and "tests.runtime._typed_kit:Capital" in refused["message"]
    assert "runtime.output_type = Capital" in refused["message"]
    assert refused["pending"] == 1  # nothing was decided: the run still waits
    resumed = child("approve", tmp_path)  # the same session, once the type can be found again
    assert resumed["ok"] and resumed["output"] == {"country": "France", "city": "Paris"}


async def test_a_type_defined_where_it_cannot_be_found_is_refused_then_given(tmp_path):
    class Local(BaseModel):  # (defined in a function: no module path leads back to it)
        answer: int

    store = ark.SQLiteStore(tmp_path / "s.sqlite3")
    await pause(store, Local)
    restored = await ark.AgentRuntime.restore("typed", storage=store, tools=[wipe],
                                              model=ScriptedModel([ScriptedTurn(output=Local(answer=42))]))
    assert restored.state.run_output.name == "Local" and restored.state.run_output.type_path == ""
    [item] = restored.controller.list_pending_approvals()
    refused = await restored.controller.approve(item.approval_id)
    assert not refused.ok and refused.error.code == "output_type_unavailable"
    assert "Local" in refused.error.message and restored.state.pending_approval is not None
    restored.output_type = Local
    assert (await restored.controller.approve(item.approval_id)).ok
    result = await restored.current_run.wait()
    assert result.output == Local(answer=42)
    await restored.aclose()


async def test_a_runtime_of_another_type_does_not_answer_for_the_paused_run(tmp_path):
    class Other(BaseModel):
        note: str

    store = ark.SQLiteStore(tmp_path / "s.sqlite3")
    await pause(store, Capital)
    restored = await ark.AgentRuntime.restore("typed", storage=store, tools=[wipe], output_type=Other,
                                              model=ScriptedModel([ScriptedTurn(output=PARIS)]))
    [item] = restored.controller.list_pending_approvals()
    assert (await restored.controller.approve(item.approval_id)).ok  # Capital found where it was defined
    result = await restored.current_run.wait()
    assert result.output == PARIS and restored.model.requests[0].output.name == "Capital"
    await restored.aclose()


async def test_a_finished_typed_run_leaves_the_next_run_untyped_unless_asked(tmp_path):
    store = ark.SQLiteStore(tmp_path / "s.sqlite3")
    runtime = ark.AgentRuntime(ScriptedModel([ScriptedTurn(output=PARIS), "plain"]), storage=store,
                               session_id="typed")
    assert (await runtime.run("Capital?", output_type=Capital)).output == PARIS
    assert runtime.state.run_output.name == "Capital"
    plain = await runtime.run("And now?")
    assert plain.output is None and runtime.state.run_output is None
    await runtime.aclose()


async def test_a_suspended_typed_run_resumes_only_with_its_type(tmp_path):
    class Local(BaseModel):
        answer: int

    holder: list = []

    @ark.tool
    def note(text: str) -> str:
        """Take a note."""
        holder[0].request_suspend()  # (the run pauses at its next safe checkpoint)
        return "noted"

    store = ark.SQLiteStore(tmp_path / "s.sqlite3")
    first = ark.AgentRuntime(ScriptedModel([ScriptedTurn(tool_calls=[ToolCall(id="n1", name="note",
                                                                              arguments_json='{"text": "x"}')])]),
                             tools=[note], storage=store, session_id="typed")
    holder.append(first)
    assert (await first.run("Note, then answer.", output_type=Local)).stop_reason == "suspended"
    await first.aclose()
    restored = await ark.AgentRuntime.restore("typed", storage=store, tools=[note],
                                              model=ScriptedModel([ScriptedTurn(output=Local(answer=7))]))
    try:
        await restored.resume()
    except ark.ArkError as exc:
        assert exc.code == "output_type_unavailable" and "Local" in exc.message
    else:
        raise AssertionError("the suspended run went on without its output type")
    assert restored.state.is_running and restored.model.requests == []  # nothing was changed or asked
    restored.output_type = Local
    result = await restored.resume()
    assert result.stop_reason == "completed" and result.output == Local(answer=7)
    await restored.aclose()
