"""Child process for the sub-agent kill-and-restore test (tests/memory/test_subagent_restore.py).

Runs a parent whose ``delegate_task`` call hands a task to the ``cleaner`` sub-agent on a
FileStateStorage, until the cleaner waits for approval of ``clear_cache``; prints
``AWAITING <namespaced approval id>`` once both are saved, then blocks until SIGKILL.

Usage: python _subagent_child.py <directory>
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import arknb as ark  # noqa: E402
from tests.memory._subagent_kit import cleaner, delegate  # noqa: E402


async def main(directory: str) -> None:
    folder = Path(directory)
    storage = ark.FileStateStorage(folder)
    model = ark.ScriptedModel([delegate("d1", "cleaner", "Clear the cache in /tmp/cache.")])
    parent = ark.AgentRuntime(model, storage=storage, session_id="boss", subagents=[cleaner(folder, storage)])
    result = await parent.run("Free some disk space.")
    pending = parent.controller.list_pending_approvals()
    if result.stop_reason != "awaiting_approval" or len(pending) != 1:
        print(f"UNEXPECTED {result.stop_reason} {result.error} {pending}", flush=True)
        return
    print(f"AWAITING {pending[0].approval_id}", flush=True)
    await asyncio.Event().wait()  # until SIGKILL


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
