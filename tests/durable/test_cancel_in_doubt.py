"""Cancelling a restored run whose calls are in doubt once a person decided some of them
(issue 11): what the model is told of each call, its operation and the chat agree — a
call a person marked done or failed keeps the person's answer, and one whose fate is
still unknown (never decided, or a rerun chosen and never started) is recorded
indeterminate, never "failed, not executed"."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections import Counter
from pathlib import Path

import pytest

import arknb as ark
from arknb.durable import OperationStatus

from ._two_doubts_child import make_tools, open_store

CHILD = Path(__file__).with_name("_two_doubts_child.py")
_UNKNOWN = "cancelled while its outcome was unknown"


@pytest.fixture(params=["sqlite", "postgres"])
def kind(request, tmp_path) -> str:
    if request.param == "postgres":
        (tmp_path / "dsn").write_text(request.getfixturevalue("pg_dsn"))
    return request.param


async def _restored_with_two_calls_in_doubt(tmp_path: Path, kind: str):
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(CHILD), kind, str(tmp_path), stdout=asyncio.subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])))
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
    finally:
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
    assert line.strip() == b"READY", line
    store = open_store(kind, tmp_path)
    runtime = await ark.AgentRuntime.restore("s1", storage=store, model=ark.ScriptedModel([]),
                                             tools=make_tools(tmp_path, first_process=False))
    items = {item.tool_call.id: item for item in runtime.controller.list_in_doubt()}
    assert sorted(items) == ["c1", "c2"]
    return store, runtime, items


async def _cancel(runtime: ark.AgentRuntime) -> None:
    assert runtime.cancel()
    assert (await asyncio.wait_for(runtime.current_run.wait(), 30)).stop_reason == "cancelled"


def _told(runtime) -> dict[str, str]:
    return {m.tool_call_id: m.text for m in runtime.history if m.role == "tool"}


async def _cards(store) -> dict[str, str]:
    from arknb.widgets._transcript import Transcript

    transcript = Transcript()
    for event in await store.read_events("s1"):
        transcript.apply(event)
    return {e["call_id"]: e["status"] for e in transcript.entries if e["kind"] == "tool"}


async def _ops(store) -> dict:
    return {op.purpose_key.split(":")[-1]: op for op in await store.list_operations("s1") if op.kind == "tool_call"}


async def test_cancelled_after_a_rerun_was_chosen_the_call_stays_in_doubt_in_its_record(tmp_path, kind):
    store, runtime, items = await _restored_with_two_calls_in_doubt(tmp_path, kind)
    assert (await runtime.controller.rerun(items["c1"].operation_id)).ok  # c2 still waits: nothing runs
    await _cancel(runtime)

    told = _told(runtime)
    assert told["c1"].startswith(_UNKNOWN) and told["c2"].startswith(_UNKNOWN)
    ops = await _ops(store)
    # Attempt 1 of each may have run; no second one began: the fate of both is unknown.
    assert {key: (op.completed, op.status) for key, op in ops.items()} == {
        "c1": (True, OperationStatus.INDETERMINATE), "c2": (True, OperationStatus.INDETERMINATE)}
    assert Counter((tmp_path / "effects.log").read_text().split("\n")) == {"send 1": 1, "send 2": 1, "": 1}
    # The chat replaying the outbox says the same: neither card is "not executed".
    assert await _cards(store) == {"c1": "interrupted", "c2": "interrupted"}
    await runtime.aclose()
    await store.aclose()


@pytest.mark.parametrize("resolution", ["done", "failed"])
async def test_cancelled_after_a_call_was_marked_the_model_gets_the_persons_answer(tmp_path, kind, resolution):
    store, runtime, items = await _restored_with_two_calls_in_doubt(tmp_path, kind)
    if resolution == "done":
        decided = await runtime.controller.mark_done(items["c1"].operation_id, "sent 1 (seen in the outbox)")
    else:
        decided = await runtime.controller.mark_failed(items["c1"].operation_id, "bounced (seen in the outbox)")
    assert decided.ok and not decided.all_decided
    await _cancel(runtime)

    told = _told(runtime)
    assert told["c1"] == ("sent 1 (seen in the outbox)" if resolution == "done" else "bounced (seen in the outbox)")
    assert told["c2"].startswith(_UNKNOWN)
    [answer] = [m for m in runtime.history if m.role == "tool" and m.tool_call_id == "c1"]
    assert answer.is_error is (resolution == "failed")
    ops = await _ops(store)
    expected = OperationStatus.SUCCEEDED if resolution == "done" else OperationStatus.FAILED
    assert ops["c1"].completed and ops["c1"].status is expected and ops["c1"].result_source == "person"
    assert ops["c2"].completed and ops["c2"].status is OperationStatus.INDETERMINATE
    assert await _cards(store) == {"c1": "done" if resolution == "done" else "error", "c2": "interrupted"}
    await runtime.aclose()
    await store.aclose()
