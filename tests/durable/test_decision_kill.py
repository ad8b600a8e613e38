"""A kill while a person's in-doubt decision is saved, or while the rerun they chose runs
(issue 11): a decision counts once it is saved with the state, in one commit with the
operation's record of it, so a restore finds both or neither; a rerun killed again is
put to the person once more, as its second attempt, and the first is never asked about
again nor run silently."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

import arknb as ark
from arknb.durable import OperationPhase, OperationStatus

from .test_crash_recovery import counts, crash, effects, finish, restore, tool_answers

CHILD = Path(__file__).with_name("_decision_kill_child.py")


async def _decide_then_kill(tmp_path: Path, kind: str, point: str, resolution: str) -> None:
    """Restore in a child, decide the in-doubt call, SIGKILL it at ``point``."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(CHILD), kind, str(tmp_path), point, resolution,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
    finally:
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
    assert line.decode().strip() == f"READY {point}", (line, (await proc.stderr.read()).decode()[-2000:])


async def _decide(runtime: ark.AgentRuntime, operation_id: str, resolution: str) -> ark.ApprovalDecisionResult:
    if resolution == "rerun":
        return await runtime.controller.rerun(operation_id)
    if resolution == "done":
        return await runtime.controller.mark_done(operation_id, "slow 2 done (checked by hand)")
    return await runtime.controller.mark_failed(operation_id, "slow 2 failed (checked by hand)")


_ANSWER = {"rerun": "slow 2 done", "done": "slow 2 done (checked by hand)", "failed": "slow 2 failed (checked by hand)"}
_STATUS = {"rerun": OperationStatus.SUCCEEDED, "done": OperationStatus.SUCCEEDED, "failed": OperationStatus.FAILED}


@pytest.mark.parametrize(("kind", "first", "second"), [
    ("sqlite", "done", "failed"), ("sqlite", "rerun", "done"), ("sqlite", "failed", "rerun"),
    ("postgres", "rerun", "failed")])
async def test_a_decision_killed_before_its_save_is_not_taken_and_the_person_decides_again(tmp_path, request, kind,
                                                                                          first, second):
    if kind == "postgres":
        (tmp_path / "dsn").write_text(request.getfixturevalue("pg_dsn"))
    await crash(tmp_path, kind, "one_done_one_running")
    await _decide_then_kill(tmp_path, kind, "decision_save", first)
    store, _, runtime = await restore(tmp_path, kind, ["Both finished."])
    [item] = runtime.controller.list_in_doubt()
    assert item.tool_call.id == "c2" and item.attempts == 1
    # The operation agrees with the state: still in doubt, no decision recorded.
    op = await store.get_operation(item.operation_id)
    assert op.in_doubt and op.phase is OperationPhase.EXECUTING and op.result_source is None

    decided = await _decide(runtime, item.operation_id, second)
    assert decided.ok and decided.all_decided, decided.error
    assert (await finish(runtime)).stop_reason == "completed"
    assert tool_answers(runtime) == {"c1": "fast 1 done", "c2": _ANSWER[second]}
    assert counts(tmp_path) == {"fast": 1, "slow": 2 if second == "rerun" else 1}
    op = await store.get_operation(item.operation_id)
    assert op.completed and op.status is _STATUS[second]
    assert op.result_source == (None if second == "rerun" else "person")
    await runtime.aclose()
    await store.aclose()


