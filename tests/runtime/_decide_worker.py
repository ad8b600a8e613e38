"""Worker process for the two-process decision race (tests/runtime/test_decision_race.py).

Long-lived, so a trial costs a restore and a decision rather than an interpreter start.
It reads one command per line on stdin and answers one line on stdout:

- ``prepare <file|sqlite> <directory> <session_id>``: restore the session (a run paused
  for approval) into a new runtime and load it; answers ``ready <approval_id>``.
- ``go``: approve that approval; when the decision took effect, wait for the run it
  continued. Answers ``result ok <stop_reason>`` or ``result refused <error code>``.
- ``quit``.

The dangerous tool appends ``<session_id> <pid>`` to ``<directory>/effects.log``: the
parent counts the lines, so a call that ran twice cannot hide.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import arknb as ark


def open_storage(backend: str, directory: str) -> ark.StateStorage:
    """The storage the parent opens too (as in _restore_child.py)."""
    if backend == "sqlite":
        return ark.SQLiteStore(Path(directory) / "state.sqlite3")
    return ark.FileStateStorage(directory)


def _tool(effects: Path, session_id: str):
    @ark.tool(risk="dangerous")
    def clear_cache(path: str) -> str:
        """Delete a cache folder."""
        fd = os.open(effects, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{session_id} {os.getpid()}\n".encode())
        finally:
            os.close(fd)
        return f"cleared {path}"

    return clear_cache


async def main() -> None:
    loop = asyncio.get_running_loop()
    stores: dict[tuple[str, str], ark.StateStorage] = {}
    runtime = approval_id = None
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).split()
        if not line or line[0] == "quit":
            break
        if line[0] == "prepare":
            backend, directory, session_id = line[1:]
            storage = stores.get((backend, directory))
            if storage is None:
                storage = stores[(backend, directory)] = open_storage(backend, directory)
            if runtime is not None:
                await runtime.aclose()  # the last trial's session: its lease is given up
            try:
                runtime = await ark.AgentRuntime.restore(
                    session_id, storage=storage, model=ark.ScriptedModel(["The cache is cleared."]),
                    tools=[_tool(Path(directory) / "effects.log", session_id)])
            except ark.ArkError as exc:
                if exc.code != "session_locked":
                    raise
                runtime = None  # the other worker holds the session's lease (a durable store)
                print("ready locked", flush=True)
                continue
            [item] = runtime.controller.list_pending_approvals()
            approval_id = item.approval_id
            print(f"ready {approval_id}", flush=True)
        elif line[0] == "go":
            if runtime is None:
                print("result refused session_locked", flush=True)
                continue
            decided = await runtime.controller.approve(approval_id)
            if decided.ok and decided.all_decided:
                result = await runtime.current_run
                print(f"result ok {result.stop_reason}", flush=True)
            else:
                print(f"result refused {decided.error.code if decided.error else 'none'}", flush=True)
    for storage in stores.values():
        if isinstance(storage, ark.SQLiteStore):
            await storage.aclose()


if __name__ == "__main__":
    asyncio.run(main())
