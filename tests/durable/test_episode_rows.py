"""EpisodicMemory on a durable store (arknb/durable/_episode_rows.py): the episodes live
in the store's own database, on SQLite and on PostgreSQL, in the order they were added,
also when several memories add at once."""

from __future__ import annotations

import asyncio

import pytest

import arknb as ark
from arknb import ScriptedModel
from arknb.memory import DurableEpisodeStore, Episode


@pytest.fixture(params=["sqlite", "postgres"])
def make_store(request, tmp_path):
    if request.param == "sqlite":
        return lambda: ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    dsn = request.getfixturevalue("pg_dsn")
    return lambda: ark.PostgresStore(dsn)


async def test_a_runtimes_episodes_are_kept_next_to_its_sessions(make_store):
    store = make_store()
    memory = ark.EpisodicMemory(store)
    assert isinstance(memory.store, DurableEpisodeStore)
    assert await memory.retrieve("deploy key") == []  # before the store's first save
    runtime = ark.AgentRuntime(ScriptedModel(["The deploy key rotates on Mondays."]), storage=store,
                               session_id="ops", memory=memory)
    await runtime.run("When does the deploy key rotate?")
    await runtime.aclose()
    # Another process (a new store on the same database) recalls it in another session.
    other = make_store()
    [hit] = await ark.EpisodicMemory(other).retrieve("deploy key rotate")
    assert hit.episode.session_id == "ops" and "Mondays" in hit.episode.summary
    assert (await other.load("ops")).history[-1].text == "The deploy key rotates on Mondays."
    await other.aclose()
    await store.aclose()


def _episode(n: int) -> Episode:
    return Episode(episode_id=f"e{n}", session_id=f"s{n % 3}", run_id=f"r{n}", summary=f"note {n}",
                   created_at=float(n))


async def test_concurrent_adds_are_read_in_order_and_a_reader_never_skips_one(make_store):
    writers = [make_store() for _ in range(3)]
    reader_store = make_store()
    reader = DurableEpisodeStore(reader_store.episode_rows())
    seen: list[str] = []
    reading = asyncio.Lock()  # one reader, catching up from what it has read, as EpisodicMemory does

    async def catch_up() -> None:
        async with reading:
            seen.extend(e.episode_id for e in await reader.episodes(len(seen)))

    async def add(i: int) -> None:
        for n in range(i, 30, 3):
            await DurableEpisodeStore(writers[i].episode_rows()).add(_episode(n))
            await catch_up()

    await asyncio.gather(*(add(i) for i in range(3)))
    await catch_up()
    assert sorted(seen) == sorted(f"e{n}" for n in range(30)) and len(seen) == 30
    assert [e.episode_id for e in await reader.episodes()] == seen  # the order they were read in
    # Adding an episode again (a retried record) keeps one row.
    await DurableEpisodeStore(writers[0].episode_rows()).add(_episode(0))
    assert len(await reader.episodes()) == 30
    for store in (*writers, reader_store):
        await store.aclose()


async def test_a_row_that_is_not_an_episode_is_named(make_store):
    store = make_store()
    await store.episode_rows().add("bad", '{"not": "an episode"}')
    with pytest.raises(ark.ArkError) as info:
        await ark.EpisodicMemory(store).episodes()
    assert info.value.code == "state_corrupt" and "episode row 1" in info.value.message
    await store.aclose()
    with pytest.raises(ark.ArkError) as info:
        await ark.EpisodicMemory(store).episodes()
    assert "closed" in info.value.message
