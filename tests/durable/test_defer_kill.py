"""SIGKILL between a self-deferring call's operation commit and its batch's save.

A call that defers itself while it runs (``ToolContext.defer``: ``delegate_task`` whose
sub-agent waits for approval, or a plain tool handing itself to a person) commits its
operation as the tool returns; the runtime saves the pending batch after the batch's
other calls finished. The child process (``_defer_kill_child.py``) is killed between the
two, on an ``SQLiteStore``; a new process restores the parent, a person decides what is
asked, and the run completes. Side effects are counted in files the tools append to.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import arknb as ark
from arknb.durable import OperationStatus

from ..memory._subagent_kit import effects
from ..runtime._approval_kit import assert_history_paired, run_until_line
from ._defer_kit import PARENT_REST, parent_options

CHILD = Path(__file__).with_name("_defer_kill_child.py")


async def _killed_in_the_window(directory: Path, point: str, deferring: str) -> ark.SQLiteStore:
    """Run the child to the kill point, SIGKILL it, and check what the store holds: the
    deferring call's operation committed with its deferral, no pending batch saved."""
    run_until_line(CHILD, str(directory), point, prefix=f"READY {point}")
    store = ark.SQLiteStore(directory / "arknb.sqlite3")
    state = await store.load("boss")
    assert state.pending_approval is None and state.is_running
    operation = await store.find_operation("boss", f"{state.current_run_id}:{deferring}")
    assert operation is not None and operation.completed and operation.status is OperationStatus.SUCCEEDED
    assert operation.effective_result["error_code"] == "call_deferred"
    return store


async def _restore(directory: Path, store, point: str) -> tuple[ark.AgentRuntime, ark.ScriptedModel]:
    model = ark.ScriptedModel([PARENT_REST[point]])
    parent = await ark.AgentRuntime.restore("boss", storage=store, model=model,
                                            **parent_options(directory, store, point, first_process=False))
    return parent, model


def _answers(history) -> dict[str, str]:
    return {m.tool_call_id: m.text for m in history if m.role == "tool"}


def _model_saw_each_call_answered_once(model: ark.ScriptedModel) -> None:
    """The history the model got after the restore: every call answered exactly once."""
    [request] = model.requests
    messages = list(request.messages)
    assert_history_paired(messages)
    asked = [c.id for m in messages for c in m.tool_calls]
    answered = [m.tool_call_id for m in messages if m.role == "tool"]
    assert sorted(asked) == sorted(answered) and len(set(answered)) == len(answered)


async def test_a_delegation_killed_before_its_pending_batch_is_saved_asks_the_childs_approval_once(tmp_path):
    store = await _killed_in_the_window(tmp_path, "delegate", "d1")
    child_state = await store.load("boss.cleaner.1")
    [waiting] = child_state.pending_approval.items  # the child saved its own pause before the parent's call returned
    assert effects(tmp_path) == [] and effects(tmp_path, "counted.log") == ["counted /parent", "counted /tmp/cache"]

    parent, model = await _restore(tmp_path, store, "delegate")
    try:
        # Paused at once by the restore (DESIGN §13), for the same item the child saved
        # before the kill: nothing new is asked, nothing ran.
        assert parent.current_run is None and parent.state.last_stop_reason == "awaiting_approval"
        [item] = parent.controller.list_pending_approvals()
        assert item.approval_id == f"cleaner/{waiting.approval_id}" and item.tool_call.id == "k1"
        assert effects(tmp_path) == [] and model.requests == []
        decided = await parent.controller.approve(item.approval_id)
        assert decided.ok and decided.all_decided
        result = await asyncio.wait_for(parent.current_run.wait(), 60)
        assert result.stop_reason == "completed" and result.text == PARENT_REST["delegate"]

        assert effects(tmp_path) == ["cleared /tmp/cache"]  # the approved call, once
        assert effects(tmp_path, "counted.log") == ["counted /parent", "counted /tmp/cache"]  # never again
        assert _answers(parent.state.history) == {"p0": "/parent holds 3 files",
                                                  "d1": "The cache at /tmp/cache is cleared."}
        assert_history_paired(parent.state.history)
        _model_saw_each_call_answered_once(model)
        child = await store.load("boss.cleaner.1")
        assert child.last_stop_reason == "completed" and [m.tool_call_id for m in child.history
                                                          if m.role == "tool"] == ["k0", "k1"]
    finally:
        await parent.aclose()
        await store.aclose()


