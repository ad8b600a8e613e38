"""An in-doubt call a person marked done stays done (issue 11): its batch pausing again
for another call (one that deferred itself before the crash) carries the person's answer
as settled, not as a denial, so the operation log, the outbox and the history agree that
it ran with the person's result."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections import Counter
from pathlib import Path

import arknb as ark
from arknb.durable import OperationStatus

from ._settled_child import make_tools

CHILD = Path(__file__).with_name("_settled_child.py")


async def _kill_with_one_call_running(tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(CHILD), str(tmp_path), stdout=asyncio.subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])))
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    try:
        assert (await asyncio.wait_for(proc.stdout.readline(), 60)).strip() == b"READY"
        # c1's deferral and c2's result are committed while c3 runs (each commits as it returns).
        while True:
            ops = {op.purpose_key.split(":")[-1]: op for op in await store.list_operations("s1")}
            if all(key in ops and ops[key].phase.rank >= 3 for key in ("c1", "c2")):
                break
            await asyncio.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
        await store.aclose()


async def test_an_in_doubt_call_marked_done_is_not_recorded_as_denied_when_its_batch_pauses_again(tmp_path):
    await _kill_with_one_call_running(tmp_path)
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    runtime = await ark.AgentRuntime.restore("s1", storage=store, model=ark.ScriptedModel(["All done."]),
                                             tools=make_tools(tmp_path, first_process=False))
    [doubt] = runtime.controller.list_in_doubt()
    assert doubt.tool_call.id == "c3"
    await runtime.controller.mark_done(doubt.operation_id, "slow finished (checked by hand)")
    # The batch pauses again: c1 deferred itself before the crash, and a person decides it.
    await asyncio.wait_for(runtime.current_run.wait(), 30)
    [item] = runtime.controller.list_pending_approvals()
    assert item.tool_call.id == "c1"
    await runtime.controller.approve(item.approval_id)
    result = await asyncio.wait_for(runtime.current_run.wait(), 30)
    assert result.stop_reason == "completed"

    answers = {m.tool_call_id: m.text for m in runtime.history if m.role == "tool"}
    assert answers == {"c1": "staged change applied", "c2": "noted", "c3": "slow finished (checked by hand)"}
    # Each ran once before the crash; only the approved c1 ran again.
    assert Counter((tmp_path / "effects.log").read_text().split()) == {"stage": 2, "note": 1, "slow": 1}
    ops = {op.purpose_key.split(":")[-1]: op for op in await store.list_operations("s1") if op.kind == "tool_call"}
    assert ops["c3"].completed and ops["c3"].status is OperationStatus.SUCCEEDED
    assert ops["c3"].result_source == "person"
    events = await store.read_events("s1")
    denied = [e for e in events if e.type == ark.EventTypes.TOOL_DENIED]
    assert denied == [], [e.payload for e in denied]
    settled = [e for e in events if e.type == ark.EventTypes.TOOL_AFTER and e.payload.get("settled_by") == "person"]
    assert [e.payload["call"]["id"] for e in settled] == ["c3"]
    await runtime.aclose()
    await store.aclose()
