"""Child process for the compression crash test (tests/memory/test_compress_restore.py).

A runtime on ``SQLiteStore`` with a small ``ContextCompressor`` budget talks for three
runs; in the fourth its model call is compressed first (the summarize function logs each
call to ``summaries.log``) and then asks for a dangerous tool. Once the pending approval
is saved it prints ``AWAITING <session> <approval id>`` and blocks until SIGKILL.

With ``hang`` as the second argument the summariser of the fourth run prints
``SUMMARIZING`` and blocks instead (killed in the middle of the compression).

Usage: python _compress_child.py <directory> [hang]
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import arknb as ark  # noqa: E402
from tests.memory._compress_kit import SESSION, compressor, opening_turns, tools  # noqa: E402


async def main(directory: str, hang: bool) -> None:
    folder = Path(directory)
    store = ark.SQLiteStore(folder / "arknb.sqlite3")
    runtime = ark.AgentRuntime(ark.ScriptedModel(opening_turns()), storage=store, session_id=SESSION,
                               tools=tools(folder), compressor=compressor(folder, hang=hang))
    for i in range(4):
        result = await runtime.run(f"question{i} " + "ipsum " * 20)
    pending = runtime.controller.list_pending_approvals()
    if result.stop_reason != "awaiting_approval" or len(pending) != 1 or not runtime.state.context_summaries:
        print(f"UNEXPECTED {result.stop_reason} {result.error} {pending} {runtime.state.context_summaries}",
              flush=True)
        return
    print(f"AWAITING {SESSION} {pending[0].approval_id}", flush=True)
    await asyncio.Event().wait()  # until SIGKILL


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:] == ["hang"]))
