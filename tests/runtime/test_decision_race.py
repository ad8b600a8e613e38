"""Two processes decide one saved approval: exactly one runs the call (issue 10 item 1).

Two long-lived worker processes (``_decide_worker.py``) restore the same paused session
per trial, then approve it on one "go" sent to both at once. The compare-and-swap of
the store (file: a lock file around read-compare-replace; SQLite: ``BEGIN IMMEDIATE``)
lets exactly one decision take effect; the other worker gets ``state_conflict`` (or
``approval_already_resolved``) and runs nothing. Side effects are counted in a file.
``ARKNB_DECISION_TRIALS`` sets the number of trials per store (default 50).
"""

from __future__ import annotations

import asyncio
import collections
import os
import subprocess
import sys
from pathlib import Path

import pytest

import arknb as ark

from ._approval_kit import Tools, dangerous_turn
from ._restore_child import open_storage

WORKER = Path(__file__).with_name("_decide_worker.py")
TRIALS = int(os.environ.get("ARKNB_DECISION_TRIALS", "50"))
_ANSWER_TIMEOUT = 60.0  # seconds a worker may take for one answer on a loaded machine


class Worker:
    """One worker process, spoken to line by line."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    async def answer(self) -> list[str]:
        line = await asyncio.wait_for(asyncio.to_thread(self.proc.stdout.readline), _ANSWER_TIMEOUT)
        if not line:
            raise AssertionError(f"worker {self.proc.pid} ended: {self.proc.stderr.read()}")
        return line.split()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.send("quit")
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            stream.close()


@pytest.fixture(scope="module")
def workers():
    pair = [Worker(), Worker()]
    yield pair
    for worker in pair:
        worker.close()


async def _pause_session(storage, session_id: str) -> str:
    """A session paused for approval of one dangerous call; returns the approval id."""
    runtime = ark.AgentRuntime(ark.ScriptedModel([dangerous_turn()]), tools=Tools().all, storage=storage,
                               session_id=session_id)
    assert (await runtime.run("Clear the cache")).stop_reason == "awaiting_approval"
    [item] = runtime.controller.list_pending_approvals()
    await runtime.aclose()  # a durable store: the session's lease is free for the workers
    return item.approval_id


@pytest.mark.parametrize("backend", ["file", "sqlite"])
async def test_two_processes_deciding_one_saved_approval_run_the_call_exactly_once(workers, backend, tmp_path):
    directory = tmp_path / backend
    directory.mkdir()
    storage = open_storage(backend, directory)
    tally: collections.Counter = collections.Counter()
    try:
        for trial in range(TRIALS):
            session_id = f"trial-{trial}"
            approval_id = await _pause_session(storage, session_id)
            for worker in workers:
                worker.send(f"prepare {backend} {directory} {session_id}")
            readies = [await worker.answer() for worker in workers]
            # On a durable store the worker that restores second finds the lease held: session_locked.
            assert ["ready", approval_id] in readies
            assert all(r in (["ready", approval_id], ["ready", "locked"]) for r in readies), readies
            for worker in workers:
                worker.send("go")
            results = [await worker.answer() for worker in workers]

            outcomes = sorted(" ".join(result[1:]) for result in results)
            tally.update(outcomes)
            assert outcomes[0] == "ok completed", f"trial {trial}: {results}"
            assert outcomes[1] in ("refused state_conflict", "refused approval_already_resolved",
                                   "refused session_locked"), results
            final = await storage.load(session_id)
            assert final.pending_approval is None and final.last_stop_reason == "completed"
    finally:
        if isinstance(storage, ark.SQLiteStore):
            await storage.aclose()

    effects = collections.Counter(line.split()[0] for line in (directory / "effects.log").read_text().splitlines())
    assert effects == {f"trial-{trial}": 1 for trial in range(TRIALS)}  # one side effect per trial, never two
    assert tally["ok completed"] == TRIALS
    print(f"\n{backend}: {TRIALS} two-process trials: {dict(tally)}; side effects {sum(effects.values())}")
