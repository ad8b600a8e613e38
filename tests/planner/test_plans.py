"""Plans (DESIGN §14): write_todos, state.plan, plan.updated, plan modes, migration."""

from __future__ import annotations

import json

import pytest

import arknb as ark
from arknb import ArkError, EventTypes, ScriptedModel, ScriptedTurn
from arknb.state import AgentState

from ..runtime._approval_kit import EventLog
from ._plan_kit import PlanTools, todos, tool_call


def _write_todos_definition(request) -> ark.ToolDefinition:
    [definition] = [t for t in request.tools if t.name == "write_todos"]
    return definition


async def test_write_todos_has_a_json_schema_the_model_sees():
    model = ScriptedModel(["ok"])
    await ark.AgentRuntime(model, plan_mode="auto").run("hi")

    definition = _write_todos_definition(model.requests[0])
    schema = definition.parameters
    assert schema["required"] == ["todos"]
    todo_list = schema["properties"]["todos"]
    assert todo_list["type"] == "array" and todo_list["minItems"] == 1 and todo_list["maxItems"] == 50
    item = schema["$defs"][todo_list["items"]["$ref"].rsplit("/", 1)[1]]
    assert item["required"] == ["content"] and item["additionalProperties"] is False
    assert item["properties"]["status"]["enum"] == ["pending", "in_progress", "completed", "cancelled"]
    assert "whole list" in definition.description and definition.read_only


async def test_auto_mode_keeps_the_plan_in_state_and_publishes_plan_updated(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    model = ScriptedModel([
        ScriptedTurn(tool_calls=[todos("t1", "Read the logs", "Restart the service")]),
        ScriptedTurn(tool_calls=[todos("t2", ("Read the logs", "completed"), ("Restart the service", "in_progress"))]),
        "Working on it."])
    runtime = ark.AgentRuntime(model, plan_mode=ark.PlanMode.AUTO, storage=storage, session_id="p")
    log = EventLog(runtime)

    result = await runtime.run("Fix the service")

    assert result.stop_reason == "completed" and runtime.state.pending_approval is None
    plan = runtime.state.plan
    assert plan.version == 2
    assert [(i.content, i.status) for i in plan.items] == [("Read the logs", "completed"),
                                                          ("Restart the service", "in_progress")]
    first, second = (e.payload for e in log.of(EventTypes.PLAN_UPDATED))
    assert first["plan"]["version"] == 1 and first["change"] == "new" and first["previous_version"] is None
    assert second["change"] == "status" and second["previous_version"] == 1 and second["call_id"] == "t2"
    assert runtime.history[2].text == "Plan saved (version 1, 2 items: 2 pending)."
    # Saved with the session and read back by a new runtime.
    restored = await ark.AgentRuntime.restore("p", storage=storage, model=ScriptedModel([]), plan_mode="auto")
    assert restored.state.plan == plan
    on_disk = json.loads((tmp_path / "p.json").read_text())
    assert on_disk["extensions"]["plan"]["plan"]["version"] == 2


async def test_the_system_prompt_explains_planning_and_shows_the_current_plan():
    model = ScriptedModel([ScriptedTurn(tool_calls=[todos("t1", "Look", ("Fix", "in_progress"))]), "ok"])
    await ark.AgentRuntime(model, system_prompt="Be brief.", plan_mode="auto").run("go")

    before, after = (r.messages[0].text for r in model.requests)
    assert before.startswith("Be brief.\n\n## Planning") and "Current plan" not in before
    assert after.endswith("Current plan, version 1:\n[ ] Look\n[~] Fix")
    assert "reviewed by a person" not in after  # the review guide is for review mode only


async def test_plan_mode_off_installs_nothing_and_bad_modes_are_refused():
    model = ScriptedModel(["ok"])
    runtime = ark.AgentRuntime(model, plan_mode=ark.PlanMode.OFF)
    await runtime.run("hi")
    assert runtime.extensions == () and model.requests[0].tools == ()
    with pytest.raises(ArkError) as info:
        ark.AgentRuntime(ScriptedModel([]), plan_mode="sometimes")
    assert info.value.code == "invalid_argument" and "'off', 'auto', 'review'" in info.value.message
    assert ark.PlanMode("review") is ark.PlanMode.REVIEW and ark.PlanMode.AUTO == "auto"


async def test_write_todos_called_twice_in_one_turn_changes_nothing():
    model = ScriptedModel([ScriptedTurn(tool_calls=[todos("t1", "A"), todos("t2", "B", index=1)]), "ok"])
    runtime = ark.AgentRuntime(model, plan_mode="auto")
    log = EventLog(runtime)

    await runtime.run("go")

    assert runtime.state.plan is None and not log.of(EventTypes.PLAN_UPDATED)
    answers = [m for m in runtime.history if m.role == "tool"]
    assert len(answers) == 2 and all(m.is_error and "called 2 times in one turn" in m.text for m in answers)
    assert [e.payload["call"]["id"] for e in log.of(EventTypes.TOOL_DENIED)] == ["t1", "t2"]


async def test_invalid_todos_are_answered_by_the_tool_and_never_reviewed():
    bad = tool_call("t1", "write_todos", todos=[{"content": "", "status": "later"}])
    model = ScriptedModel([ScriptedTurn(tool_calls=[bad]), "ok"])
    runtime = ark.AgentRuntime(model, tools=PlanTools().all, plan_mode="review")

    result = await runtime.run("go")

    assert result.stop_reason == "completed" and runtime.state.pending_approval is None
    [answer] = [m for m in runtime.history if m.role == "tool"]
    assert answer.is_error and "invalid arguments for tool 'write_todos'" in answer.text
    assert "todos.0.status" in answer.text and runtime.state.plan is None


def test_a_state_saved_before_plans_reads_as_no_plan():
    v2 = {"schema_version": 2, "session_id": "old", "history": [], "usages": []}
    state = AgentState.from_json(json.dumps(v2), source="old.json")
    assert state.plan is None and state.active_skills == ()


def test_a_slice_that_is_not_a_plan_is_a_clear_error():
    state = AgentState(session_id="s", extensions={"plan": {"plan": {"version": 0, "items": "x"}}})
    with pytest.raises(ArkError) as info:
        state.plan
    assert info.value.code == "state_corrupt" and "state.extensions['plan']" in info.value.message


def test_plan_values():
    plan = ark.Plan(version=3, items=[ark.PlanItem(content="a", status="completed"),
                                      ark.PlanItem(content="b", status="cancelled")])
    assert plan.finished and plan.counts()["completed"] == 1
    assert plan.same_items([ark.PlanItem(content="b"), ark.PlanItem(content="a")])
    assert not plan.same_items([ark.PlanItem(content="a")])
    with pytest.raises(Exception):
        ark.PlanItem(content="   ")
