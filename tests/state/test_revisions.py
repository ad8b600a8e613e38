"""The StateStorage contract on revisions: every save is a compare-and-swap (DESIGN §8).

Run against the memory, file and SQLite stores (the ``storage`` fixture), and across
two instances on one directory or database file, as two processes would use them.
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from arknb.domain import AgentMessage, ArkError
from arknb.durable import SQLiteStore
from arknb.state import SCHEMA_VERSION, AgentState, FileStateStorage, storage_location

from .conftest import make_full_state


def _state(text: str = "hi", revision: int = 0, session_id: str = "s") -> AgentState:
    return AgentState(session_id=session_id, history=(AgentMessage.user(text),), revision=revision)


def _conflict(info, *, session_id: str = "s", expected: int, stored: int) -> None:
    error = info.value
    assert error.code == "state_conflict" and error.layer == "storage" and not error.retryable
    assert f"'{session_id}'" in error.message and f"based on revision {expected}" in error.message
    if stored:
        assert f"revision {stored}" in error.message or f"revision is {stored}" in error.message
    else:
        assert "no saved state" in error.message


async def test_a_first_save_stores_revision_1_and_returns_it(storage):
    assert await storage.save(_state()) == 1
    assert (await storage.load("s")).revision == 1


async def test_each_save_based_on_the_stored_revision_returns_the_next(storage):
    revision = 0
    for n in range(4):
        revision = await storage.save(_state(f"m{n}", revision))
        assert revision == n + 1
    loaded = await storage.load("s")
    assert loaded.revision == 4 and loaded.history[0].text == "m3"


async def test_a_save_based_on_a_stale_revision_is_state_conflict_and_writes_nothing(storage):
    await storage.save(_state("first"))
    await storage.save(_state("second", 1))

    with pytest.raises(ArkError) as info:
        await storage.save(_state("stale", 1))

    _conflict(info, expected=1, stored=2)
    loaded = await storage.load("s")
    assert loaded.revision == 2 and loaded.history[0].text == "second"


async def test_a_new_state_over_a_saved_one_is_state_conflict(storage):
    """Revision 0 means "never saved": it cannot replace a saved session."""
    await storage.save(_state("kept"))
    with pytest.raises(ArkError) as info:
        await storage.save(_state("new session, same id"))
    _conflict(info, expected=0, stored=1)
    assert "already has saved state at revision 1" in info.value.message
    assert (await storage.load("s")).history[0].text == "kept"


async def test_a_revision_ahead_of_a_missing_session_is_state_conflict(storage):
    with pytest.raises(ArkError) as info:
        await storage.save(_state("ghost", 5))
    _conflict(info, expected=5, stored=0)
    assert await storage.load("s") is None and await storage.list_sessions() == []


async def test_mark_not_resumable_keeps_the_revision_and_the_next_save_clears_it(storage):
    await storage.save(_state())
    await storage.mark_not_resumable("s")
    marked = await storage.load("s")
    assert marked.not_resumable and marked.revision == 1

    assert await storage.save(marked.model_copy(update={"not_resumable": False})) == 2
    again = await storage.load("s")
    assert not again.not_resumable and again.revision == 2


async def test_a_session_only_marked_not_resumable_is_revision_0(storage):
    await storage.mark_not_resumable("s")
    assert (await storage.load("s")).revision == 0
    assert await storage.save(_state()) == 1


async def test_after_delete_only_a_revision_0_save_lands(storage):
    await storage.save(_state("old"))
    await storage.delete("s")
    with pytest.raises(ArkError) as info:  # a runtime still holding the deleted state does not bring it back
        await storage.save(_state("old, again", 1))
    _conflict(info, expected=1, stored=0)
    assert await storage.save(_state("new")) == 1


async def test_concurrent_saves_from_one_revision_let_exactly_one_land(storage):
    await storage.save(_state("base"))
    contenders = [_state(f"c{n}", 1) for n in range(8)]
    outcomes = await asyncio.gather(*(storage.save(s) for s in contenders), return_exceptions=True)
    assert outcomes.count(2) == 1
    assert all(isinstance(o, ArkError) and o.code == "state_conflict" for o in outcomes if o != 2)
    winner = contenders[outcomes.index(2)]
    assert (await storage.load("s")).history == winner.history


async def test_a_save_returns_a_revision_the_saved_state_does_not_carry_yet(storage):
    """The caller's state is not changed (it is frozen); the stored one carries the revision."""
    state = _state()
    await storage.save(state)
    assert state.revision == 0


# -- two instances on one place (what two processes see) -----------------------------------------


def _pair(kind: str, tmp_path):
    if kind == "file":
        return FileStateStorage(tmp_path / "d"), FileStateStorage(tmp_path / "d")
    return SQLiteStore(tmp_path / "s.db"), SQLiteStore(tmp_path / "s.db")


@pytest.mark.parametrize("kind", ["file", "sqlite"])
async def test_two_instances_on_one_place_see_each_others_revisions(kind, tmp_path):
    a, b = _pair(kind, tmp_path)
    try:
        assert storage_location(a) == storage_location(b)
        await a.save(_state("from a"))
        loaded = await b.load("s")
        assert loaded.revision == 1
        assert await b.save(loaded.model_copy(update={"history": (AgentMessage.user("from b"),)})) == 2
        # a's picture is stale: its save conflicts instead of overwriting b's.
        with pytest.raises(ArkError) as info:
            await a.save(_state("from a again", 1))
        _conflict(info, expected=1, stored=2)
        assert (await a.load("s")).history[0].text == "from b"
    finally:
        for store in (a, b):
            if isinstance(store, SQLiteStore):
                await store.aclose()


