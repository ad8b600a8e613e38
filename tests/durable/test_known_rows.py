"""What a process knows of a durable session's rows (arknb/durable/_known_rows.py): a
session that did not change since this process wrote or read it loads without reading
its rows, on SQLite and on PostgreSQL; anything that changed it is read again."""

from __future__ import annotations

import contextlib
import sqlite3

import pytest

from arknb.domain import AgentMessage, ArkError
from arknb.durable import PostgresStore, SQLiteStore
from arknb.durable._database import LAYOUT_STEPS, LAYOUT_VERSION
from arknb.durable._known_rows import KNOWN_ROWS, KnownRows
from arknb.durable._validated_rows import VALIDATED_ROWS
from arknb.durable.postgres_store import PG_LAYOUT_VERSION
from arknb.state import AgentState


def _messages(*texts: str) -> tuple[AgentMessage, ...]:
    return tuple(AgentMessage.user(text) for text in texts)


def _forget_everything() -> None:
    """What a new process starts with."""
    KNOWN_ROWS.clear()
    VALIDATED_ROWS.clear()


class Sqlite:
    def __init__(self, tmp_path):
        self.db = tmp_path / "state.sqlite3"

    def store(self):
        return SQLiteStore(self.db)

    def sql(self, *statements: str) -> None:
        with contextlib.closing(sqlite3.connect(self.db, isolation_level=None)) as conn:
            for statement in statements:
                conn.execute(statement)

    def edit_bypassing_triggers(self, statement: str) -> None:
        self.sql("DROP TRIGGER messages_update", statement, next(
            s for s in LAYOUT_STEPS[2] if "TRIGGER messages_update" in s))


class Postgres:
    def __init__(self, dsn):
        self.dsn = dsn

    def store(self):
        return PostgresStore(self.dsn)

    def sql(self, *statements: str) -> None:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)

    def edit_bypassing_triggers(self, statement: str) -> None:
        self.sql("ALTER TABLE messages DISABLE TRIGGER messages_changed", statement,
                 "ALTER TABLE messages ENABLE TRIGGER messages_changed")


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request, tmp_path):
    if request.param == "sqlite":
        return Sqlite(tmp_path)
    return Postgres(request.getfixturevalue("pg_dsn"))


async def test_an_unchanged_session_loads_without_reading_its_rows(backend):
    first = backend.store()
    state = AgentState(session_id="s", history=_messages("one", "two", "three"))
    await first.save(state)
    # A writer that bypasses the triggers edits a row (nothing arknb or a user with SQL
    # would do, short of dropping them): the session row still says "unchanged", so a
    # second store of this process hands out what it knows without reading the rows.
    backend.edit_bypassing_triggers("UPDATE messages SET body = 'not json' WHERE session_id = 's' AND idx = 1")
    second = backend.store()
    loaded = await second.load("s")
    assert loaded.history == state.history
    assert all(a is b for a, b in zip(loaded.history, state.history))  # the very items: no row was parsed
    # A new process knows nothing, reads the rows and finds the damage.
    _forget_everything()
    third = backend.store()
    with pytest.raises(ArkError) as info:
        await third.load("s")
    assert info.value.code == "state_corrupt" and "not json" not in info.value.message
    for store in (first, second, third):
        await store.aclose()


async def test_rows_written_behind_the_process_are_read_again(backend):
    first = backend.store()
    await first.save(AgentState(session_id="s", history=_messages("one", "two")))
    backend.sql("UPDATE messages SET body = replace(body, 'two', 'TWO') WHERE session_id = 's' AND idx = 1")
    second = backend.store()
    loaded = await second.load("s")
    assert [m.text for m in loaded.history] == ["one", "TWO"]
    for store in (first, second):
        await store.aclose()


