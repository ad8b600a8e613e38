"""A thread on SQLiteStore survives a server restart between the interrupt and the resume.

Real server processes: the first is SIGKILLed while the approval is open; a new one on the
same database takes the resume; the side effect is counted in a file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from ._kit import approve, interrupts, post, run_input, types, user

CHILD = Path(__file__).with_name("_server_child.py")


def start(db: Path, folder: Path) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(CHILD.parents[2]),
                                                                      os.environ.get("PYTHONPATH")]))}
    process = subprocess.Popen([sys.executable, str(CHILD), str(db), str(folder)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env)
    url = process.stdout.readline().strip()
    if not url:
        process.kill()
        raise AssertionError(f"the server did not start: {process.stderr.read()}")
    return process, url


def kill(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    process.stdout.close()
    process.stderr.close()


async def test_an_interrupt_is_resumed_after_the_server_process_was_killed(tmp_path):
    db, log = tmp_path / "threads.sqlite3", tmp_path / "ran.txt"
    first, url = start(db, tmp_path)
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            events = await post(client, url, run_input("thread-1", "r1", user("clean up")))
    finally:
        kill(first)  # no clean shutdown: the pending approval must already be on disk
    [interrupt] = interrupts(events)
    assert not log.exists()

    second, url = start(db, tmp_path)
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            resumed = await post(client, url, run_input("thread-1", "r2", resume=[approve(interrupt["id"])]))
            assert types(resumed)[1] == "MESSAGES_SNAPSHOT"  # the thread is known to the new process
            assert resumed[-1]["type"] == "RUN_FINISHED" and resumed[-1]["outcome"]["type"] == "success"
            assert resumed[-1]["result"]["text"] == "Cleared it."
            assert log.read_text().splitlines() == ["clear_cache /tmp/cache"]

            again = await post(client, url, run_input("thread-1", "r3", resume=[approve(interrupt["id"])]))
            assert again[-1]["type"] == "RUN_ERROR" and again[-1]["code"] == "approval_already_resolved"
    finally:
        kill(second)
    assert log.read_text().splitlines() == ["clear_cache /tmp/cache"]  # ran exactly once

    third, url = start(db, tmp_path)  # and a third process still knows the decision
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            again = await post(client, url, run_input("thread-1", "r4", resume=[approve(interrupt["id"])]))
        assert again[-1]["code"] == "approval_already_resolved" and "approved" in again[-1]["message"]
    finally:
        kill(third)
    assert log.read_text().splitlines() == ["clear_cache /tmp/cache"]


async def test_an_input_sent_again_after_a_restart_does_not_run_twice(tmp_path):
    db, log = tmp_path / "threads.sqlite3", tmp_path / "ran.txt"
    body = run_input("thread-1", "r1", user("clean up", "u-7"))
    first, url = start(db, tmp_path)
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            [interrupt] = interrupts(await post(client, url, body))
            done = await post(client, url, run_input("thread-1", "r2", resume=[approve(interrupt["id"])]))
            assert done[-1]["result"]["text"] == "Cleared it."
    finally:
        kill(first)  # no clean shutdown: what the thread ran must already be on disk
    assert log.read_text().splitlines() == ["clear_cache /tmp/cache"]

    second, url = start(db, tmp_path)
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            again = await post(client, url, body)  # the client retries its first input
    finally:
        kill(second)
    snapshot = next(e for e in again if e["type"] == "MESSAGES_SNAPSHOT")
    assert again[-1]["type"] == "RUN_FINISHED" and again[-1]["outcome"] == {"type": "success"}
    assert "result" not in again[-1]  # nothing ran: no model call, no new approval (the outcome is success)
    assert [m["role"] for m in snapshot["messages"]].count("user") == 1
    assert log.read_text().splitlines() == ["clear_cache /tmp/cache"]
