"""A parent whose sub-agent waits for approval survives SIGKILL: restored in a new process,
the sub-agent's approval is listed and decided at the parent, and both runs complete with
the dangerous tool executed exactly once (counted in a side-effect file)."""

from __future__ import annotations

import asyncio

import pytest
from pathlib import Path

import arknb as ark
from arknb import EventTypes, ScriptedTurn

from ..runtime._approval_kit import run_until_line
from ._subagent_kit import call, cleaner, delegate, effect_tools, effects, open_store, uploader

CHILD = Path(__file__).with_name("_subagent_child.py")


def _run_until_awaiting(directory: Path) -> str:
    return run_until_line(CHILD, str(directory), prefix="AWAITING ").split()[1]


async def test_a_parent_whose_subagent_awaits_approval_is_restored_approved_and_both_complete(tmp_path) -> None:
    approval_id = _run_until_awaiting(tmp_path)
    assert approval_id.startswith("cleaner/approval_")
    assert effects(tmp_path) == []  # nothing dangerous ran before the approval

    storage = ark.FileStateStorage(tmp_path)
    # The new process's scripts continue where the killed one stopped.
    child_rest = ["The cache at /tmp/cache is cleared."]
    parent_model = ark.ScriptedModel(["The cleaner freed the space."])
    parent = await ark.AgentRuntime.restore("boss", storage=storage, model=parent_model,
                                            subagents=[cleaner(tmp_path, storage, child_rest)])
    seen: list[ark.AgentEvent] = []
    parent.bus.subscribe(EventTypes.ANY, seen.append)

    assert [i.approval_id for i in parent.controller.list_pending_approvals()] == [approval_id]
    [item] = parent.controller.list_pending_approvals()
    assert item.tool_call.name == "clear_cache" and item.tool_call.arguments == {"path": "/tmp/cache"}
    decided = await parent.controller.approve(approval_id)
    assert decided.ok and decided.all_decided and decided.approval_id == approval_id
    result = await asyncio.wait_for(parent.current_run.wait(), 60)

    assert result.stop_reason == "completed" and result.text == "The cleaner freed the space."
    assert effects(tmp_path) == ["cleared /tmp/cache"]  # exactly once
    answer = parent.state.history[-2]
    assert answer.role == "tool" and answer.text == "The cache at /tmp/cache is cleared."
    child_state = await storage.load("boss.cleaner.1")
    assert child_state.last_stop_reason == "completed" and child_state.pending_approval is None
    assert not (await storage.load("boss")).is_running
    nested = [e for e in seen if e.session_id == "boss.cleaner.1"]
    assert nested and {e.parent_call_id for e in nested} == {"d1"}
    assert EventTypes.AGENT_SUCCESS in [e.type for e in nested]


@pytest.mark.parametrize("kind", ["file", "sqlite"])
async def test_a_delegation_killed_while_its_child_awaits_approval_reruns_no_finished_tool(tmp_path, kind) -> None:
    """SIGKILL while the child waits for approval, on a file store and on SQLiteStore (where
    every call is an operation): restored, approved at the parent, both complete; the
    parent's finished call and the child's finished turn never run again."""
    line = run_until_line(CHILD, str(tmp_path), kind, "sibling", prefix="AWAITING ")
    approval_id = line.split()[1]
    assert approval_id == "cleaner/" + approval_id.split("/", 1)[1]
    assert effects(tmp_path) == []
    assert effects(tmp_path, "counted.log") == ["counted /parent", "counted /tmp/cache"]

    storage = open_store(kind, tmp_path)
    count_files = effect_tools(tmp_path)[1]
    parent = await ark.AgentRuntime.restore(
        "boss", storage=storage, model=ark.ScriptedModel(["The cleaner freed the space."]), tools=[count_files],
        subagents=[cleaner(tmp_path, storage, ["The cache at /tmp/cache is cleared."])])
    try:
        assert [i.approval_id for i in parent.controller.list_pending_approvals()] == [approval_id]
        decided = await parent.controller.approve(approval_id)
        assert decided.ok and decided.all_decided
        result = await asyncio.wait_for(parent.current_run.wait(), 60)
        assert result.stop_reason == "completed" and result.text == "The cleaner freed the space."
        assert effects(tmp_path) == ["cleared /tmp/cache"]  # the approved call, once
        # Nothing that finished before the kill ran again: not the parent's call, not the child's turn.
        assert effects(tmp_path, "counted.log") == ["counted /parent", "counted /tmp/cache"]
        answers = {m.tool_call_id: m.text for m in parent.state.history if m.role == "tool"}
        assert answers == {"p0": "/parent holds 3 files", "d1": "The cache at /tmp/cache is cleared."}
        child = await storage.load("boss.cleaner.1")
        assert child.last_stop_reason == "completed" and child.pending_approval is None
        child_answers = [m.tool_call_id for m in child.history if m.role == "tool"]
        assert child_answers == ["k0", "k1"]  # one answer per call: nothing ran twice
        if kind == "sqlite":
            # The child's operations: each tool call once, none left executing.
            operations = await storage.list_operations("boss.cleaner.1")
            tools = [o for o in operations if o.kind == "tool_call"]
            assert sorted(o.purpose_key.rsplit(":", 1)[1] for o in tools) == ["k0", "k1"]
            assert all(o.completed for o in operations)
            # The parent's: p0 once; delegate_task once per attempt (the one that deferred
            # itself, then the one after the approval), so the rerun never reused the deferral.
            parent_tools = [o.purpose_key.rsplit(":", 1)[1] for o in await storage.list_operations("boss")
                            if o.kind == "tool_call"]
            assert sorted(parent_tools) == ["d1", "d1.a1", "p0"]
    finally:
        await parent.aclose()
        if kind == "sqlite":
            await storage.aclose()


