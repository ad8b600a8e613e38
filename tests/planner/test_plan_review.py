"""Plan review (DESIGN §14, seed 000 §6.3 and §8): a new plan pauses the run like a tool approval."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import arknb as ark
from arknb import ArkError, EventTypes, ScriptedTurn

from ..runtime._approval_kit import EventLog, FaultyStorage, assert_history_paired, kill_when_awaiting
from ._plan_child import effect_tools, open_store
from ._plan_kit import PlanTools, first_plan_turn, review_runtime, todos, tool_call

CHILD = Path(__file__).with_name("_plan_child.py")


async def test_a_new_plan_is_saved_before_plan_review_required_is_published():
    storage = FaultyStorage()
    runtime, model, tools = review_runtime([first_plan_turn()], storage=storage, session_id="r")
    log = EventLog(runtime, storage.log)

    result = await runtime.run("The api is down")

    assert result.stop_reason == "awaiting_approval" and result.error.code == "awaiting_approval"
    batch = runtime.state.pending_approval
    assert batch.kind == "plan" and [i.kind for i in batch.items] == ["plan"]
    [item] = batch.items
    assert item.tool_call.name == "write_todos"
    assert [i["content"] for i in item.detail["plan"]["items"]] == ["Read the logs", "Restart the service"]
    # Persist before announce: the mandatory save, then approval.required, plan.review_required, suspended.
    order = [entry[0] if entry[0] != "event" else entry[1] for entry in storage.log]
    last_save = max(i for i, what in enumerate(order) if what == "save")
    assert order[last_save + 1:last_save + 5] == [EventTypes.STATE_PERSISTED, EventTypes.APPROVAL_REQUIRED,
                                                  EventTypes.PLAN_REVIEW_REQUIRED, EventTypes.AGENT_SUSPENDED]
    assert EventTypes.PLAN_REVIEW_REQUIRED not in order[:last_save]
    saved = await storage.load("r")
    assert saved.pending_approval == batch and saved.is_running
    [announced] = log.of(EventTypes.PLAN_REVIEW_REQUIRED)
    assert announced.payload["approval_id"] == item.approval_id and announced.payload["plan"]["version"] == 1
    assert announced.payload["previous"] is None and announced.payload["batch_id"] == batch.batch_id
    review = runtime.controller.get_pending_plan_review()
    assert review.approval_id == item.approval_id and review.plan.version == 1 and review.previous is None
    assert runtime.state.plan is None  # nothing is applied before a person decides
    assert tools.ran == []


async def test_a_review_whose_save_failed_is_never_announced():
    storage = FaultyStorage(fail_if=lambda state: state.pending_approval is not None)
    runtime, _, tools = review_runtime([first_plan_turn()], storage=storage, session_id="f")
    log = EventLog(runtime)

    result = await runtime.run("The api is down")

    assert result.stop_reason == "failed" and result.error.code == "state_save_failed"
    assert not log.of(EventTypes.PLAN_REVIEW_REQUIRED) and not log.of(EventTypes.APPROVAL_REQUIRED)
    assert runtime.controller.get_pending_plan_review() is None and storage.marked == ["f"]
    assert_history_paired(runtime.history)


@pytest.mark.parametrize("backend", ["file", "sqlite"])
async def test_a_plan_review_survives_sigkill_and_is_approved_in_a_new_process(tmp_path, backend):
    approval_id = kill_when_awaiting(CHILD, backend, tmp_path, "killed-plan", session_id="killed-plan")
    effects = tmp_path / "effects.log"
    assert not effects.exists()  # the not-yet-approved plan let nothing that changes things run

    storage = open_store(backend, tmp_path)
    model = ark.ScriptedModel([
        ScriptedTurn(tool_calls=[tool_call("c3", "restart_service", service="api")]),
        ScriptedTurn(tool_calls=[todos("t2", ("Read the logs", "completed"), ("Restart the service", "completed"))]),
        "The api is back."])
    runtime = await ark.AgentRuntime.restore("killed-plan", storage=storage, model=model,
                                             tools=effect_tools(tmp_path), plan_mode="review")
    log = EventLog(runtime)

    review = runtime.controller.get_pending_plan_review()
    assert review.approval_id == approval_id
    assert [i.content for i in review.plan.items] == ["Read the logs", "Restart the service"]
    with pytest.raises(ArkError) as info:
        runtime.start("something else")
    assert info.value.code == "pending_plan_review_blocks_input" and info.value.layer == "security"

    decided = await runtime.controller.approve_plan()
    assert decided.ok and decided.all_decided and decided.approval_id == approval_id
    result = await asyncio.wait_for(runtime.current_run.wait(), 30)

    assert result.stop_reason == "completed" and result.text == "The api is back."
    assert effects.read_text() == "restart api\n"  # ran once, after the approval
    assert runtime.state.plan.version == 2 and runtime.state.plan.finished
    # The decision is saved before it is announced, and the review's own event follows it.
    assert [e.type for e in log.events[:3]] == [EventTypes.STATE_PERSISTED, EventTypes.APPROVAL_DECIDED,
                                                EventTypes.PLAN_REVIEW_RESOLVED]
    updated = [e.payload for e in log.of(EventTypes.PLAN_UPDATED)]
    assert [(u["change"], u["approved"]) for u in updated] == [("new", True), ("status", True)]
    # The first model call after the restore sees the approved plan and the tool's answer.
    first = model.requests[0]
    assert "Current plan, version 1 (approved)" in first.messages[0].text
    assert first.messages[-1].tool_call_id == "t1" and "approved the plan" in first.messages[-1].text
    final = await storage.load("killed-plan")
    assert final.pending_approval is None and not final.is_running and final.plan == runtime.state.plan
    assert_history_paired(final.history)
    await runtime.aclose()
    if backend == "sqlite":
        await storage.aclose()


async def test_a_rejection_reaches_the_model_with_its_reason():
    turns = [first_plan_turn(),
             ScriptedTurn(text="Revised.", tool_calls=[todos("t2", "Read the logs", "Check memory",
                                                                "Restart the service")]),
             "Done."]
    runtime, model, tools = review_runtime(turns)
    log = EventLog(runtime)
    await runtime.run("The api is down")

    decided = await runtime.controller.reject_plan("check the memory use before restarting")
    assert decided.ok and decided.decision == "denied"
    result = await runtime.current_run

    assert result.stop_reason == "awaiting_approval"  # the revised plan waits for review in turn
    answer = model.requests[1].messages[-1]
    assert answer.role == "tool" and answer.tool_call_id == "t1" and answer.is_error
    assert answer.text.startswith("The reviewer rejected this plan. Reason: check the memory use before "
                                  "restarting\nNothing was changed.")
    assert runtime.state.plan is None  # a rejected plan is never applied
    [resolved] = log.of(EventTypes.PLAN_REVIEW_RESOLVED)
    assert resolved.payload["decision"] == "denied"
    assert resolved.payload["reason"] == "check the memory use before restarting"
    [denied] = log.of(EventTypes.TOOL_DENIED)
    assert denied.payload["call"]["id"] == "t1" and denied.payload["reason"] == "check the memory use before restarting"
    review = runtime.controller.get_pending_plan_review()
    assert [i.content for i in review.plan.items] == ["Read the logs", "Check memory", "Restart the service"]
    assert review.plan.version == 2  # the rejected proposal was version 1: the revision is the second

    await runtime.controller.approve_plan()
    assert (await runtime.current_run).stop_reason == "completed"
    assert runtime.state.plan.version == 2 and len(runtime.state.plan.items) == 3


async def test_a_rejection_without_a_reason_says_so():
    runtime, model, _ = review_runtime([first_plan_turn(), "ok"])
    await runtime.run("go")
    await runtime.controller.reject_plan("  ")
    await runtime.current_run
    assert "rejected this plan. No reason was given." in model.requests[1].messages[-1].text


async def test_new_input_while_a_plan_review_waits_is_refused():
    runtime, _, _ = review_runtime([first_plan_turn(), "ok"])
    await runtime.run("go")

    for attempt in (lambda: runtime.start("another task"), runtime.start_resume):
        with pytest.raises(ArkError) as info:
            attempt()
        assert info.value.code == "pending_plan_review_blocks_input" and info.value.layer == "security"
        assert "approve_plan()" in info.value.message
    assert runtime.controller.get_pending_plan_review() is not None  # the review is untouched


async def test_only_read_only_tools_run_until_a_plan_is_approved():
    turns = [ScriptedTurn(tool_calls=[tool_call("c1", "restart_service", service="api"),
                                      tool_call("c2", "read_logs", 1, service="api")]),
             first_plan_turn(),
             ScriptedTurn(tool_calls=[tool_call("c3", "restart_service", service="api")]),
             "Fixed."]
    runtime, model, tools = review_runtime(turns)
    log = EventLog(runtime)

    await runtime.run("The api is down")

    assert tools.ran == ["read_logs:api"]  # the read-only tool ran, the other did not
    [denied] = log.of(EventTypes.TOOL_DENIED)
    assert denied.payload["call"]["name"] == "restart_service" and denied.payload["reason"] == "plan not approved yet"
    assert denied.payload["hook"] == "plan_mode"
    refused = model.requests[1].messages[-2]
    assert refused.tool_call_id == "c1" and refused.is_error and refused.text.startswith("plan not approved yet")
    assert denied.payload["result"]["error_code"] == "tool_denied"

    await runtime.controller.approve_plan()
    assert (await runtime.current_run).stop_reason == "completed"
    assert tools.ran == ["read_logs:api", "restart_service:api"]  # after approval it runs


async def test_a_status_only_update_is_not_reviewed_again_but_a_changed_plan_is():
    turns = [first_plan_turn(),
             ScriptedTurn(tool_calls=[todos("t2", ("Restart the service", "in_progress"), ("Read the logs", "completed"))]),
             ScriptedTurn(tool_calls=[todos("t3", ("Read the logs", "completed"), "Restart the service",
                                            "Write a post-mortem")]),
             "Done."]
    runtime, _, _ = review_runtime(turns)
    log = EventLog(runtime)
    await runtime.run("go")
    await runtime.controller.approve_plan()

    result = await runtime.current_run

    # t2 only changed statuses (and order): applied without a review; t3 adds an item: reviewed.
    assert result.stop_reason == "awaiting_approval"
    assert len(log.of(EventTypes.PLAN_REVIEW_REQUIRED)) == 2
    assert [e.payload["call_id"] for e in log.of(EventTypes.PLAN_UPDATED)] == ["t1", "t2"]
    review = runtime.controller.get_pending_plan_review()
    assert review.previous.version == 2 and review.plan.version == 3
    assert runtime.state.plan.version == 2  # the approved plan stands while the change waits
    await runtime.controller.approve_plan()
    assert (await runtime.current_run).stop_reason == "completed"
    assert runtime.state.plan.version == 3


async def test_plan_decisions_go_through_the_approval_host():
    runtime, _, _ = review_runtime([first_plan_turn(), "ok"])
    nothing = await runtime.controller.approve_plan()
    assert not nothing.ok and nothing.error.code == "approval_not_found"
    assert "no plan is waiting for review" in nothing.error.message

    await runtime.run("go")
    [item] = runtime.controller.list_pending_approvals()  # a plan review is a pending item too
    assert item.kind == "plan"
    first = await runtime.controller.approve(item.approval_id)
    assert first.ok and first.all_decided
    await runtime.current_run
    again = await runtime.controller.approve_plan()
    assert not again.ok  # decided and consumed: no review waits any more
    with pytest.raises(ArkError):
        await runtime.controller.reject_plan(42)

    unbound = ark.AgentController()
    missing = await unbound.approve_plan()
    assert missing.error.code == "approval_host_missing" and unbound.get_pending_plan_review() is None


async def test_after_a_rejection_the_gate_stays_closed():
    turns = [first_plan_turn(),
             ScriptedTurn(tool_calls=[tool_call("c1", "restart_service", service="api")]),
             "I will wait."]
    runtime, _, tools = review_runtime(turns)
    await runtime.run("go")
    await runtime.controller.reject_plan("no")
    result = await runtime.current_run
    assert result.stop_reason == "completed" and tools.ran == []


async def test_auto_mode_never_gates_or_pauses():
    turns = [ScriptedTurn(tool_calls=[tool_call("c1", "restart_service", service="api"),
                                      todos("t1", "Restart", index=1)]), "ok"]
    tools = PlanTools()
    runtime = ark.AgentRuntime(ark.ScriptedModel(turns), tools=tools.all, plan_mode="auto")
    result = await runtime.run("go")
    assert result.stop_reason == "completed" and tools.ran == ["restart_service:api"]
    assert runtime.state.plan.version == 1
