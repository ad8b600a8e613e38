"""A parent closed with its sub-agents (DESIGN §14 "Lifecycle"): closed while a child runs,
the delegation suspends with the child and continues after a restore in a new process,
with no tool executed twice; closed while a child waits for approval, no child keeps its
session's lease, so another process restores the parent while the first one is still alive."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import arknb as ark
from arknb import ScriptedTurn

from ..runtime._approval_kit import run_until_line
from ._subagent_kit import call, cleaner, effects, open_store, worker

CHILD = Path(__file__).with_name("_subagent_close_child.py")


async def _restore_worker(tmp_path: Path, kind: str):
    """The store and the parent restored in this process, the worker's script continuing
    from its second turn (the first ran in the killed process)."""
    storage = open_store(kind, tmp_path)
    rest = [ScriptedTurn(tool_calls=[call("w2", "work", n=2)]), "Worked twice."]
    parent = await ark.AgentRuntime.restore("boss", storage=storage, model=ark.ScriptedModel(["All done."]),
                                            subagents=[worker(tmp_path, storage, rest)])
    return storage, parent


async def _assert_worked_twice(tmp_path: Path, storage, parent: ark.AgentRuntime, result) -> None:
    """Both runs completed, each ``work`` ran once, the task was given once, no call unanswered."""
    assert result.stop_reason == "completed" and result.text == "All done."
    assert effects(tmp_path, "work.log") == ["work 1", "work 2"]  # each once
    assert {m.tool_call_id: m.text for m in parent.state.history if m.role == "tool"} == {"d1": "Worked twice."}
    child = await storage.load("boss.worker.1")
    assert child.last_stop_reason == "completed" and not child.is_running
    assert [m.text for m in child.history if m.role == "user"] == ["Work twice."]  # the task once
    asked = [c.id for m in child.history for c in m.tool_calls]
    assert asked == [m.tool_call_id for m in child.history if m.role == "tool"] == ["w1", "w2"]


@pytest.mark.parametrize("kind", ["file", "sqlite"])
async def test_a_kernel_shutdown_during_a_delegation_suspends_it_and_a_restore_continues_the_child(
        tmp_path, kind) -> None:
    """Kernel shutdown closes the parent and its running child at once. The child suspends
    at its checkpoint; the parent's call is no answer ("the sub-agent did not finish") but a
    pause a person continues; approved after a restore, the child resumes where it stopped."""
    line = run_until_line(CHILD, str(tmp_path), kind, "shutdown", prefix="CLOSED ")
    assert line.split()[1:] == ["awaiting_approval", "suspended"]
    assert effects(tmp_path, "work.log") == ["work 1"]

    storage, parent = await _restore_worker(tmp_path, kind)
    try:
        saved = parent.state
        assert [m.tool_call_id for m in saved.history if m.role == "tool"] == []  # d1 was not answered
        [item] = parent.controller.list_pending_approvals()
        assert item.kind == "subagent" and item.tool_call.name == "delegate_task" and "suspended" in item.reason
        await asyncio.sleep(0)  # a restore continues nothing by itself: a person decides
        assert parent.current_run is None and parent.controller.list_pending_approvals() == [item]
        decided = await parent.controller.approve(item.approval_id)
        assert decided.ok and decided.all_decided
        result = await asyncio.wait_for(parent.current_run.wait(), 60)
        await _assert_worked_twice(tmp_path, storage, parent, result)
        if kind == "sqlite":
            operations = await storage.list_operations("boss.worker.1")
            assert sorted(o.purpose_key.rsplit(":", 1)[1] for o in operations if o.kind == "tool_call") == ["w1", "w2"]
            assert all(o.completed for o in operations)
    finally:
        await parent.aclose()
        if kind == "sqlite":
            await storage.aclose()


@pytest.mark.parametrize("kind", ["file", "sqlite"])
async def test_resume_continues_a_parent_closed_during_a_delegation_in_a_new_process(tmp_path, kind) -> None:
    """DESIGN §14 "Lifecycle": a closed session is saved resumable with ``resume()``. The
    kernel shut down while the child worked; restored in a new process, new input is
    refused with the way forward, and ``resume()`` (no person decides anything) continues
    the child where it stopped and then the parent, with no tool run twice."""
    line = run_until_line(CHILD, str(tmp_path), kind, "shutdown", prefix="CLOSED ")
    assert line.split()[1:] == ["awaiting_approval", "suspended"]

    storage, parent = await _restore_worker(tmp_path, kind)
    try:
        with pytest.raises(ark.ArkError, match=r"suspended while its sub-agent \(worker\) worked.*runtime\.resume\(\)"):
            await parent.run("Something else.")
        result = await asyncio.wait_for(parent.resume(), 60)
        await _assert_worked_twice(tmp_path, storage, parent, result)
        [record] = parent.state.resolved_approvals
        assert record.decision == "approved"  # recorded as any decision is
        with pytest.raises(ark.ArkError) as nothing:
            await parent.resume()
        assert nothing.value.code == "nothing_to_resume"
    finally:
        await parent.aclose()
        if kind == "sqlite":
            await storage.aclose()


async def test_resume_leaves_a_delegation_whose_child_waits_for_a_person_to_that_person(tmp_path) -> None:
    """Only a pause that waits for nobody is continued by ``resume()``: a child waiting for
    its own approval keeps the parent's item for a person, and ``resume()`` says so."""
    storage = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    parent = ark.AgentRuntime(ark.ScriptedModel([ScriptedTurn(tool_calls=[call(
        "d1", "delegate_task", agent="cleaner", task="Clear the cache in /tmp/cache.")])]),
        storage=storage, session_id="boss", subagents=[cleaner(tmp_path, storage)])
    try:
        result = await parent.run("Free some disk space.")
        assert result.stop_reason == "awaiting_approval"
        [item] = parent.controller.list_pending_approvals()
        with pytest.raises(ark.ArkError, match="a sub-agent waits for approvals") as refused:
            await parent.resume()
        assert refused.value.code == "pending_approval_blocks_input"
        assert parent.controller.list_pending_approvals() == [item] and effects(tmp_path) == []
    finally:
        await parent.aclose()
        await storage.aclose()


