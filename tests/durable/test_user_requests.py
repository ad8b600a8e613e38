"""A request type of the user's own gets the same durability as the runtime's calls
(issue 11 item 5): killed while its handler runs, it is in doubt in a new process
unless its handler is idempotent, and a finished one is never run again."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import arknb as ark
from arknb.durable import EventRequest, InvocationBus, OperationStatus

CHILD = Path(__file__).with_name("_bus_child.py")


async def _kill_mid_handler(tmp_path: Path, *args: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(CHILD), str(tmp_path), *args, stdout=asyncio.subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])))
    try:
        assert (await asyncio.wait_for(proc.stdout.readline(), 60)).strip() == b"READY"
    finally:
        proc.send_signal(signal.SIGKILL)
        await proc.wait()


def _bus(tmp_path: Path, *, idempotent: bool):
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    sent = []

    async def send(request: EventRequest):
        sent.append(request.idempotency_key)
        return {"sent": request.payload["to"]}

    bus = InvocationBus(store, session_id="s1", run_id="r2")
    bus.register_handler("email.send", 1, send, idempotent=idempotent)
    return store, bus, sent


async def test_a_user_request_killed_mid_handler_is_in_doubt_and_a_person_settles_it(tmp_path):
    await _kill_mid_handler(tmp_path)
    store, bus, sent = _bus(tmp_path, idempotent=False)
    response = await bus.request(EventRequest("email.send", 1, {"to": "a@example.org"}, "r1:mail"))
    assert response.status == OperationStatus.INDETERMINATE and sent == []
    settled = await bus.settle(response.operation_id, status="succeeded", result={"sent": "checked"})
    again = await bus.request(EventRequest("email.send", 1, {"to": "a@example.org"}, "r1:mail"))
    assert settled.ok and again.result == {"sent": "checked"} and sent == []
    await bus.close()
    await store.aclose()


async def test_an_idempotent_user_request_runs_again_with_the_same_key(tmp_path):
    await _kill_mid_handler(tmp_path)
    store, bus, sent = _bus(tmp_path, idempotent=True)
    response = await bus.request(EventRequest("email.send", 1, {"to": "a@example.org"}, "r1:mail"))
    assert response.ok and response.result == {"sent": "a@example.org"}
    first_key = (tmp_path / "effects.log").read_text().split()[1]
    assert sent == [first_key] == ["s1:r1:mail"]
    await bus.close()
    await store.aclose()


async def test_requests_waiting_for_their_turn_under_a_concurrency_limit_run_after_a_kill_and_no_person_is_asked(
        tmp_path):
    # concurrency=1: killed while the first handler runs, the other two never started.
    await _kill_mid_handler(tmp_path, "limited")
    assert (tmp_path / "effects.log").read_text().split() == ["send", "s1:r1:mail0"]
    store, bus, sent = _bus(tmp_path, idempotent=False)
    waiting = {op.purpose_key: op for op in await store.list_operations("s1")}
    assert all(not waiting[f"r1:mail{i}"].attempts for i in (1, 2))  # no attempt began
    requests = [EventRequest("email.send", 1, {"to": f"{i}@example.org"}, f"r1:mail{i}") for i in range(3)]
    responses = await bus.request_many(requests, concurrency=1)
    # Only the one that ran is in doubt; the two that waited run now, once each, with their keys.
    assert [r.status for r in responses] == [OperationStatus.INDETERMINATE, OperationStatus.SUCCEEDED,
                                             OperationStatus.SUCCEEDED]
    assert sent == ["s1:r1:mail1", "s1:r1:mail2"]
    ops = {op.purpose_key: op for op in await store.list_operations("s1")}
    assert [len(ops[f"r1:mail{i}"].attempts) for i in range(3)] == [1, 1, 1]
    await bus.close()
    await store.aclose()
