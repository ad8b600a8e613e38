"""Child process for the sub-agent kill-and-restore tests (tests/memory/test_subagent_restore.py).

Runs a parent whose ``delegate_task`` call hands a task to the ``cleaner`` sub-agent on
``<store>`` (``file``, the default, or ``sqlite``), until the cleaner waits for approval of
``clear_cache``; prints ``AWAITING <namespaced approval id>`` once both are saved, then
blocks until SIGKILL. With ``sibling`` the parent's batch also holds its own
``count_files`` call (it runs at once) and the cleaner counts the files in a turn of its
own before it asks to clear them.

Usage: python _subagent_child.py <directory> [<store> [sibling]]
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import arknb as ark  # noqa: E402
from arknb import ScriptedTurn  # noqa: E402
from tests.memory._subagent_kit import (  # noqa: E402
    call, cleaner, counting_cleaner_turns, delegate, effect_tools, open_store,
)


async def main(directory: str, kind: str, sibling: bool) -> None:
    folder = Path(directory)
    storage = open_store(kind, folder)
    if sibling:
        model = ark.ScriptedModel([ScriptedTurn(tool_calls=[
            call("p0", "count_files", 0, path="/parent"),
            call("d1", "delegate_task", 1, agent="cleaner", task="Clear the cache in /tmp/cache.")])])
        parent = ark.AgentRuntime(model, storage=storage, session_id="boss", tools=[effect_tools(folder)[1]],
                                  subagents=[cleaner(folder, storage, counting_cleaner_turns())])
    else:
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
    args = sys.argv[1:]
    asyncio.run(main(args[0], args[1] if len(args) > 1 else "file", args[2:3] == ["sibling"]))