async def test_a_deleted_and_recreated_session_is_not_taken_for_the_one_known(backend):
    ours = backend.store()
    await ours.save(AgentState(session_id="s", history=_messages("a", "b")))
    # Another process (its own knowledge) deletes the session and saves one of the same
    # shape: revision 1 again, the same lengths, the same header text.
    other = backend.store()
    other._written = KnownRows().view(other.location)
    await other.delete("s")
    await other.save(AgentState(session_id="s", history=_messages("x", "y")))
    loaded = await ours.load("s")
    assert [m.text for m in loaded.history] == ["x", "y"]
    # ... and our next save does not append to rows it does not know.
    await ours.save(loaded.model_copy(update={"history": loaded.history + _messages("z")}))
    _forget_everything()
    fresh = backend.store()
    assert [m.text for m in (await fresh.load("s")).history] == ["x", "y", "z"]
    for store in (ours, other, fresh):
        await store.aclose()


async def test_a_dropped_table_is_still_a_load_failure(tmp_path):
    backend = Sqlite(tmp_path)
    store = backend.store()
    await store.save(AgentState(session_id="s", history=_messages("x")))
    backend.sql("DROP TABLE messages")
    with pytest.raises(ArkError) as info:
        await store.load("s")
    assert info.value.code == "state_load_failed"
    await store.aclose()


def test_the_knowledge_is_bounded_and_forgets_the_least_recently_used():
    from arknb.durable._known_rows import Written

    known = KnownRows(max_items=10)
    rows = known.view("db")
    for name in ("a", "b", "c"):
        rows[name] = Written(((None,) * 4, ()), 1, (4, 0), "{}", "i")
    assert rows.get("a") is None and rows.get("b") is not None and rows.get("c") is not None
    rows.get("b")  # used: c is now the oldest
    rows["d"] = Written(((None,) * 4, ()), 1, (4, 0), "{}", "i")
    assert rows.get("c") is None and rows.get("b") is not None and len(known) == 2


async def _saved_then_taken_back(backend, *statements: str):
    """A session saved by ``backend``'s store, the database then taken back to an older
    layout by ``statements``, and a store of a new process reopening it: the store, after
    checking the session loads as it was saved."""
    store = backend.store()
    state = AgentState(session_id="s", history=_messages("one", "two"))
    await store.save(state)
    await store.aclose()
    backend.sql(*statements)
    _forget_everything()
    reopened = backend.store()
    assert (await reopened.load("s")).history == state.history
    return reopened


async def test_a_layout_2_file_gets_incarnations_and_keeps_its_sessions(tmp_path):
    backend = Sqlite(tmp_path)
    # Take the file back to layout 2, as an arknb before incarnations wrote it.
    reopened = await _saved_then_taken_back(
        backend, *(f"DROP TRIGGER {t}_{op}" for t in ("messages", "usages") for op in ("insert", "update", "delete")),
        "ALTER TABLE sessions DROP COLUMN incarnation", "UPDATE store_meta SET value = '2' WHERE key = 'layout_version'")
    with contextlib.closing(sqlite3.connect(backend.db)) as conn:
        assert conn.execute("SELECT value FROM store_meta").fetchone() == (str(LAYOUT_VERSION),)
        (token,) = conn.execute("SELECT incarnation FROM sessions").fetchone()
        assert isinstance(token, str) and len(token) == 32
        triggers = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert len(triggers) == 6
    await reopened.aclose()


async def test_a_layout_1_postgres_database_gets_incarnations_and_keeps_its_sessions(pg_dsn):
    reopened = await _saved_then_taken_back(
        Postgres(pg_dsn), "DROP TRIGGER messages_changed ON messages", "DROP TRIGGER usages_changed ON usages",
        "DROP FUNCTION arknb_rows_changed()", "ALTER TABLE sessions DROP COLUMN incarnation",
        "UPDATE store_meta SET value = '1' WHERE key = 'layout_version'")
    import psycopg

    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT value FROM store_meta").fetchone() == (str(PG_LAYOUT_VERSION),)
        (token,) = conn.execute("SELECT incarnation FROM sessions").fetchone()
        assert isinstance(token, str) and len(token) == 32
    await reopened.aclose()
