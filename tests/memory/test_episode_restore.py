"""Episodic memory across SIGKILL: a run killed after its terminal save, before or after
its episode was written, is remembered exactly once once the session is restored."""

from __future__ import annotations

from pathlib import Path

import pytest

import arknb as ark
from arknb import EventTypes
from arknb.memory import run_episode_id

from ..runtime._approval_kit import run_until_line
from ._subagent_kit import open_store

CHILD = Path(__file__).with_name("_episode_kill_child.py")


async def _restore_and_count(tmp_path: Path, kind: str, times: int = 2) -> list:
    """Restore the session ``times`` times (a new runtime each) and return its episodes."""
    storage = open_store(kind, tmp_path)
    try:
        for _ in range(times):
            memory = ark.EpisodicMemory(storage)
            runtime = await ark.AgentRuntime.restore("s", storage=storage, model=ark.ScriptedModel(["hi"]),
                                                     memory=memory)
            assert runtime.state.last_stop_reason == "completed"
            await runtime.aclose()
        return await ark.EpisodicMemory(storage).episodes()
    finally:
        if kind == "sqlite":
            await storage.aclose()


@pytest.mark.parametrize("kind", ["file", "sqlite"])
@pytest.mark.parametrize("point", ["summarizing", "added"])
async def test_a_run_killed_around_its_episode_is_remembered_exactly_once(tmp_path, kind, point) -> None:
    run_until_line(CHILD, str(tmp_path), kind, point, prefix=f"READY {point}")
    storage = open_store(kind, tmp_path)
    try:
        saved = await storage.load("s")
        kept = await ark.EpisodicMemory(storage).episodes()
    finally:
        if kind == "sqlite":
            await storage.aclose()
    assert saved.last_stop_reason == "completed" and not saved.is_running  # the terminal save was made
    assert len(kept) == (0 if point == "summarizing" else 1)  # killed before / after the episode was kept

    episodes = await _restore_and_count(tmp_path, kind)
    [episode] = episodes  # once: recorded on the first restore, or kept from before the kill
    assert episode.run_id == saved.current_run_id and episode.session_id == "s"
    assert episode.episode_id == run_episode_id("s", saved.current_run_id)
    assert episode.input == "What is the answer?" and episode.answer == "The answer is 42."


async def test_a_restore_that_cannot_record_the_missing_episode_still_restores_and_says_why(tmp_path) -> None:
    run_until_line(CHILD, str(tmp_path), "file", "summarizing", prefix="READY summarizing")
    storage = open_store("file", tmp_path)

    def failing(messages) -> str:
        raise RuntimeError("the summarizer is down")

    memory = ark.EpisodicMemory(storage, summarize=failing)
    seen = []
    runtime = ark.AgentRuntime(ark.ScriptedModel(["hi"]), storage=storage, session_id="s", memory=memory)
    runtime.bus.subscribe(EventTypes.HOOK_DIAGNOSTIC, seen.append)
    await runtime.load()
    assert runtime.state.last_stop_reason == "completed"
    assert await memory.episodes() == []
    [diagnostic] = seen
    assert "could not record the episode" in diagnostic.payload["message"]
    assert "the summarizer is down" in diagnostic.payload["message"]
    # The next restore tries again (nothing said it was recorded).
    [episode] = await _restore_and_count(tmp_path, "file", times=1)
    assert episode.answer == "The answer is 42."
