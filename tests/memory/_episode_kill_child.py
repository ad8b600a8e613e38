"""Child process of the episode kill tests (tests/memory/test_episode_restore.py).

One run ("What is the answer?" -> "The answer is 42.") on ``<store>`` (``file`` or
``sqlite``) with episodic memory kept in that store, killed at ``<point>``:

* ``summarizing``: after the run's terminal save, while its episode's summary is written;
* ``added``: after the episode was added, before anything saved that it was.

Prints ``READY <point>`` there and blocks until SIGKILL.

Usage: python _episode_kill_child.py <directory> <store> <point>
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import arknb as ark  # noqa: E402
from tests.memory._subagent_kit import open_store  # noqa: E402


class _HangAfterAdd:
    """An episode store that blocks once an episode is kept."""

    def __init__(self, inner) -> None:
        self.inner = inner

    async def add(self, episode) -> None:
        await self.inner.add(episode)
        print("READY added", flush=True)
        await asyncio.Event().wait()  # until SIGKILL

    async def episodes(self, start: int = 0):
        return await self.inner.episodes(start)


async def main(directory: str, kind: str, point: str) -> None:
    storage = open_store(kind, Path(directory))

    def summarize(messages) -> str:
        if point == "summarizing":
            print("READY summarizing", flush=True)
            time.sleep(3600)  # until SIGKILL
        return "Asked for the answer; it is 42."

    memory = ark.EpisodicMemory(storage, summarize=summarize)
    if point == "added":
        memory = ark.EpisodicMemory(_HangAfterAdd(memory.store), summarize=summarize)
    runtime = ark.AgentRuntime(ark.ScriptedModel(["The answer is 42."]), storage=storage, session_id="s",
                               memory=memory)
    result = await runtime.run("What is the answer?")
    print(f"UNEXPECTED {result.stop_reason} {result.error}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
