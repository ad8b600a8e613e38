"""A built-in tool that changes the state (activate_skill, write_todos) saves the change
before it answers: its answer is recorded as the call's result, which a restore reuses
without running the call again, so a SIGKILL before the batch's own save never leaves the
model told "active" / "plan saved" with a state that says otherwise."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import arknb as ark

from ..runtime._approval_kit import FaultyStorage, run_until_line
from ._state_tool_kill_child import first_call, options

CHILD = Path(__file__).with_name("_state_tool_kill_child.py")


@pytest.mark.parametrize("what", ["skill", "plan"])
async def test_a_state_change_announced_by_a_built_in_tool_survives_a_kill_before_the_batch_is_saved(
        tmp_path, what) -> None:
    run_until_line(CHILD, str(tmp_path), what, prefix="READY")
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")

    @ark.tool
    async def slow() -> str:
        """Take a while."""
        return "slow done"

    runtime = await ark.AgentRuntime.restore("s", storage=store, model=ark.ScriptedModel(["Ready to write."]),
                                             tools=[slow], **options(what))
    try:
        # Restored, before anything runs again: the state holds what c1 announced.
        if what == "skill":
            assert runtime.state.active_skills == ("notes",)
        else:
            assert runtime.state.plan is not None and runtime.state.plan.version == 1
            assert [i.content for i in runtime.state.plan.items] == ["Collect the changes", "Write"]
        [doubt] = runtime.controller.list_in_doubt()  # slow began and left no result
        assert doubt.tool_call.name == "slow"
        assert (await runtime.controller.mark_done(doubt.operation_id, "slow done")).ok
        result = await asyncio.wait_for(runtime.current_run.wait(), 60)
        assert result.stop_reason == "completed"
        answers = {m.tool_call_id: m.text for m in runtime.state.history if m.role == "tool"}
        assert answers["c1"].startswith("Skill 'notes' is active" if what == "skill" else "Plan saved (version 1")
        [c1] = [o for o in await store.list_operations("s") if o.purpose_key.endswith(":c1")]
        assert len(c1.attempts) == 1  # reused, never run again
    finally:
        await runtime.aclose()
        await store.aclose()


@pytest.mark.parametrize("what", ["skill", "plan"])
async def test_a_state_change_that_cannot_be_saved_is_answered_as_not_made(what) -> None:
    slice_name = "skills" if what == "skill" else "plan"
    storage = FaultyStorage(fail_if=lambda s: slice_name in s.extensions)
    seen = []
    runtime = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[first_call(what)]), "Noted."]),
                               storage=storage, session_id="s", **options(what))
    runtime.bus.subscribe(ark.EventTypes.SKILL_ACTIVATED if what == "skill" else ark.EventTypes.PLAN_UPDATED,
                          seen.append)
    await runtime.run("Prepare the release notes.")
    answer = next(m for m in runtime.state.history if m.role == "tool")
    assert answer.is_error and ("was not activated" if what == "skill" else "the plan was not saved") in answer.text
    assert seen == []  # nothing announced that was not saved
    assert runtime.state.active_skills == () and runtime.state.plan is None