INDOUBT_CHILD = Path(__file__).with_name("_subagent_indoubt_child.py")


@pytest.mark.parametrize("kind", ["file", "sqlite"])
async def test_a_childs_call_left_in_doubt_by_a_crash_is_decided_at_the_parent(tmp_path, kind) -> None:
    """SIGKILL while the child's (not idempotent) tool runs: restored, the parent lists the
    child's in-doubt call at once (DESIGN §13), under a namespaced id, with nothing run
    (controller.list_in_doubt / mark_done); the tool never runs twice and no call is left
    unanswered in the child's history."""
    run_until_line(INDOUBT_CHILD, str(tmp_path), kind, prefix="UPLOADING")
    storage = open_store(kind, tmp_path)
    parent = await ark.AgentRuntime.restore(
        "boss", storage=storage, model=ark.ScriptedModel(["The report is up."]),
        subagents=[uploader(tmp_path, storage, ["Uploaded report.pdf."])])
    try:
        assert parent.current_run is None and parent.state.last_stop_reason == "awaiting_approval"
        [item] = parent.state.pending_approval.items
        assert item.kind == "subagent" and item.tool_call.id == "d1"  # the delegation waits, not in doubt itself
        for refused in (parent.run("Next."), parent.resume()):  # each is told how to decide, not to approve
            with pytest.raises(ark.ArkError, match=r"list_in_doubt\(\).*rerun / mark_done / mark_failed") as error:
                await refused
            assert error.value.code == ark.ErrorCode.PENDING_APPROVAL_BLOCKS_INPUT
        [doubt] = parent.controller.list_in_doubt()
        assert doubt.operation_id.startswith("uploader/") and doubt.tool_call.name == "upload"
        decided = await parent.controller.mark_done(doubt.operation_id, "uploaded report.pdf")
        assert decided.ok and decided.all_decided and decided.approval_id == doubt.operation_id
        result = await asyncio.wait_for(parent.current_run.wait(), 60)
        assert result.stop_reason == "completed" and result.text == "The report is up."
        assert effects(tmp_path, "uploads.log") == ["upload report.pdf"]  # never started again
        assert [m.text for m in parent.state.history if m.role == "tool"] == ["Uploaded report.pdf."]
        child = await storage.load("boss.uploader.1")
        assert [m.text for m in child.history if m.role == "user"] == ["Upload report.pdf."]  # the task once
        asked = [c.id for m in child.history for c in m.tool_calls]
        answered = [m.tool_call_id for m in child.history if m.role == "tool"]
        assert asked == answered == ["u1"]  # no orphaned call
    finally:
        await parent.aclose()
        if kind == "sqlite":
            await storage.aclose()


async def test_the_parent_chat_offers_a_childs_in_doubt_call_and_marks_it_done(tmp_path) -> None:
    from arknb.widgets import ChatWidget

    run_until_line(INDOUBT_CHILD, str(tmp_path), "sqlite", prefix="UPLOADING")
    storage = open_store("sqlite", tmp_path)
    parent = await ark.AgentRuntime.restore(
        "boss", storage=storage, model=ark.ScriptedModel(["The report is up."]),
        subagents=[uploader(tmp_path, storage, ["Uploaded report.pdf."])])
    chat = ChatWidget(parent, call_later=lambda delay, fn: fn())
    try:
        chat._flush()  # the card is there as soon as the parent is restored: nothing was resumed
        [card] = chat.approvals
        assert card["approval_id"].startswith("uploader/") and card["kind"] == "in_doubt"
        assert card["tool_name"] == "upload"
        chat._on_msg(chat, {"type": "mark_done", "approval_id": card["approval_id"], "text": "it is uploaded",
                            "request_id": "r1"})
        while chat._tasks:
            await next(iter(chat._tasks))
        result = await asyncio.wait_for(parent.current_run.wait(), 60)
        assert result.stop_reason == "completed" and effects(tmp_path, "uploads.log") == ["upload report.pdf"]
        chat._flush()
        assert chat.approvals == []
    finally:
        chat.close()
        await parent.aclose()
        await storage.aclose()


