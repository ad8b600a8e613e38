"""SIGKILL recovery (DESIGN §13's table, issue 11 item 3): an agent runs in a child
process, is killed at a chosen point, and is restored here; each tool's executions are
counted in a side-effect file the tools append to (fsynced) in every process."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections import Counter
from pathlib import Path

import pytest

import arknb as ark
from arknb.durable import OperationPhase, OperationStatus

from ._crash_child import make_tools, open_store

CHILD = Path(__file__).with_name("_crash_child.py")


async def crash(tmp_path: Path, kind: str, point: str, *, idempotent: bool = False) -> None:
    """Run the child until it reports ``point``, then SIGKILL it."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(CHILD), kind, str(tmp_path), "s1", point, *(["idempotent"] if idempotent else []),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
        assert line.decode().strip() == f"READY {point}", (line, (await proc.stderr.read()).decode()[-2000:])
    finally:
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
    assert proc.returncode == -signal.SIGKILL


def effects(tmp_path: Path) -> list[tuple[str, str, str]]:
    path = tmp_path / "effects.log"
    if not path.exists():
        return []
    return [tuple(line.split(" ")) for line in path.read_text().splitlines()]


def counts(tmp_path: Path) -> Counter:
    return Counter(tool for tool, _, _ in effects(tmp_path))


async def restore(tmp_path: Path, kind: str, turns: list, *, idempotent: bool = False):
    store = open_store(kind, tmp_path)
    model = ark.ScriptedModel(turns)
    runtime = await ark.AgentRuntime.restore("s1", storage=store, model=model,
                                             tools=make_tools(tmp_path, idempotent=idempotent))
    return store, model, runtime


async def finish(runtime: ark.AgentRuntime) -> ark.AgentRunResult:
    handle = runtime.current_run
    assert handle is not None, "the run did not continue"
    return await asyncio.wait_for(handle.wait(), 30)


def tool_answers(runtime: ark.AgentRuntime) -> dict[str, str]:
    return {m.tool_call_id: m.text for m in runtime.history if m.role == "tool"}


# -- SQLiteStore: every row of the recovery table -------------------------------------------


async def test_killed_with_one_tool_finished_and_one_running_the_finished_one_never_runs_again(tmp_path):
    await crash(tmp_path, "sqlite", "one_done_one_running")
    assert counts(tmp_path) == {"fast": 1, "slow": 1}
    store, model, runtime = await restore(tmp_path, "sqlite", ["Both finished."])
    # The running call is in doubt at once; the finished one is not.
    [item] = runtime.controller.list_in_doubt()
    assert item.tool_call.name == "slow" and item.attempts == 1 and item.started_at is not None
    ops = {op.purpose_key.split(":")[-1]: op for op in await store.list_operations("s1")}
    assert ops["c1"].phase is OperationPhase.COMPLETED and ops["c2"].status is OperationStatus.INDETERMINATE
    with pytest.raises(ark.ArkError) as err:
        runtime.start("something else")
    assert err.value.code == "pending_approval_blocks_input"

    decided = await runtime.controller.mark_done(item.operation_id, "slow 2 done (checked by hand)")
    assert decided.ok and decided.all_decided
    result = await finish(runtime)
    assert result.stop_reason == "completed" and result.text == "Both finished."
    assert counts(tmp_path) == {"fast": 1, "slow": 1}  # nothing ran twice
    assert tool_answers(runtime) == {"c1": "fast 1 done", "c2": "slow 2 done (checked by hand)"}
    op = await store.get_operation(item.operation_id)
    assert op.completed and op.status is OperationStatus.SUCCEEDED and op.result_source == "person"
    await runtime.aclose()
    await store.aclose()


async def test_killed_while_an_earlier_call_runs_a_later_call_that_finished_never_runs_again(tmp_path):
    """The later call (c2, ``fast``) finishes first; with no after_tool_call hook its
    response phase waits for the earlier call's, and its result must be committed before
    it waits, not only in memory: after the kill it is reused, and only c1 is in doubt."""
    await crash(tmp_path, "sqlite", "later_done_earlier_running")
    assert counts(tmp_path) == {"fast": 1, "slow": 1}
    store, model, runtime = await restore(tmp_path, "sqlite", ["Both finished."])
    [item] = runtime.controller.list_in_doubt()
    assert item.tool_call.name == "slow" and item.tool_call.id == "c1"

    await runtime.controller.mark_done(item.operation_id, "slow 1 done (checked by hand)")
    result = await finish(runtime)
    assert result.stop_reason == "completed" and result.text == "Both finished."
    assert counts(tmp_path) == {"fast": 1, "slow": 1}  # the finished call did not run again
    assert tool_answers(runtime) == {"c1": "slow 1 done (checked by hand)", "c2": "fast 2 done"}
    ops = {op.purpose_key.split(":")[-1]: op for op in await store.list_operations("s1")}
    assert ops["c2"].completed and ops["c2"].status is OperationStatus.SUCCEEDED and ops["c2"].result_source is None
    await runtime.aclose()
    await store.aclose()


