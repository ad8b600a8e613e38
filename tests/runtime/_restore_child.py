"""Child process for the kill-and-restore test (tests/runtime/test_restore.py).

Runs a session on the chosen storage until it waits for approval, prints one line
``AWAITING <session_id> <approval_id>``, then blocks until the parent kills it
with SIGKILL: nothing after the mandatory save gets a chance to run.

Usage: python _restore_child.py <file|sqlite> <directory> <session_id>
(``sqlite`` keeps the sessions in ``<directory>/state.sqlite3``).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import arknb as ark


def open_storage(backend: str, directory: str | Path) -> ark.StateStorage:
    """The storage the parent opens too, on the same directory."""
    if backend == "sqlite":
        return ark.SQLiteStore(Path(directory) / "state.sqlite3")
    return ark.FileStateStorage(directory)


async def main(backend: str, directory: str, session_id: str) -> None:
    ran = Path(directory) / "ran_in_child.log"

    @ark.tool(risk="dangerous")
    def clear_cache(path: str) -> str:
        """Delete a cache folder."""
        ran.write_text(path)  # must never happen: the call waits for approval
        return f"cleared {path}"

    model = ark.ScriptedModel([
        ark.ScriptedTurn(text="I will clear it.", tool_calls=[
            ark.ToolCall(id="c1", name="clear_cache", arguments_json=json.dumps({"path": "/tmp/cache"}))]),
    ])
    runtime = ark.AgentRuntime(model, tools=[clear_cache], storage=open_storage(backend, directory),
                               session_id=session_id, system_prompt="Be careful.")
    result = await runtime.run("Clear the cache")
    if result.stop_reason != "awaiting_approval":
        print(f"UNEXPECTED {result.stop_reason} {result.error}", flush=True)
        return
    [item] = runtime.controller.list_pending_approvals()
    print(f"AWAITING {runtime.session_id} {item.approval_id}", flush=True)
    await asyncio.Event().wait()  # until SIGKILL


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
