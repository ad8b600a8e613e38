"""Episodic memory (DESIGN §14): episodes at the end of completed runs, found again by
keyword or embedding, across sessions, in a file or a SQLite store."""

from __future__ import annotations

import json
import os

import pytest

import arknb as ark
from arknb import EventTypes, ScriptedModel, ScriptedTurn, ToolCall
from arknb.memory import (
    RETRIEVE_MEMORY, DurableEpisodeStore, Episode, JsonlEpisodeStore, MemoryEpisodeStore, SQLiteEpisodeStore,
)

from ..runtime._events_kit import of, record


async def test_a_completed_run_is_recorded_as_an_episode_with_its_input_and_answer(tmp_path) -> None:
    memory = ark.EpisodicMemory(tmp_path / "memory")
    runtime = ark.AgentRuntime(ScriptedModel(["The deploy script is scripts/deploy.sh."]), session_id="s1",
                               memory=memory)
    events = record(runtime)
    result = await runtime.run("Where is the deploy script?")
    episodes = await memory.episodes()
    assert len(episodes) == 1
    episode = episodes[0]
    assert (episode.session_id, episode.run_id) == ("s1", result.run_id)
    assert episode.summary == "User: Where is the deploy script?\nAssistant: The deploy script is scripts/deploy.sh."
    assert episode.created_at > 0
    assert (tmp_path / "memory" / "episodes.jsonl").exists()
    recorded = of(events, EventTypes.MEMORY_RECORDED)
    assert [e.payload["episode_id"] for e in recorded] == [episode.episode_id]


async def test_runs_that_do_not_complete_are_not_remembered(tmp_path) -> None:
    @ark.tool(risk="dangerous")
    def wipe() -> str:
        """Wipe it."""
        return "wiped"

    memory = ark.EpisodicMemory(MemoryEpisodeStore())
    model = ScriptedModel([ScriptedTurn(tool_calls=[ToolCall(id="w1", name="wipe")]), "Wiped."])
    runtime = ark.AgentRuntime(model, tools=[wipe], memory=memory)
    paused = await runtime.run("wipe everything")
    assert paused.stop_reason == "awaiting_approval" and await memory.episodes() == []
    await runtime.controller.approve_all()
    done = await runtime.current_run.wait()
    assert done.stop_reason == "completed"
    [episode] = await memory.episodes()
    # The episode spans the run from its input, across the approval pause, to the answer.
    assert episode.input == "wipe everything" and episode.answer == "Wiped."


async def test_retrieve_memory_finds_an_episode_of_another_session(tmp_path) -> None:
    memory = ark.EpisodicMemory(tmp_path / "memory")
    first = ark.AgentRuntime(ScriptedModel(["Noted: the staging database is db-stage-7.",
                                            "Lunch is at noon."]), session_id="monday", memory=memory)
    await first.run("Remember that the staging database is db-stage-7.")
    await first.run("When is lunch?")
    question = ScriptedTurn(tool_calls=[ToolCall(id="r1", name=RETRIEVE_MEMORY,
                                                 arguments_json=json.dumps({"query": "staging database"}))])
    second_model = ScriptedModel([question, "It is db-stage-7."])
    # A new memory object over the same folder: what a second notebook (or kernel) does.
    second = ark.AgentRuntime(second_model, session_id="tuesday", memory=ark.EpisodicMemory(tmp_path / "memory"))
    result = await second.run("Which staging database did we use?")
    assert result.text == "It is db-stage-7."
    answer = second.state.history[2]
    assert answer.role == "tool" and "session monday" in answer.text and "db-stage-7" in answer.text
    assert "Lunch" not in answer.text  # the other episode does not match the query
    assert RETRIEVE_MEMORY in [t.name for t in second_model.requests[0].tools]


