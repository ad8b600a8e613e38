"""A parent whose sub-agent waits for approval survives SIGKILL: restored in a new process,
the sub-agent's approval is listed and decided at the parent, and both runs complete with
the dangerous tool executed exactly once (counted in a side-effect file)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import arknb as ark
from arknb import EventTypes

from ._kill import run_until_line
from ._subagent_kit import cleaner, effects

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