async def test_a_restored_call_whose_result_was_saved_is_announced_done_and_its_card_is_not_interrupted(tmp_path):
    """c2's result was committed (raw_saved) before the kill; the restored batch continues
    its response phase without running it. The outbox announces it (tool.after, reused)
    after the restored batch's tool.before, so a chat replaying the outbox shows it done
    with the answer the model got, never "interrupted"."""
    from arknb.widgets._transcript import Transcript

    await crash(tmp_path, "sqlite", "later_done_earlier_running")
    store, model, runtime = await restore(tmp_path, "sqlite", ["Both finished."])
    [item] = runtime.controller.list_in_doubt()
    await runtime.controller.mark_done(item.operation_id, "slow 1 done (checked by hand)")
    assert (await finish(runtime)).stop_reason == "completed"
    events = await store.read_events("s1")
    c2 = [(e.type, e.payload.get("reused", False)) for e in events
          if e.type in (ark.EventTypes.TOOL_BEFORE, ark.EventTypes.TOOL_AFTER) and e.payload["call"]["id"] == "c2"]
    # Announced when it ran, then once more as the restored batch answered it, never again run.
    assert c2 == [("tool.before", False), ("tool.after", False), ("tool.before", False), ("tool.after", True)]
    transcript = Transcript()
    for event in events:
        transcript.apply(event)
    cards = {e["call_id"]: (e["status"], e["result"]) for e in transcript.current_entries() if e["kind"] == "tool"}
    assert cards == {"c1": ("done", "slow 1 done (checked by hand)"), "c2": ("done", "fast 2 done")}
    await runtime.aclose()
    await store.aclose()


async def test_an_in_doubt_call_a_person_reruns_runs_again_with_the_same_idempotency_key(tmp_path):
    await crash(tmp_path, "sqlite", "one_done_one_running")
    store, _, runtime = await restore(tmp_path, "sqlite", ["Both finished."])
    [item] = runtime.controller.list_in_doubt()
    assert (await runtime.controller.rerun(item.operation_id)).ok
    assert (await finish(runtime)).stop_reason == "completed"
    slow_runs = [e for e in effects(tmp_path) if e[0] == "slow"]
    assert counts(tmp_path) == {"fast": 1, "slow": 2} and slow_runs[0][2] == slow_runs[1][2] == slow_runs[0][2]
    assert tool_answers(runtime)["c2"] == "slow 2 done"
    await runtime.aclose()
    await store.aclose()


async def test_deciding_an_operation_that_is_not_in_doubt_is_refused_as_not_in_doubt(tmp_path):
    """DESIGN §13's two errors: ``operation_not_in_doubt`` for an operation of the session
    that is not (or no longer) in doubt, ``operation_not_found`` for an id it has none of;
    and the paused run's error says how an in-doubt call is decided."""
    await crash(tmp_path, "sqlite", "one_done_one_running")
    store, _, runtime = await restore(tmp_path, "sqlite", ["Both finished."])
    try:
        assert runtime.state.last_error.code == "awaiting_approval"
        assert "rerun, mark_done or mark_failed" in runtime.state.last_error.message
        [item] = runtime.controller.list_in_doubt()
        operations = await store.list_operations("s1")
        finished = next(o for o in operations if o.kind == "model_call" and o.completed)
        for decide in (lambda i: runtime.controller.rerun(i), lambda i: runtime.controller.mark_done(i, "ok"),
                       lambda i: runtime.controller.mark_failed(i, "no")):
            refused = await decide(finished.operation_id)
            assert not refused.ok and refused.error.code == "operation_not_in_doubt"
            assert "succeeded" in refused.error.message and "list_in_doubt" in refused.error.message
        unknown = await runtime.controller.rerun("op_0123456789abcdef0123")
        assert not unknown.ok and unknown.error.code == "operation_not_found"
        assert (await runtime.controller.mark_done(item.operation_id, "slow 2 done")).ok
        assert (await finish(runtime)).stop_reason == "completed"
        again = await runtime.controller.mark_failed(item.operation_id, "changed my mind")
        assert not again.ok and again.error.code == "operation_not_in_doubt"  # decided, and its run went on
        assert counts(tmp_path) == {"fast": 1, "slow": 1}
    finally:
        await runtime.aclose()
        await store.aclose()


async def test_an_interrupted_idempotent_tool_runs_again_with_the_same_key_and_no_person(tmp_path):
    await crash(tmp_path, "sqlite", "one_done_one_running", idempotent=True)
    store, _, runtime = await restore(tmp_path, "sqlite", ["Both finished."], idempotent=True)
    assert runtime.controller.list_in_doubt() == []
    result = await asyncio.wait_for(runtime.resume(), 30)
    assert result.stop_reason == "completed"
    slow_runs = [e for e in effects(tmp_path) if e[0] == "slow"]
    assert counts(tmp_path) == {"fast": 1, "slow": 2}
    assert slow_runs[0][2] == slow_runs[1][2] and slow_runs[0][2].endswith(":c2")
    await runtime.aclose()
    await store.aclose()


