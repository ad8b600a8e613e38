"""Child process for the kill-after-decision test (tests/runtime/test_decision_kill.py).

Opens a session paused for approval on the chosen storage in a new runtime, and approves
its first pending item. A listener prints ``DECIDED <approval_id>`` the moment
``approval.decided`` is published (what a chat shows as decided), and the process then
blocks until the parent kills it with SIGKILL.

Usage: python _decide_child.py <file|sqlite> <directory> <session_id>
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import arknb as ark


async def main(backend: str, directory: str, session_id: str) -> None:
    storage = (ark.SQLiteStore(Path(directory) / "state.sqlite3") if backend == "sqlite"
               else ark.FileStateStorage(directory))
    ran = Path(directory) / "ran_in_child.log"

    @ark.tool(risk="dangerous")
    def clear_cache(path: str) -> str:
        """Delete a cache folder."""
        with ran.open("a") as log:
            log.write(path + "\n")
        return f"cleared {path}"

    @ark.tool(risk="dangerous")
    def drop_table(table: str) -> str:
        """Drop a table."""
        return f"dropped {table}"

    runtime = ark.AgentRuntime(ark.ScriptedModel(["Done."]), tools=[clear_cache, drop_table], storage=storage,
                               session_id=session_id)
    runtime.bus.subscribe(ark.EventTypes.APPROVAL_DECIDED,
                          lambda event: print(f"DECIDED {event.payload['approval_id']}", flush=True))
    await runtime.load()
    first = runtime.controller.list_pending_approvals()[0]
    await runtime.controller.approve(first.approval_id)
    await asyncio.Event().wait()  # until SIGKILL


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