async def test_keyword_scoring_ranks_the_matching_episode_first() -> None:
    memory = ark.EpisodicMemory(MemoryEpisodeStore())
    for i, (asked, answered) in enumerate([("How do I rotate the API keys?", "Use vault rotate."),
                                           ("What is the capital of France?", "Paris."),
                                           ("部署脚本在哪里？", "在 scripts/deploy.sh。")]):
        await memory.record(session_id="s", run_id=f"r{i}",
                            messages=[ark.AgentMessage.user(asked), ark.AgentMessage.assistant(answered)])
    hits = await memory.retrieve("rotate keys")
    assert [h.episode.run_id for h in hits] == ["r0"]
    assert [h.episode.run_id for h in await memory.retrieve("部署脚本")] == ["r2"]
    assert await memory.retrieve("unrelated words") == []


async def test_with_an_embed_function_episodes_rank_by_cosine_similarity() -> None:
    axes = {"cat": (1.0, 0.0, 0.0), "dog": (0.0, 1.0, 0.0), "car": (0.0, 0.0, 1.0)}
    calls: list[str] = []

    async def embed(text: str) -> list[float]:
        calls.append(text)
        vector = [0.0, 0.0, 0.01]
        for word, axis in axes.items():
            if word in text.lower():
                vector = [a + b for a, b in zip(vector, axis)]
        return vector

    memory = ark.EpisodicMemory(MemoryEpisodeStore(), embed=embed)
    for run, text in [("r1", "my cat sleeps"), ("r2", "the dog barks"), ("r3", "a red car")]:
        await memory.record(session_id="s", run_id=run,
                            messages=[ark.AgentMessage.user(text), ark.AgentMessage.assistant("ok")])
    episodes = await memory.episodes()
    assert all(e.embedding is not None and len(e.embedding) == 3 for e in episodes)
    hits = await memory.retrieve("a kitten, i.e. a young cat")
    assert hits[0].episode.run_id == "r1" and hits[0].score > hits[-1].score
    assert len(calls) == 4  # three episodes embedded once when recorded, then the query


async def test_an_episode_recorded_without_embeddings_is_embedded_when_first_compared(tmp_path) -> None:
    path = tmp_path / "m.jsonl"
    await ark.EpisodicMemory(path).record(session_id="s", run_id="r1",
                                          messages=[ark.AgentMessage.user("cats"), ark.AgentMessage.assistant("ok")])
    memory = ark.EpisodicMemory(path, embed=lambda text: [1.0, float("cat" in text)])
    [hit] = await memory.retrieve("cat", 1)
    assert hit.episode.run_id == "r1" and hit.score > 0.9


async def test_a_custom_summarize_writes_the_episode_summary() -> None:
    async def summarize(messages):
        return f"{len(messages)} messages: " + " / ".join(m.text for m in messages)

    memory = ark.EpisodicMemory(MemoryEpisodeStore(), summarize=summarize)
    runtime = ark.AgentRuntime(ScriptedModel(["pong"]), memory=memory)
    await runtime.run("ping")
    [episode] = await memory.episodes()
    assert episode.summary == "2 messages: ping / pong"


@pytest.mark.parametrize("make", [lambda p: JsonlEpisodeStore(p / "e.jsonl"), lambda p: SQLiteEpisodeStore(p / "e.db")],
                         ids=["jsonl", "sqlite"])
async def test_stores_keep_episodes_in_order_and_read_from_a_position(tmp_path, make) -> None:
    store = make(tmp_path)
    episodes = [Episode(episode_id=f"e{i}", session_id="s", run_id=f"r{i}", summary=f"episode {i}",
                        created_at=float(i)) for i in range(5)]
    for episode in episodes[:3]:
        await store.add(episode)
    assert await store.episodes() == episodes[:3]
    for episode in episodes[3:]:
        await store.add(episode)
    assert await store.episodes(3) == episodes[3:]
    assert await make(tmp_path).episodes(1) == episodes[1:]  # a second process reads the same


