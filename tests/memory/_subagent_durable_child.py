"""Child process for the durable sub-agent crash test (tests/memory/test_subagent_restore.py).

A parent on ``<store>`` (``file`` or ``sqlite``) makes one batch of two calls: its own
``count_files`` (safe: it runs at once) and ``delegate_task`` to the ``cleaner``, which
counts the files too (a turn of its own) and then waits for approval of ``clear_cache``.
Once the parent's pending batch and the child's are saved it prints
``AWAITING <namespaced approval id>`` and blocks until SIGKILL.

Usage: python _subagent_durable_child.py <directory> <store>
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import arknb as ark  # noqa: E402
from arknb import ScriptedTurn  # noqa: E402
from tests.memory._subagent_kit import (  # noqa: E402
    call, cleaner, counting_cleaner_turns, effect_tools, open_store,
)


async def main(directory: str, kind: str) -> None:
    folder = Path(directory)
    storage = open_store(kind, folder)
    count_files = effect_tools(folder)[1]
    model = ark.ScriptedModel([ScriptedTurn(tool_calls=[
        call("p0", "count_files", 0, path="/parent"),
        call("d1", "delegate_task", 1, agent="cleaner", task="Clear the cache in /tmp/cache.")])])
    parent = ark.AgentRuntime(model, storage=storage, session_id="boss", tools=[count_files],
                              subagents=[cleaner(folder, storage, counting_cleaner_turns())])
    result = await parent.run("Free some disk space.")
    pending = parent.controller.list_pending_approvals()
    if result.stop_reason != "awaiting_approval" or len(pending) != 1:
        print(f"UNEXPECTED {result.stop_reason} {result.error} {pending}", flush=True)
        return
    print(f"AWAITING {pending[0].approval_id}", flush=True)
    await asyncio.Event().wait()  # until SIGKILL


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
