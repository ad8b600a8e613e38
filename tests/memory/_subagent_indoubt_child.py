"""Child process for the in-doubt sub-agent crash test (tests/memory/test_subagent_restore.py).

A parent on ``<store>`` delegates an upload to the ``uploader`` sub-agent, whose
``upload`` tool prints ``UPLOADING`` once it started and blocks until SIGKILL.

Usage: python _subagent_indoubt_child.py <directory> <store>
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import arknb as ark  # noqa: E402
from arknb import ScriptedTurn  # noqa: E402
from tests.memory._subagent_kit import call, delegate, open_store, uploader  # noqa: E402


async def main(directory: str, kind: str) -> None:
    folder = Path(directory)
    storage = open_store(kind, folder)
    child_turns = [ScriptedTurn(tool_calls=[call("u1", "upload", filename="report.pdf")])]
    parent = ark.AgentRuntime(ark.ScriptedModel([delegate("d1", "uploader", "Upload report.pdf.")]),
                              storage=storage, session_id="boss",
                              subagents=[uploader(folder, storage, child_turns, hang=True)])
    result = await parent.run("Upload the report.")
    print(f"UNEXPECTED {result.stop_reason} {result.error}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