@pytest.mark.parametrize("kind", ["file", "sqlite"])
async def test_the_next_delegation_after_a_crashed_one_gets_a_session_of_its_own(tmp_path, kind) -> None:
    """SIGKILL mid-delegation, then the interrupted delegation is settled without running it
    again (the interrupted run, paused for the child's in-doubt upload, is cancelled). The
    next delegation to the same sub-agent starts its own task in a new session: it is never
    handed the crashed one's session, with that task and its in-doubt upload."""
    run_until_line(INDOUBT_CHILD, str(tmp_path), kind, prefix="UPLOADING")
    storage = open_store(kind, tmp_path)
    turns = [ScriptedTurn(tool_calls=[call("u9", "upload", filename="other.pdf")]), "Uploaded other.pdf."]
    script = [delegate("d2", "uploader", "Upload other.pdf."), "Both are up."]
    parent = await ark.AgentRuntime.restore("boss", storage=storage, model=ark.ScriptedModel(script),
                                            subagents=[uploader(tmp_path, storage, turns)])
    try:
        [doubt] = parent.controller.list_in_doubt()
        assert doubt.operation_id.startswith("uploader/")
        assert parent.cancel()
        assert (await asyncio.wait_for(parent.current_run.wait(), 60)).stop_reason == "cancelled"
        result = await asyncio.wait_for(parent.run("Now upload other.pdf."), 60)
        assert result.stop_reason == "completed" and result.text == "Both are up."
        answers = {m.tool_call_id: m.text for m in parent.state.history if m.role == "tool"}
        assert answers["d2"] == "Uploaded other.pdf."
        assert effects(tmp_path, "uploads.log") == ["upload report.pdf", "upload other.pdf"]  # each once
        second = await storage.load("boss.uploader.2")
        assert [m.text for m in second.history if m.role == "user"] == ["Upload other.pdf."]
        first = await storage.load("boss.uploader.1")
        assert [m.text for m in first.history if m.role == "user"] == ["Upload report.pdf."]  # left as it was
    finally:
        await parent.aclose()
        if kind == "sqlite":
            await storage.aclose()


@pytest.mark.parametrize("kind", ["file", "sqlite"])
async def test_new_input_to_a_parent_whose_delegation_a_crash_interrupted_waits_for_the_childs_doubt(
        tmp_path, kind) -> None:
    """SIGKILL while the child's upload runs, then new input instead of resume(). The input
    is refused (the parent paused for the child's in-doubt call when it was restored: new
    input must never leave the delegation unpaired or the child's doubt unseen); decided,
    the run ends, and the input then goes through."""
    from ..runtime._approval_kit import assert_history_paired

    run_until_line(INDOUBT_CHILD, str(tmp_path), kind, prefix="UPLOADING")
    storage = open_store(kind, tmp_path)
    parent = await ark.AgentRuntime.restore(
        "boss", storage=storage, model=ark.ScriptedModel(["The report is up.", "Hello again."]),
        subagents=[uploader(tmp_path, storage, ["Uploaded report.pdf."])])
    try:
        with pytest.raises(ark.ArkError) as refused:
            await parent.run("Something else.")
        assert refused.value.code == "pending_approval_blocks_input"
        assert [m.text for m in parent.state.history if m.role == "user"] == ["Upload the report."]  # not added
        [doubt] = parent.controller.list_in_doubt()
        assert doubt.operation_id.startswith("uploader/") and doubt.tool_call.name == "upload"
        assert (await parent.controller.mark_done(doubt.operation_id, "uploaded report.pdf")).ok
        result = await asyncio.wait_for(parent.current_run.wait(), 60)
        assert result.stop_reason == "completed" and result.text == "The report is up."
        again = await asyncio.wait_for(parent.run("Something else."), 60)
        assert again.stop_reason == "completed" and again.text == "Hello again."
        assert_history_paired(parent.state.history)
        assert {m.tool_call_id: m.text for m in parent.state.history if m.role == "tool"} == {
            "d1": "Uploaded report.pdf."}
        assert effects(tmp_path, "uploads.log") == ["upload report.pdf"]  # never started again
    finally:
        await parent.aclose()
        if kind == "sqlite":
            await storage.aclose()
