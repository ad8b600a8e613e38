"""SQLiteStore's in-line commits (arknb/durable/sqlite_store.py): a commit that can be made
at once is made on the event loop's thread; one that would wait — for another
connection's write lock, behind a call queued on the worker, on a slow disk — goes to the
worker thread, and the event loop keeps running meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading

import pytest

from arknb.domain import AgentMessage, ErrorCode
from arknb.durable import SQLiteStore
from arknb.durable.store import Commit
from arknb.events import AgentEvent
from arknb.state import AgentState


def _state(session_id: str, n: int, revision: int) -> AgentState:
    history = tuple(AgentMessage.user(f"message {i}") for i in range(n))
    return AgentState(session_id=session_id, history=history, revision=revision)


def _store(path) -> SQLiteStore:
    store = SQLiteStore(path)
    store.inline_limit = float("inf")  # a slow moment of a shared machine must not move the commits
    return store


async def _save_turns(store: SQLiteStore, session_id: str, turns: int, start: int = 0) -> int:
    """Saves ``turns`` growing states of the session; returns the last revision."""
    revision = 0 if start == 0 else start
    for n in range(start + 1, start + turns + 1):
        revision = await store.save(_state(session_id, n, revision))
    return revision


async def test_a_commit_that_can_be_made_at_once_is_made_on_the_loop_thread(tmp_path):
    store = _store(tmp_path / "db.sqlite3")
    await _save_turns(store, "s", 1)  # the worker creates the file
    assert store.inline_commits == 0
    revision = await _save_turns(store, "s", 5, start=1)
    assert store.inline_commits == 5
    assert store._here_owner == (store._here_owner[0], threading.get_ident())
    await store.aclose()
    reader = SQLiteStore(tmp_path / "db.sqlite3")
    loaded = await reader.load("s")
    assert loaded.revision == revision and len(loaded.history) == 6
    await reader.aclose()


async def test_a_held_write_lock_sends_the_commit_to_the_worker_and_the_loop_keeps_running(tmp_path):
    db = tmp_path / "db.sqlite3"
    store = _store(db)
    revision = await _save_turns(store, "s", 2)
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process's writer holds the lock
    saving = asyncio.ensure_future(store.save(_state("s", 3, revision)))
    ticks = 0
    for _ in range(100):  # the in-line attempt finds the lock taken and hands the commit over
        if store._queued:
            break
        assert not saving.done(), saving
        await asyncio.sleep(0)
    else:
        pytest.fail("the commit never reached the worker")
    for _ in range(50):  # the loop runs while the worker waits for the lock
        ticks += 1
        await asyncio.sleep(0)
    assert ticks == 50 and not saving.done()
    other.execute("ROLLBACK")
    other.close()
    assert await saving == revision + 1
    inline = store.inline_commits
    assert (await store.load("s")).history[-1].text == "message 2"
    await store.save(_state("s", 4, revision + 1))
    assert store.inline_commits == inline + 1  # the lock is free again: in line
    await store.aclose()


async def test_a_commit_never_overtakes_a_call_queued_on_the_worker(tmp_path):
    store = _store(tmp_path / "db.sqlite3")
    await _save_turns(store, "s", 1)
    release = threading.Event()
    worker_started = asyncio.Event()
    loop = asyncio.get_running_loop()

    def blocking_read(conn, dialect):
        loop.call_soon_threadsafe(worker_started.set)
        release.wait(10)
        return "read"

    reading = asyncio.ensure_future(store._call(ErrorCode.STATE_LOAD_FAILED, "a read", store._read, blocking_read))
    await worker_started.wait()
    committing = asyncio.ensure_future(store.commit(Commit(session_id="s", events=(
        AgentEvent("r1:1", "custom.note", "s", "r1", 1, 0.0, {"n": 1}),))))
    await asyncio.sleep(0)
    assert not committing.done()  # queued behind the read, not made in line
    release.set()
    assert await reading == "read"
    await committing
    assert store.inline_commits == 0
    assert [e.payload["n"] for e in await store.read_events("s")] == [1]
    await store.aclose()


async def test_after_a_slow_commit_the_next_ones_go_to_the_worker(tmp_path):
    store = _store(tmp_path / "db.sqlite3")
    revision = await _save_turns(store, "s", 1)
    store.inline_limit = 0.0  # every in-line commit counts as slow
    revision = await _save_turns(store, "s", 1, start=revision)
    assert store.inline_commits == 1 and store._slow_left > 0
    commits = store.commits
    await _save_turns(store, "s", 10, start=revision)
    assert store.inline_commits == 1 and store.commits == commits + 10  # all on the worker
    await store.aclose()


async def test_in_line_commits_have_the_worker_checkpoint_the_log(tmp_path):
    db = tmp_path / "db.sqlite3"
    store = _store(db)
    await _save_turns(store, "s", 1)
    await _save_turns(store, "s", 1000, start=1)
    # While a checkpoint is queued the next commit goes to the worker (one per checkpoint at most).
    assert 1000 - 5 <= store.inline_commits <= 1000
    await store._call(ErrorCode.STATE_LOAD_FAILED, "wait for the worker", lambda: None)  # the posted checkpoints ran
    assert store.checkpoints == store.inline_commits // 200
    # The log restarts from its beginning after a checkpoint: it holds the last commits'
    # pages, not the 1,000 commits' (about 2,700 frames without checkpoints).
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as conn:
        busy, log_frames, _ = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert busy == 0 and log_frames < 1000
    await store.aclose()


async def test_a_store_used_from_another_thread_commits_there_on_the_worker(tmp_path):
    store = _store(tmp_path / "db.sqlite3")
    revision = await _save_turns(store, "s", 2)  # the loop's thread owns the in-line connection

    def elsewhere() -> int:
        return asyncio.run(store.save(_state("s", 3, revision)))

    inline = store.inline_commits
    assert await asyncio.to_thread(elsewhere) == revision + 1
    assert store.inline_commits == inline  # not on the other thread's loop
    assert len((await store.load("s")).history) == 3
    await store.aclose()