@pytest.mark.parametrize("mode", ["paused", "held"])
async def test_a_parent_restored_while_its_first_process_lives_gets_its_childs_session_too(tmp_path, mode) -> None:
    """``paused``: the first process closed the parent (aclose), so its child's lease is
    free too. ``held``: it did not, and the parent is restored with ``takeover=True``,
    which takes the child's session as well (its lease was the old owner's claim too)."""
    proc = subprocess.Popen([sys.executable, str(CHILD), str(tmp_path), "sqlite", mode],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    storage = None
    parent = None
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith(("CLOSED " if mode == "paused" else "HELD ")), \
            f"child said {line!r}; stderr:\n{proc.stderr.read()}"
        approval_id = line.split()[1]
        assert proc.poll() is None  # the first process is still alive
        storage = open_store("sqlite", tmp_path)
        parent = await ark.AgentRuntime.restore(
            "boss", storage=storage, model=ark.ScriptedModel(["The cleaner freed the space."]),
            subagents=[cleaner(tmp_path, storage, ["The cache at /tmp/cache is cleared."])],
            takeover=mode == "held")
        assert [i.approval_id for i in parent.controller.list_pending_approvals()] == [approval_id]
        assert (await parent.controller.approve(approval_id)).ok
        result = await asyncio.wait_for(parent.current_run.wait(), 60)
        assert result.stop_reason == "completed" and effects(tmp_path) == ["cleared /tmp/cache"]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        proc.stdout.close()
        proc.stderr.close()
        if parent is not None:
            await parent.aclose()
        if storage is not None:
            await storage.aclose()


async def test_aclose_of_a_parent_suspends_its_running_child_and_pauses_the_delegation(tmp_path) -> None:
    storage = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    working = asyncio.Event()
    release = asyncio.Event()

    async def on_work(n: int) -> None:
        working.set()
        await release.wait()

    agent = worker(tmp_path, storage, on_work=on_work)
    parent = ark.AgentRuntime(ark.ScriptedModel([ScriptedTurn(tool_calls=[call("d1", "delegate_task", agent="worker",
                                                                               task="Work twice.")])]),
                              storage=storage, session_id="boss", subagents=[agent])
    try:
        handle = parent.start("Get the work done.")
        await working.wait()
        closing = asyncio.ensure_future(parent.aclose(grace=30))
        await asyncio.sleep(0.05)
        release.set()  # the child's tool returns: the child's checkpoint, then the parent's
        result = await asyncio.wait_for(closing, 60)
        assert result.stop_reason == "awaiting_approval" and (await handle.wait()).stop_reason == "awaiting_approval"
        assert effects(tmp_path, "work.log") == ["work 1"]  # the child's second turn waits for the restore
        child = await storage.load("boss.worker.1")
        assert child.is_running and child.last_stop_reason == "suspended"
        saved = await storage.load("boss")
        [item] = saved.pending_approval.items
        assert item.kind == "subagent" and item.detail["suspended"] is True
    finally:
        await parent.aclose()
        await storage.aclose()


async def test_load_refuses_a_takeover_that_is_not_a_bool() -> None:
    runtime = ark.AgentRuntime(ark.ScriptedModel(["hi"]), session_id="s")
    with pytest.raises(ark.ArkError, match="takeover must be a bool"):
        await runtime.load(takeover="yes")
    assert not runtime.loaded


@pytest.mark.parametrize("kind", ["file", "sqlite"])
async def test_a_delegation_killed_between_the_childs_tool_and_its_next_model_call_reruns_nothing(tmp_path, kind):
    """SIGKILL after the child's first tool returned, before its next model call answered:
    restored, the delegation continues the child's own run (never the task from the start),
    and the finished tool never runs again."""
    run_until_line(CHILD, str(tmp_path), kind, "between", prefix="BETWEEN")
    assert effects(tmp_path, "work.log") == ["work 1"]
    storage, parent = await _restore_worker(tmp_path, kind)
    try:
        if kind == "file":
            # Nothing records what started: the delegation is in doubt; rerun continues the child.
            [doubt] = parent.controller.list_in_doubt()
            assert doubt.tool_call.name == "delegate_task"
            assert (await parent.controller.rerun(doubt.operation_id)).ok
            result = await asyncio.wait_for(parent.current_run.wait(), 60)
        else:
            assert parent.controller.list_in_doubt() == []  # delegate_task is idempotent
            result = await asyncio.wait_for(parent.resume(), 60)
        await _assert_worked_twice(tmp_path, storage, parent, result)
    finally:
        await parent.aclose()
        if kind == "sqlite":
            await storage.aclose()