async def test_a_delegation_killed_before_its_second_pause_is_saved_never_asks_the_first_decision_again(tmp_path):
    store = await _killed_in_the_window(tmp_path, "delegate_second", "d1.a1")
    assert effects(tmp_path) == ["cleared /tmp/a"]  # approved before the kill, ran once

    parent, model = await _restore(tmp_path, store, "delegate_second")
    try:
        assert parent.current_run is None and parent.state.last_stop_reason == "awaiting_approval"  # at once
        [item] = parent.controller.list_pending_approvals()  # only the second one: the first stands
        assert item.tool_call.id == "k2" and item.tool_call.arguments == {"path": "/tmp/b"}
        decided = await parent.controller.approve(item.approval_id)
        assert decided.ok and decided.all_decided
        result = await asyncio.wait_for(parent.current_run.wait(), 60)
        assert result.stop_reason == "completed"

        assert effects(tmp_path) == ["cleared /tmp/a", "cleared /tmp/b"]
        assert effects(tmp_path, "counted.log") == ["counted /parent"]
        assert _answers(parent.state.history) == {"p0": "/parent holds 3 files", "d1": "Both caches are cleared."}
        assert_history_paired(parent.state.history)
        _model_saw_each_call_answered_once(model)
        child = await store.load("boss.cleaner.1")
        assert [m.tool_call_id for m in child.history if m.role == "tool"] == ["k1", "k2"]
    finally:
        await parent.aclose()
        await store.aclose()


def _transferred_once(directory: Path, parent: ark.AgentRuntime, model: ark.ScriptedModel, before: list[str]) -> None:
    """The run carried the transfer out once after what ran ``before``, and the model got
    every call answered once."""
    assert effects(directory, "transfers.log") == [*before, "transferred t1"]
    assert effects(directory, "counted.log") == ["counted /parent"]  # the sibling never ran again
    assert _answers(parent.state.history) == {"p0": "/parent holds 3 files", "t1": "transferred 100"}
    assert_history_paired(parent.state.history)
    _model_saw_each_call_answered_once(model)


async def _asked_then_approved(directory: Path, point: str, deferring: str, before: list[str], reason: str) -> None:
    """Killed in the window, restored: the run waits for the person with the recorded
    deferral (nothing ran again), and only the approval carries the transfer out."""
    store = await _killed_in_the_window(directory, point, deferring)
    assert effects(directory, "transfers.log") == before
    parent, model = await _restore(directory, store, point)
    try:
        result = await asyncio.wait_for(parent.resume(), 60)
        assert result.stop_reason == "awaiting_approval", result
        assert effects(directory, "transfers.log") == before  # nothing ran before the person decided
        [item] = parent.controller.list_pending_approvals()
        assert item.tool_call.id == "t1" and item.reason == reason
        decided = await parent.controller.approve(item.approval_id)
        assert decided.ok and decided.all_decided
        result = await asyncio.wait_for(parent.current_run.wait(), 60)
        assert result.stop_reason == "completed" and result.text == PARENT_REST[point]
        _transferred_once(directory, parent, model, before)
    finally:
        await parent.aclose()
        await store.aclose()


async def test_a_plain_tool_killed_before_its_pending_batch_is_saved_waits_for_the_person(tmp_path):
    """``transfer`` deferred itself to a person and was killed before its pause was saved:
    restored, it must not run again as if approved (run again, it carries the staged
    transfer out); the person is asked, and only the approval carries it out."""
    await _asked_then_approved(tmp_path, "plain", "t1", ["staged t1"], "confirm the transfer of 100")


async def test_a_plain_tool_killed_before_its_pause_is_saved_and_then_denied_never_runs_again(tmp_path):
    store = await _killed_in_the_window(tmp_path, "plain", "t1")
    parent, model = await _restore(tmp_path, store, "plain")
    try:
        assert (await asyncio.wait_for(parent.resume(), 60)).stop_reason == "awaiting_approval"
        [item] = parent.controller.list_pending_approvals()
        assert (await parent.controller.deny(item.approval_id, "not today")).ok
        result = await asyncio.wait_for(parent.current_run.wait(), 60)
        assert result.stop_reason == "completed"
        assert effects(tmp_path, "transfers.log") == ["staged t1"]
        assert _answers(parent.state.history)["t1"].startswith("tool_denied")
        assert_history_paired(parent.state.history)
        _model_saw_each_call_answered_once(model)
    finally:
        await parent.aclose()
        await store.aclose()


async def test_a_plain_tool_whose_pause_was_saved_and_approved_before_the_kill_is_not_asked_again(tmp_path):
    """The control case: the pause was saved and approved, and the kill came as the decided
    batch started. The decision stands: the call runs once, nobody is asked again."""
    run_until_line(CHILD, str(tmp_path), "plain_decided", prefix="READY plain_decided")
    assert effects(tmp_path, "transfers.log") == ["staged t1"]
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    parent, model = await _restore(tmp_path, store, "plain")
    try:
        result = await asyncio.wait_for(parent.resume(), 60)
        assert result.stop_reason == "completed", result
        assert parent.controller.list_pending_approvals() == []
        _transferred_once(tmp_path, parent, model, ["staged t1"])
    finally:
        await parent.aclose()
        await store.aclose()


async def test_a_plain_tool_killed_before_its_second_pause_is_saved_is_not_answered_by_the_first_decision(tmp_path):
    """``transfer`` needs two confirmations: the first was saved and approved, the call ran
    again and deferred again, and the kill came before that pause was saved. The first
    approval (still the last resolved one in the saved state) does not answer the second."""
    await _asked_then_approved(tmp_path, "plain_second", "t1.a1", ["staged t1", "confirm t1"],
                               "confirm the transfer of 100 once more")
