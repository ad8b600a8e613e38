"""Restore across a real process boundary (seed 000 §8, checklist §14 "审批与可恢复")."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

import arknb as ark
from arknb import ArkError, EventTypes, ScriptedTurn

from ._approval_kit import EventLog, Tools, assert_history_paired, call, dangerous_turn, kill_when_awaiting
from ._restore_child import open_storage

CHILD = Path(__file__).with_name("_restore_child.py")


def _run_child_until_awaiting(backend: str, directory: Path, session_id: str) -> str:
    """Start the child, wait for its AWAITING line, SIGKILL it; return the approval id."""
    return kill_when_awaiting(CHILD, backend, directory, session_id, session_id=session_id)


@pytest.fixture(scope="module", params=["file", "sqlite"])
def _killed_template(request, tmp_path_factory):
    """One child run per module and backend (an interpreter start costs seconds); tests get copies."""
    directory = tmp_path_factory.mktemp(f"killed-{request.param}")
    return request.param, directory, _run_child_until_awaiting(request.param, directory, "killed-demo")


@pytest.fixture
async def killed_session(_killed_template, tmp_path):
    """A session a killed process left waiting for approval: (storage, directory, session_id,
    approval_id). The copy includes SQLite's write-ahead log, as a crash leaves it."""
    backend, template, approval_id = _killed_template
    directory = tmp_path / "sessions"
    shutil.copytree(template, directory)
    storage = open_storage(backend, directory)
    yield storage, directory, "killed-demo", approval_id
    if isinstance(storage, ark.SQLiteStore):
        await storage.aclose()


def _restored_tools() -> Tools:
    return Tools()  # the same tool names as the child, recording here


async def test_pending_approval_survives_process_kill(killed_session):
    storage, directory, session_id, approval_id = killed_session
    assert not (directory / "ran_in_child.log").exists()  # zero side effects before the decision
    saved = await storage.load(session_id)
    assert saved.pending_approval is not None and saved.is_running and not saved.not_resumable

    tools = _restored_tools()
    model = ark.ScriptedModel(["The cache is cleared."])  # starts at the continuation turn
    runtime = await ark.AgentRuntime.restore(session_id, storage=storage, model=model, tools=tools.all,
                                             system_prompt="Be careful.")
    log = EventLog(runtime)

    [item] = runtime.controller.list_pending_approvals()
    assert item.approval_id == approval_id and item.tool_call.name == "clear_cache"
    assert item.tool_call.arguments == {"path": "/tmp/cache"}
    with pytest.raises(ArkError) as info:
        runtime.start("something else")
    assert info.value.code == "pending_approval_blocks_input"

    decided = await runtime.controller.approve(approval_id)
    assert decided.ok and decided.all_decided
    result = await asyncio.wait_for(runtime.current_run.wait(), 10)

    assert result.stop_reason == "completed" and result.text == "The cache is cleared."
    assert tools.ran == [("clear_cache", "/tmp/cache")]
    [request] = model.requests
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "tool"]
    assert request.messages[-1].tool_call_id == "c1" and "cleared /tmp/cache" in request.messages[-1].text
    assert log.types()[:4] == [EventTypes.STATE_PERSISTED, EventTypes.APPROVAL_DECIDED,
                               EventTypes.APPROVAL_RESOLVED, EventTypes.AGENT_RESUMED]
    assert log.events[0].sequence > saved.event_sequence  # numbering continues after the old process
    final = await storage.load(session_id)
    assert final.pending_approval is None and final.last_stop_reason == "completed" and not final.is_running
    assert_history_paired(final.history)


async def test_restored_runtime_can_deny(killed_session):
    storage, _, session_id, approval_id = killed_session
    tools = _restored_tools()
    model = ark.ScriptedModel(["Fine, I left the cache alone."])
    runtime = await ark.AgentRuntime.restore(session_id, storage=storage, model=model, tools=tools.all)

    decided = await runtime.controller.deny(approval_id, "the cache is still in use")
    result = await asyncio.wait_for(runtime.current_run.wait(), 10)

    assert decided.ok and decided.decision == "denied"
    assert result.stop_reason == "completed" and tools.ran == []
    answer = model.requests[0].messages[-1]
    assert answer.role == "tool" and answer.is_error and "the cache is still in use" in answer.text
    assert (await storage.load(session_id)).pending_approval is None


async def test_restore_keeps_partial_decisions(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    turn = ScriptedTurn(tool_calls=[call("c1", "clear_cache", path="/a"), call("c2", "drop_table", 1, table="t")])
    first = ark.AgentRuntime(ark.ScriptedModel([turn]), tools=Tools().all, storage=storage, session_id="partial")
    await first.run("go")
    a, b = first.controller.list_pending_approvals()
    await first.controller.deny(a.approval_id, "no")

    tools = Tools()
    runtime = await ark.AgentRuntime.restore("partial", storage=storage, model=ark.ScriptedModel(["ok"]),
                                             tools=tools.all)
    assert [i.approval_id for i in runtime.controller.list_pending_approvals()] == [b.approval_id]
    again = await runtime.controller.approve(a.approval_id)
    assert again.ok and again.decision == "denied"  # the decision made before the restart stands
    await runtime.controller.approve(b.approval_id)
    assert (await runtime.current_run).stop_reason == "completed"
    assert tools.ran == [("drop_table", "t")]


async def test_restore_of_unknown_session_is_a_clear_error(tmp_path):
    with pytest.raises(ArkError) as info:
        await ark.AgentRuntime.restore("nobody", storage=ark.FileStateStorage(tmp_path),
                                       model=ark.ScriptedModel([]))
    assert info.value.layer == "storage" and "nobody" in info.value.message


async def test_not_resumable_session_refuses_resume(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    runtime = ark.AgentRuntime(ark.ScriptedModel([dangerous_turn()]), tools=Tools().all, storage=storage,
                               session_id="broken")
    await runtime.run("go")
    await storage.mark_not_resumable("broken")

    restored = await ark.AgentRuntime.restore("broken", storage=storage, model=ark.ScriptedModel(["x"]),
                                              tools=Tools().all)
    with pytest.raises(ArkError) as info:
        await restored.resume()
    assert info.value.code == "not_resumable" and info.value.layer == "storage"


async def test_not_resumable_session_refuses_approval(tmp_path):
    """A decision on a pending batch continues the run: a not-resumable session refuses it
    and nothing of the batch runs."""
    storage = ark.FileStateStorage(tmp_path)
    runtime = ark.AgentRuntime(ark.ScriptedModel([dangerous_turn()]), tools=Tools().all, storage=storage,
                               session_id="broken")
    await runtime.run("go")
    await storage.mark_not_resumable("broken")
    tools = Tools()
    restored = await ark.AgentRuntime.restore("broken", storage=storage, model=ark.ScriptedModel(["x"]),
                                              tools=tools.all)
    [item] = restored.controller.list_pending_approvals()

    decided = await restored.controller.approve(item.approval_id)

    assert not decided.ok and decided.error.code == "not_resumable" and decided.error.layer == "storage"
    assert restored.current_run is None and tools.ran == []
