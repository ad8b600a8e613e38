"""Saves have a time limit and can be cancelled (issue 10 item 10, state side).

A save that overruns ``save_timeout`` is ``state_save_failed`` naming the save and the
limit; the storage may still finish it, so the runtime waits for it before its next
save and takes the revision it stored (no false conflict). Cancelling a run while a
save hangs ends the run at once.
"""

from __future__ import annotations

import asyncio

import pytest

import arknb as ark
from arknb import ArkError, ScriptedModel, ScriptedTurn
from arknb.state import MemoryStateStorage

from ._approval_kit import Tools, assert_history_paired, call, dangerous_turn


class HangingStorage(MemoryStateStorage):
    """A memory storage whose saves of the states ``hang_if`` picks wait until released."""

    def __init__(self, hang_if) -> None:
        super().__init__()
        self.hang_if = hang_if
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def save(self, state):
        if self.hang_if(state) and not self.release.is_set():
            self.entered.set()
            await self.release.wait()
        return await super().save(state)


def _final_answer(state) -> bool:
    return bool(state.history) and state.history[-1].text == "Done." and not state.is_running


async def test_a_save_past_its_time_limit_fails_naming_the_save_and_the_limit():
    storage = HangingStorage(_final_answer)
    runtime = ark.AgentRuntime(ScriptedModel(["Done.", "Again."]), storage=storage, session_id="s",
                               save_timeout=0.2)

    result = await runtime.run("hi")

    assert result.stop_reason == "completed" and not result.persisted
    assert result.error.code == "state_save_failed" and result.error.layer == "storage"
    assert "terminal save did not finish within 0.2 s (save_timeout)" in result.error.message

    storage.release.set()  # the storage finishes the save it owed
    again = await runtime.run("and again")
    assert again.stop_reason == "completed" and again.persisted  # no false conflict: the late revision was learnt
    saved = await storage.load("s")
    assert [m.text for m in saved.history] == ["hi", "Done.", "and again", "Again."]
    assert saved.revision == runtime.state.revision


async def test_cancelling_a_run_during_a_hanging_save_ends_it_at_once():
    storage = HangingStorage(lambda state: bool(state.history) and state.history[-1].role == "assistant")
    runtime = ark.AgentRuntime(ScriptedModel([ScriptedTurn(text="Thinking.", tool_calls=[call("c1", "add", a=1, b=2)]),
                                              "unused", "Hello again."]),
                               tools=Tools().all, storage=storage, session_id="s", save_timeout=None)
    persisted = []
    runtime.bus.subscribe(ark.EventTypes.STATE_PERSISTED, lambda event: persisted.append(dict(event.payload)))
    handle = runtime.start("hi")
    await storage.entered.wait()  # the after_model_text save hangs, with no time limit

    assert runtime.cancel()
    result = await handle  # ends without waiting for the storage

    assert result.stop_reason == "cancelled" and result.error.code == "cancelled" and not result.persisted
    terminal = persisted[-1]
    assert terminal["reason"] == "terminal" and not terminal["ok"]
    assert "an earlier save" in terminal["error"]["message"] and "has not finished" in terminal["error"]["message"]
    assert_history_paired(runtime.history)

    storage.release.set()
    follow_up = await runtime.run("hello")
    assert follow_up.stop_reason == "completed" and follow_up.persisted
    saved = await storage.load("s")
    assert saved.revision == runtime.state.revision and not saved.not_resumable
    assert_history_paired(saved.history)


async def test_a_decision_whose_save_overruns_is_not_acknowledged_and_a_retry_applies_it():
    storage = HangingStorage(lambda state: bool(state.resolved_approvals))  # the final decision's save
    tools = Tools()
    runtime = ark.AgentRuntime(ScriptedModel([dangerous_turn(), "Cleared."]), tools=tools.all, storage=storage,
                               session_id="s", save_timeout=0.2)
    await runtime.run("clear it")
    [item] = runtime.controller.list_pending_approvals()

    late = await runtime.controller.approve(item.approval_id)

    assert not late.ok and late.error.code == "state_save_failed"
    assert "approval_resolved save did not finish within 0.2 s" in late.error.message
    assert runtime.current_run is None and tools.ran == []
    assert runtime.controller.list_pending_approvals()[0].approval_id == item.approval_id

    storage.release.set()
    retried = await runtime.controller.approve(item.approval_id)
    assert retried.ok and retried.all_decided
    assert (await runtime.current_run).stop_reason == "completed"
    assert tools.names() == ["clear_cache"]


async def test_a_storage_stuck_for_good_names_the_way_out_and_a_new_runtime_reads_what_is_stored():
    storage = HangingStorage(lambda state: bool(state.resolved_approvals))   # never released
    tools = Tools()
    runtime = ark.AgentRuntime(ScriptedModel([dangerous_turn()]), tools=tools.all, storage=storage, session_id="s",
                               save_timeout=0.2)
    await runtime.run("clear it")
    [item] = runtime.controller.list_pending_approvals()
    assert not (await runtime.controller.approve(item.approval_id)).ok   # overran: unsettled

    again = await runtime.controller.approve(item.approval_id)

    assert not again.ok and "has not finished after another 0.2 s" in again.error.message
    assert "open the session again in a new runtime" in again.error.message
    fresh = ark.AgentRuntime(ScriptedModel(["Cleared."]), tools=tools.all, storage=storage, session_id="s")
    storage.hang_if = lambda state: False
    assert (await fresh.controller.approve(item.approval_id)).ok     # the stored batch, decided anew
    assert (await fresh.current_run).stop_reason == "completed" and tools.names() == ["clear_cache"]


@pytest.mark.parametrize("bad", [0, -1, True, "10", float("nan")])
def test_save_timeout_must_be_positive_seconds_or_none(bad):
    with pytest.raises(ArkError) as info:
        ark.AgentRuntime(ScriptedModel([]), save_timeout=bad)
    assert info.value.code == "invalid_argument" and "save_timeout" in info.value.message