async def test_a_jsonl_line_torn_by_a_crash_is_ignored_and_replaced_by_the_next_episode(tmp_path) -> None:
    path = tmp_path / "e.jsonl"
    store = JsonlEpisodeStore(path)
    whole = Episode(episode_id="e1", session_id="s", run_id="r1", summary="whole", created_at=1.0)
    await store.add(whole)
    with open(path, "ab") as handle:  # what a SIGKILL in the middle of a write leaves
        handle.write(b'{"episode_id": "e2", "sess')
    assert await JsonlEpisodeStore(path).episodes() == [whole]
    later = Episode(episode_id="e3", session_id="s", run_id="r3", summary="later", created_at=3.0)
    await JsonlEpisodeStore(path).add(later)
    assert await JsonlEpisodeStore(path).episodes() == [whole, later]


async def test_a_corrupt_jsonl_line_is_named_by_file_and_line(tmp_path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text('{"not": "an episode"}\n')
    with pytest.raises(ark.ArkError) as info:
        await ark.EpisodicMemory(path).episodes()
    assert info.value.code == "state_corrupt" and f"{path}, line 1" in info.value.message


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ark.ArkError, match="folder"):
        ark.EpisodicMemory(42)
    with pytest.raises(ark.ArkError, match="embed"):
        ark.EpisodicMemory(MemoryEpisodeStore(), embed="no")
    with pytest.raises(ark.ArkError, match="EpisodicMemory"):
        ark.AgentRuntime(ScriptedModel(["x"]), memory="folder")


async def test_a_bad_embedding_is_named() -> None:
    memory = ark.EpisodicMemory(MemoryEpisodeStore(), embed=lambda text: [])
    with pytest.raises(ark.ArkError, match="non-empty list of finite numbers"):
        await memory.record(session_id="s", run_id="r", messages=[ark.AgentMessage.user("x")])


def test_sqlite_path_selects_the_sqlite_store(tmp_path) -> None:
    assert isinstance(ark.EpisodicMemory(tmp_path / "m.sqlite").store, SQLiteEpisodeStore)
    assert isinstance(ark.EpisodicMemory(os.fspath(tmp_path)).store, JsonlEpisodeStore)


async def test_the_runtimes_sqlite_store_keeps_the_episodes_next_to_its_sessions(tmp_path) -> None:
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    try:
        memory = ark.EpisodicMemory(store)
        assert isinstance(memory.store, DurableEpisodeStore)
        runtime = ark.AgentRuntime(ScriptedModel(["The deploy key rotates on Mondays."]), storage=store,
                                   session_id="ops", memory=memory)
        await runtime.run("When does the deploy key rotate?")
        await runtime.aclose()
        # Another session (another process, the same file) finds it; the sessions are untouched.
        other = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
        [episode] = await ark.EpisodicMemory(other).episodes()
        await other.aclose()
        assert episode.session_id == "ops" and "Mondays" in episode.summary
        assert (await store.load("ops")).history[-1].text == "The deploy key rotates on Mondays."
    finally:
        await store.aclose()


async def test_episodes_read_before_the_stores_first_save_leave_the_file_usable(tmp_path) -> None:
    # retrieve() on a new file creates the episodes table before the store ever wrote:
    # the store must still take the file as its own (tables named arknb_* are arknb's).
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    try:
        memory = ark.EpisodicMemory(store)
        assert await memory.retrieve("deploy key") == []
        runtime = ark.AgentRuntime(ScriptedModel(["It rotates on Mondays."]), storage=store,
                                   session_id="ops", memory=memory)
        result = await runtime.run("When does the deploy key rotate?")
        await runtime.aclose()
        assert result.stop_reason == "completed"
        assert [e.session_id for e in await memory.episodes()] == ["ops"]
    finally:
        await store.aclose()


def test_a_file_store_keeps_the_episodes_in_its_folder_and_other_stores_are_refused(tmp_path) -> None:
    memory = ark.EpisodicMemory(ark.FileStateStorage(tmp_path))
    assert isinstance(memory.store, JsonlEpisodeStore) and memory.store.path.parent == tmp_path

    class Elsewhere:
        location = ("postgres", "db")

    with pytest.raises(ark.ArkError, match="cannot keep episodes in a Elsewhere"):
        ark.EpisodicMemory(Elsewhere())