async def test_a_decision_whose_save_the_store_refuses_leaves_the_call_in_doubt_for_another_decision(tmp_path):
    from arknb.domain import ArkError, ErrorCode, ErrorLayer, Retryability

    await crash(tmp_path, "sqlite", "one_done_one_running")
    store, _, runtime = await restore(tmp_path, "sqlite", ["Both finished."])
    [item] = runtime.controller.list_in_doubt()
    commit, refused = store.commit, []

    async def full_disk_once(change):
        if change.state is not None and not refused:
            refused.append(change)
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_SAVE_FAILED, "the disk is full; nothing was written",
                           Retryability.CONDITIONAL)
        return await commit(change)

    store.commit = full_disk_once
    failed = await runtime.controller.mark_done(item.operation_id, "slow 2 done (checked by hand)")
    assert not failed.ok and failed.error.code == "state_save_failed"
    assert [op.operation_id for op in refused[0].operations] == [item.operation_id]  # one commit with the state
    assert (await store.get_operation(item.operation_id)).in_doubt  # nothing of it was written
    assert [i.operation_id for i in runtime.controller.list_in_doubt()] == [item.operation_id]

    assert (await runtime.controller.mark_failed(item.operation_id, "slow 2 failed (checked by hand)")).ok
    assert (await finish(runtime)).stop_reason == "completed"
    assert tool_answers(runtime)["c2"] == "slow 2 failed (checked by hand)"
    op = await store.get_operation(item.operation_id)
    assert op.completed and op.status is OperationStatus.FAILED and op.result_source == "person"
    assert counts(tmp_path) == {"fast": 1, "slow": 1}
    await runtime.aclose()
    await store.aclose()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_rerun_killed_again_is_put_to_the_person_once_as_its_second_attempt(tmp_path, request, kind):
    if kind == "postgres":
        (tmp_path / "dsn").write_text(request.getfixturevalue("pg_dsn"))
    await crash(tmp_path, kind, "one_done_one_running")
    await _decide_then_kill(tmp_path, kind, "rerun_running", "rerun")
    assert counts(tmp_path) == {"fast": 1, "slow": 2}
    store, _, runtime = await restore(tmp_path, kind, ["Both finished."])
    [item] = runtime.controller.list_in_doubt()
    assert item.tool_call.id == "c2" and item.attempts == 2
    op = await store.get_operation(item.operation_id)
    assert op.in_doubt and [(a.number, a.outcome, a.complete) for a in op.attempts] == [
        (1, "rerun approved", False), (2, None, False)]
    # The outbox asked about attempt 1 once and about attempt 2 once; c1 was never asked about.
    asked = [(e.payload["call"]["id"], e.payload["attempts"]) for e in await store.read_events("s1")
             if e.type == ark.EventTypes.OPERATION_IN_DOUBT]
    assert asked == [("c2", 1), ("c2", 2)]

    assert (await runtime.controller.mark_done(item.operation_id, "slow 2 done (checked by hand)")).ok
    assert (await finish(runtime)).stop_reason == "completed"
    assert tool_answers(runtime) == {"c1": "fast 1 done", "c2": "slow 2 done (checked by hand)"}
    assert counts(tmp_path) == {"fast": 1, "slow": 2}  # the person's answer, no third run
    op = await store.get_operation(item.operation_id)
    assert op.completed and op.status is OperationStatus.SUCCEEDED and op.result_source == "person"
    assert [a.complete for a in op.attempts] == [False, True] and op.attempts[-1].outcome == "settled by person"
    assert runtime.controller.list_in_doubt() == []
    ops = [o for o in await store.list_operations("s1") if not o.completed]
    assert ops == []
    await runtime.aclose()
    await store.aclose()


async def test_an_idempotent_call_killed_again_in_its_new_attempt_runs_once_more_with_the_same_key(tmp_path):
    await crash(tmp_path, "sqlite", "one_done_one_running", idempotent=True)
    await _decide_then_kill(tmp_path, "sqlite", "resumed_running", "rerun")
    store, _, runtime = await restore(tmp_path, "sqlite", ["Both finished."], idempotent=True)
    assert runtime.controller.list_in_doubt() == []  # nobody is asked, after either kill
    assert (await asyncio.wait_for(runtime.resume(), 30)).stop_reason == "completed"
    assert tool_answers(runtime) == {"c1": "fast 1 done", "c2": "slow 2 done"}
    keys = {key for tool, _, key in effects(tmp_path) if tool == "slow"}
    assert counts(tmp_path) == {"fast": 1, "slow": 3} and len(keys) == 1
    [op] = [o for o in await store.list_operations("s1") if o.purpose_key.endswith(":c2")]
    assert op.completed and op.status is OperationStatus.SUCCEEDED
    assert [(a.number, a.outcome, a.complete) for a in op.attempts] == [
        (1, "interrupted", False), (2, "interrupted", False), (3, "ok", True)]
    assert [e for e in await store.read_events("s1") if e.type == ark.EventTypes.OPERATION_IN_DOUBT] == []
    await runtime.aclose()
    await store.aclose()


async def test_an_idempotent_call_whose_attempts_a_crash_cut_short_three_times_goes_to_a_person(tmp_path):
    # A tool that takes the process down would otherwise be run, and kill it, on every restore.
    from arknb.durable._pipeline import RECOVERY_LIMIT

    await crash(tmp_path, "sqlite", "one_done_one_running", idempotent=True)
    for _ in range(RECOVERY_LIMIT - 1):
        await _decide_then_kill(tmp_path, "sqlite", "resumed_running", "rerun")
    store, _, runtime = await restore(tmp_path, "sqlite", ["Both finished."], idempotent=True)
    [item] = runtime.controller.list_in_doubt()
    assert item.tool_call.id == "c2" and counts(tmp_path) == {"fast": 1, "slow": RECOVERY_LIMIT}
    [op] = [o for o in await store.list_operations("s1") if o.purpose_key.endswith(":c2")]
    assert op.in_doubt and len(op.attempts) == RECOVERY_LIMIT
    # The person's rerun runs it once more, and it finishes.
    assert (await runtime.controller.rerun(item.operation_id)).ok
    assert (await asyncio.wait_for(runtime.current_run.wait(), 30)).stop_reason == "completed"
    assert tool_answers(runtime) == {"c1": "fast 1 done", "c2": "slow 2 done"}
    assert counts(tmp_path) == {"fast": 1, "slow": RECOVERY_LIMIT + 1}
    await runtime.aclose()
    await store.aclose()
