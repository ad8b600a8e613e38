"""A decision the runtime announced survives a SIGKILL right after (issue 10 item 3).

``approval.decided`` is published (and ``approve`` answers ok) only after the mandatory
save: a child process approves, prints the moment ``approval.decided`` reaches a
listener, and is killed at once; a new process finds the decision on disk.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import arknb as ark
from arknb import ScriptedTurn

from ._approval_kit import Tools, assert_history_paired, call, dangerous_turn
from ._restore_child import open_storage

CHILD = Path(__file__).with_name("_decide_child.py")


async def _decide_in_a_child_and_kill_it(backend: str, directory: Path, session_id: str) -> str:
    proc = await asyncio.create_subprocess_exec(sys.executable, str(CHILD), backend, str(directory), session_id,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode().strip()
    finally:
        proc.send_signal(signal.SIGKILL)  # at once: nothing after the announcement gets to run on purpose
        await proc.wait()
    stderr = (await proc.stderr.read()).decode()
    assert line.startswith("DECIDED "), f"child said {line!r}; stderr:\n{stderr}"
    assert proc.returncode == -signal.SIGKILL
    return line.split()[1]


@pytest.mark.parametrize("backend", ["file", "sqlite"])
async def test_a_decision_announced_before_a_kill_is_on_disk(backend, tmp_path):
    storage = open_storage(backend, tmp_path)
    turn = ScriptedTurn(tool_calls=[call("c1", "clear_cache", path="/tmp/cache"), call("c2", "drop_table", 1, table="t")])
    runtime = ark.AgentRuntime(ark.ScriptedModel([turn]), tools=Tools().all, storage=storage, session_id="k")
    await runtime.run("clean up")
    first, second = runtime.controller.list_pending_approvals()
    await runtime.aclose()  # a durable store: the session's lease goes to the child
    if isinstance(storage, ark.SQLiteStore):
        await storage.aclose()

    decided = await _decide_in_a_child_and_kill_it(backend, tmp_path, "k")

    assert decided == first.approval_id
    storage = open_storage(backend, tmp_path)
    tools = Tools()
    restored = await ark.AgentRuntime.restore("k", storage=storage, model=ark.ScriptedModel(["Done."]),
                                              tools=tools.all)
    assert [i.approval_id for i in restored.controller.list_pending_approvals()] == [second.approval_id]
    assert restored.state.pending_approval.find(first.approval_id).decision == "approved"
    assert (await restored.controller.approve(second.approval_id)).ok
    assert (await restored.current_run).stop_reason == "completed"
    assert sorted(tools.names()) == ["clear_cache", "drop_table"]
    if isinstance(storage, ark.SQLiteStore):
        await storage.aclose()


@pytest.mark.parametrize("backend", ["file", "sqlite"])
async def test_a_final_decision_announced_before_a_kill_consumed_its_batch(backend, tmp_path):
    storage = open_storage(backend, tmp_path)
    runtime = ark.AgentRuntime(ark.ScriptedModel([dangerous_turn()]), tools=Tools().all, storage=storage,
                               session_id="k")
    await runtime.run("clean up")
    [item] = runtime.controller.list_pending_approvals()
    await runtime.aclose()  # a durable store: the session's lease goes to the child
    if isinstance(storage, ark.SQLiteStore):
        await storage.aclose()

    assert await _decide_in_a_child_and_kill_it(backend, tmp_path, "k") == item.approval_id

    storage = open_storage(backend, tmp_path)
    tools = Tools()
    restored = await ark.AgentRuntime.restore("k", storage=storage, model=ark.ScriptedModel(["Resumed."]),
                                              tools=tools.all)
    state = restored.state
    # Never offered (and so never run) a second time; a call the kill caught running is in doubt.
    assert state.pending_approval is None or state.pending_approval.kind == "in_doubt"
    assert [(r.approval_id, r.decision) for r in state.resolved_approvals] == [(item.approval_id, "approved")]
    late = await restored.controller.approve(item.approval_id)
    assert late.error.code == "approval_already_resolved" and late.decision == "approved"
    ran_in_child = (tmp_path / "ran_in_child.log").read_text().split() if (tmp_path / "ran_in_child.log").exists() else []
    if state.is_running:  # the kill interrupted the continued run: finish it (an open call is paired)
        assert (await _finish_interrupted(restored)).stop_reason == "completed"
    # The call ran at most once: in the child, or (an approved call the kill caught before it
    # started, which a durable store can tell) here; a call caught running is in doubt.
    assert len(tools.ran) + len(ran_in_child) <= 1
    assert_history_paired((await storage.load("k")).history)
    if isinstance(storage, ark.SQLiteStore):
        await storage.aclose()


async def _finish_interrupted(runtime: ark.AgentRuntime) -> ark.AgentRunResult:
    """Continue a run the kill interrupted. A call that may have run in the killed child is
    in doubt (DESIGN §13): a person says it failed, and the run goes on."""
    if not runtime.controller.list_in_doubt():
        result = await runtime.resume()
        if result.stop_reason != "awaiting_approval":
            return result
    for doubt in runtime.controller.list_in_doubt():
        assert (await runtime.controller.mark_failed(doubt.operation_id, "killed with the child process")).ok
    return await runtime.current_run