async def test_killed_before_the_batch_every_call_runs_once_after_restore(tmp_path):
    await crash(tmp_path, "sqlite", "before_batch")
    assert counts(tmp_path) == {}
    store, _, runtime = await restore(tmp_path, "sqlite", ["Both finished."])
    assert runtime.controller.list_in_doubt() == []  # no call had begun: nothing is in doubt
    result = await asyncio.wait_for(runtime.resume(), 30)
    assert result.stop_reason == "completed"
    assert counts(tmp_path) == {"fast": 1, "slow": 1}
    await runtime.aclose()
    await store.aclose()


async def test_killed_in_a_tool_response_hook_no_tool_runs_again(tmp_path):
    await crash(tmp_path, "sqlite", "after_tool_hook")
    assert counts(tmp_path) == {"fast": 1, "slow": 1}
    store, _, runtime = await restore(tmp_path, "sqlite", ["Both finished."])
    assert runtime.controller.list_in_doubt() == []
    result = await asyncio.wait_for(runtime.resume(), 30)
    assert result.stop_reason == "completed" and counts(tmp_path) == {"fast": 1, "slow": 1}
    assert tool_answers(runtime) == {"c1": "fast 1 done", "c2": "slow 2 done"}
    await runtime.aclose()
    await store.aclose()


async def test_killed_during_a_model_stream_the_call_gets_a_new_attempt(tmp_path):
    await crash(tmp_path, "sqlite", "model_stream")
    store, model, runtime = await restore(tmp_path, "sqlite", _script())
    result = await asyncio.wait_for(runtime.resume(), 30)
    assert result.stop_reason == "completed" and counts(tmp_path) == {"fast": 1, "slow": 1}
    [first] = [op for op in await store.list_operations("s1") if op.purpose_key.endswith(":turn1")]
    assert [(a.number, a.complete) for a in first.attempts] == [(1, False), (2, True)]
    assert first.attempts[0].outcome == "interrupted"
    await runtime.aclose()
    await store.aclose()


async def test_killed_in_a_model_response_hook_the_model_is_not_asked_again(tmp_path):
    await crash(tmp_path, "sqlite", "after_model_hook")
    store, model, runtime = await restore(tmp_path, "sqlite", ["Both finished."])  # turn 2 only
    result = await asyncio.wait_for(runtime.resume(), 30)
    assert result.stop_reason == "completed", result.error
    assert len(model.requests) == 1  # turn 1's saved response went through the hooks, not the model
    assert counts(tmp_path) == {"fast": 1, "slow": 1}
    await runtime.aclose()
    await store.aclose()


async def test_killed_between_the_model_commit_and_the_state_save_the_response_is_reused(tmp_path):
    await crash(tmp_path, "sqlite", "between_commits")
    store, model, runtime = await restore(tmp_path, "sqlite", ["Both finished."])
    saved = await store.load("s1")
    assert [m.role for m in saved.history] == ["user"]  # the state save never happened
    result = await asyncio.wait_for(runtime.resume(), 30)
    assert result.stop_reason == "completed" and len(model.requests) == 1
    assert counts(tmp_path) == {"fast": 1, "slow": 1}
    await runtime.aclose()
    await store.aclose()


# -- file store: no operations, so every unanswered call goes to a person ------------------------


async def test_with_a_file_store_unanswered_calls_are_in_doubt_never_answered_unknown(tmp_path):
    await crash(tmp_path, "file", "tool_started")
    assert counts(tmp_path) == {"fast": 1, "slow": 1}
    store, _, runtime = await restore(tmp_path, "file", ["Both finished."])
    items = runtime.controller.list_in_doubt()
    assert sorted(i.tool_call.name for i in items) == ["fast", "slow"]
    assert all(i.started_at is None for i in items)
    for item in items:
        await runtime.controller.mark_done(item.operation_id, f"{item.tool_call.name} checked")
    result = await finish(runtime)
    assert result.stop_reason == "completed" and counts(tmp_path) == {"fast": 1, "slow": 1}
    assert not any("unknown" in text for text in tool_answers(runtime).values())


def _script():
    from ._crash_child import script
    return script()


# -- PostgresStore: the same recovery ---------------------------------------------------------


async def test_on_postgres_a_finished_tool_never_runs_again_and_the_running_one_is_in_doubt(tmp_path, pg_dsn):
    (tmp_path / "dsn").write_text(pg_dsn)
    await crash(tmp_path, "postgres", "one_done_one_running")
    store, _, runtime = await restore(tmp_path, "postgres", ["Both finished."])
    [item] = runtime.controller.list_in_doubt()
    assert item.tool_call.name == "slow"
    assert (await runtime.controller.mark_failed(item.operation_id, "the mail bounced")).ok
    result = await finish(runtime)
    assert result.stop_reason == "completed" and counts(tmp_path) == {"fast": 1, "slow": 1}
    answers = tool_answers(runtime)
    assert answers["c1"] == "fast 1 done" and answers["c2"] == "the mail bounced"
    [answer] = [m for m in runtime.history if m.role == "tool" and m.tool_call_id == "c2"]
    assert answer.is_error
    await runtime.aclose()
    await store.aclose()