async def test_file_store_places_are_resolved_paths(tmp_path, monkeypatch):
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    monkeypatch.chdir(tmp_path)
    assert storage_location(FileStateStorage("real")) == storage_location(FileStateStorage(tmp_path / "link"))
    assert storage_location(FileStateStorage("real")) != storage_location(FileStateStorage("other"))


def test_memory_stores_are_each_their_own_place():
    from arknb.state import MemoryStateStorage
    a, b = MemoryStateStorage(), MemoryStateStorage()
    assert storage_location(a) != storage_location(b) and storage_location(a) == storage_location(a)


# -- never overwriting what cannot be read --------------------------------------------------------


async def test_file_store_refuses_to_overwrite_a_corrupt_file(tmp_path):
    storage = FileStateStorage(tmp_path)
    path = tmp_path / "s.json"
    path.write_text('{"session_id": "s", "history": [', "utf-8")
    with pytest.raises(ArkError) as info:
        await storage.save(_state())
    assert info.value.code == "state_corrupt" and str(path) in info.value.message
    assert "not overwritten" in info.value.message or "stays as it is" in info.value.message
    assert path.read_text("utf-8") == '{"session_id": "s", "history": ['


async def test_file_store_refuses_to_overwrite_a_newer_version(tmp_path):
    storage = FileStateStorage(tmp_path)
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"schema_version": SCHEMA_VERSION + 1, "session_id": "s", "revision": 0}), "utf-8")
    before = path.read_bytes()
    with pytest.raises(ArkError) as info:
        await storage.save(_state())
    assert info.value.code == "state_version_unsupported" and path.read_bytes() == before


async def test_sqlite_store_refuses_to_overwrite_an_unreadable_header(tmp_path):
    import sqlite3
    db = tmp_path / "s.db"
    storage = SQLiteStore(db)
    await storage.save(_state())
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE sessions SET header = 'garbage'")
    with pytest.raises(ArkError) as info:
        await storage.save(_state("over it", 1))
    assert info.value.code == "state_corrupt" and str(db) in info.value.message
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT header FROM sessions").fetchall() == [("garbage",)]
    await storage.aclose()


async def test_sqlite_store_refuses_a_boolean_revision(tmp_path):
    import sqlite3
    db = tmp_path / "s.db"
    storage = SQLiteStore(db)
    await storage.save(_state())
    with sqlite3.connect(db) as conn:  # json_extract would read true as 1
        conn.execute("UPDATE sessions SET header = json_set(header, '$.revision', json('true'))")
    with pytest.raises(ArkError) as info:
        await storage.save(_state("over it", 1))
    assert info.value.code == "state_corrupt" and "revision" in info.value.message
    await storage.aclose()


async def test_a_version_2_document_counts_as_revision_0(tmp_path):
    storage = FileStateStorage(tmp_path)
    document = json.loads(make_full_state("s").to_json())
    for field in ("revision", "extensions", "resolved_approvals"):
        del document[field]
    document["schema_version"] = 2
    (tmp_path / "s.json").write_text(json.dumps(document), "utf-8")

    loaded = await storage.load("s")

    assert loaded.revision == 0
    assert await storage.save(loaded) == 1


# -- the file store's own files ------------------------------------------------------------------


async def test_a_save_removes_temporary_files_a_killed_write_left(tmp_path):
    storage = FileStateStorage(tmp_path)
    stray = [".s.json.tmp", ".s.json.k3v9x_2a.tmp", ".s.not_resumable.tmp", ".s.not_resumable.ab12cd34.tmp"]
    others = [".s.json.json.ab12cd34.tmp", ".t.json.tmp", "notes.tmp"]  # another session's, a stranger's
    for name in stray + others:
        (tmp_path / name).write_text("half a document", "utf-8")

    await storage.save(_state())

    assert sorted(os.listdir(tmp_path)) == sorted([".s.lock", "s.json", *others])


async def test_delete_removes_the_lock_file_too(tmp_path):
    storage = FileStateStorage(tmp_path)
    await storage.save(_state())
    await storage.mark_not_resumable("s")
    await storage.delete("s")
    assert os.listdir(tmp_path) == []


async def test_a_writer_waiting_on_a_deleted_lock_file_takes_the_new_one(tmp_path, monkeypatch):
    """delete() removes the lock file while another instance may wait on it: the waiter
    must not end up holding a lock nobody else takes (then two writers would both win)."""
    import fcntl
    import threading

    import arknb.state.file_storage as file_storage

    first, second = FileStateStorage(tmp_path), FileStateStorage(tmp_path)
    await first.save(_state())
    waiting_on = threading.Event()
    calls = []

    class Fcntl:  # the real fcntl, telling the test when a writer blocks on a lock
        LOCK_EX = fcntl.LOCK_EX

        @staticmethod
        def flock(fd, operation):
            calls.append(os.fstat(fd).st_ino)
            waiting_on.set()
            fcntl.flock(fd, operation)

    with first._locked("s"):  # first holds the lock (taken before the shim is in place)
        monkeypatch.setattr(file_storage, "fcntl", Fcntl)
        waiting = asyncio.ensure_future(second.save(_state("late", 1)))
        assert await asyncio.to_thread(waiting_on.wait, 30)
        for name in (".s.lock", "s.json"):
            os.unlink(tmp_path / name)  # what a delete does, under the lock
    # The waiter finds its lock file gone, opens the current one, and compares with
    # what is stored now (nothing): its revision 1 save conflicts.
    with pytest.raises(ArkError) as info:
        await waiting
    _conflict(info, expected=1, stored=0)
    assert len(calls) == 2  # it locked again, the new lock file (its inode number may be the old one's)
