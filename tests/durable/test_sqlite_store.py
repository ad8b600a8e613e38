"""SQLiteStore: append-only saves, two writers, corrupt and foreign files, closing.

The behaviour every backend shares runs from tests/state/test_storage_backends.py
(the ``storage`` fixture includes this store); here is what is particular to SQLite.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3

import pytest

import arknb as ark
from arknb.domain import AgentMessage, ArkError, Usage
from arknb.durable import SQLiteStore
from arknb.durable._database import LAYOUT_VERSION
from arknb.state import SCHEMA_VERSION, AgentState, StateStorage
from tests.runtime._approval_kit import Tools, assert_history_paired, dangerous_turn
from tests.state.conftest import make_full_state


@pytest.fixture
def db(tmp_path):
    return tmp_path / "state.sqlite3"


@pytest.fixture
def full_state() -> AgentState:
    return make_full_state(revision=0)  # a first save: nothing stored yet


@pytest.fixture
async def store(db):
    storage = SQLiteStore(db)
    yield storage
    await storage.aclose()


def _sql(db, *statements: str, params: tuple = ()) -> list[tuple]:
    """Run statements on a connection of the test's own; the last one's rows."""
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as conn:
        rows: list[tuple] = []
        for statement in statements:
            rows = conn.execute(statement, params if statement is statements[-1] else ()).fetchall()
        return rows


def _audit(db) -> None:
    """Record every message and usage row the store inserts, deletes or updates (via triggers)."""
    statements = ["CREATE TABLE audit (tbl TEXT, op TEXT, idx INTEGER)"]
    for table in ("messages", "usages"):
        for op, row in (("insert", "NEW"), ("delete", "OLD"), ("update", "OLD")):
            statements.append(f"CREATE TRIGGER audit_{table}_{op} AFTER {op.upper()} ON {table} "
                              f"BEGIN INSERT INTO audit VALUES ('{table}', '{op}', {row}.idx); END")
    _sql(db, *statements)


def _audited(db, table: str = "messages") -> list[tuple[str, int]]:
    """The rows of ``table`` written since the last call for it."""
    rows = _sql(db, "SELECT op, idx FROM audit WHERE tbl = ? ORDER BY rowid", params=(table,))
    _sql(db, "DELETE FROM audit WHERE tbl = ?", params=(table,))
    return rows


async def put(store: SQLiteStore, state: AgentState) -> int:
    """Save ``state`` on top of whatever is stored: these tests are about rows, not about
    revision conflicts (tests/durable/test_store_conformance.py has those)."""
    try:
        rows = _sql(store.path, "SELECT revision FROM sessions WHERE session_id = ? AND header IS NOT NULL",
                    params=(state.session_id,))
    except sqlite3.Error:  # no database yet, or not ours: the save itself says so
        rows = []
    return await store.save(state.model_copy(update={"revision": rows[0][0] if rows else 0}))


def same(loaded: AgentState | None, expected: AgentState) -> bool:
    """Equal apart from the revision (which the store sets)."""
    return loaded is not None and loaded.model_copy(update={"revision": 0}) == expected.model_copy(
        update={"revision": 0})


def _messages(*texts: str) -> tuple[AgentMessage, ...]:
    return tuple(AgentMessage.user(text) for text in texts)


# -- the protocol, creation, reopening -------------------------------------------------------


def test_store_satisfies_the_protocol_and_is_exported(db):
    storage = SQLiteStore(db)
    assert isinstance(storage, StateStorage)
    assert ark.SQLiteStore is SQLiteStore
    storage.close()


async def test_first_save_creates_the_parent_directories(tmp_path, full_state):
    db = tmp_path / "new" / "dir" / "state.sqlite3"
    storage = SQLiteStore(db)
    assert not (tmp_path / "new").exists()  # opened lazily
    await put(storage, full_state)
    await storage.aclose()
    assert db.is_file()
    assert _sql(db, "SELECT value FROM store_meta WHERE key = 'layout_version'") == [(str(LAYOUT_VERSION),)]


async def test_reads_of_a_missing_database_create_nothing(tmp_path):
    storage = SQLiteStore(tmp_path / "absent" / "state.sqlite3")
    assert await storage.load("s") is None
    assert await storage.list_sessions() == []
    await storage.delete("s")
    await storage.aclose()
    assert not (tmp_path / "absent").exists()


async def test_reopen_after_close_returns_an_equal_state(db, full_state):
    first = SQLiteStore(db)
    await put(first, full_state)
    await first.mark_not_resumable("ghost")
    await first.aclose()

    second = SQLiteStore(db)
    assert same(await second.load("demo"), full_state)
    assert await second.list_sessions() == ["demo", "ghost"]
    await second.aclose()


async def test_rows_hold_the_header_and_one_json_message_each(store, db, full_state):
    await put(store, full_state)
    [(header, history_len, not_resumable)] = _sql(
        db, "SELECT header, history_len, not_resumable FROM sessions WHERE session_id = 'demo'")
    assert '"history"' not in header and f'"schema_version":{SCHEMA_VERSION}' in header
    assert history_len == len(full_state.history) and not_resumable == 0
    bodies = _sql(db, "SELECT body FROM messages WHERE session_id = 'demo' ORDER BY idx")
    assert [AgentMessage.model_validate_json(body) for (body,) in bodies] == list(full_state.history)


# -- append-only saves ---------------------------------------------------------------------------


async def test_a_save_after_one_appended_message_writes_exactly_one_message_row(store, db, full_state):
    await put(store, full_state)
    _audit(db)
    n = len(full_state.history)

    grown = full_state.model_copy(update={"history": full_state.history + _messages("one more")})
    await put(store, grown)
    assert _audited(db) == [("insert", n)]

    again = grown.model_copy(update={"event_sequence": 99})  # same history: no message row at all
    await put(store, again)
    assert _audited(db) == []
    assert same(await store.load("demo"), again)


async def test_a_save_after_one_model_call_writes_one_message_and_one_usage_row(store, db, full_state):
    await put(store, full_state)
    _audit(db)
    n, k = len(full_state.history), len(full_state.usages)

    grown = full_state.model_copy(update={"history": full_state.history + _messages("answer"),
                                          "usages": full_state.usages + (Usage(input_tokens=4),)})
    await put(store, grown)

    assert _audited(db, "messages") == [("insert", n)]
    assert _audited(db, "usages") == [("insert", k)]
    assert '"usages"' not in _sql(db, "SELECT header FROM sessions")[0][0]
    assert same(await store.load("demo"), grown)


async def test_a_load_primes_the_next_save_to_append(db, full_state):
    writer = SQLiteStore(db)
    await put(writer, full_state)
    await writer.aclose()
    _audit(db)

    reader = SQLiteStore(db)
    loaded = await reader.load("demo")
    grown = loaded.model_copy(update={"history": loaded.history + _messages("after restore")})
    await put(reader, grown)
    assert _audited(db) == [("insert", len(full_state.history))]
    await reader.aclose()


async def test_a_load_by_the_saving_instance_keeps_both_states_appending(store, db):
    saved = AgentState(session_id="s", history=_messages("m0", "m1"))
    await put(store, saved)
    _audit(db)
    loaded = await store.load("s")
    assert same(loaded, saved)
    # The rows are what this instance saved: the load hands out those very messages,
    # so what follows from either state is compared by pointer, not field by field.
    assert all(a is b for a, b in zip(loaded.history, saved.history, strict=True))

    await put(store, saved.model_copy(update={"history": saved.history + _messages("from saved")}))
    assert _audited(db) == [("insert", 2)]
    await store.load("s")
    await put(store, loaded.model_copy(update={"history": loaded.history + _messages("from loaded")}))
    assert _audited(db) == [("delete", 2), ("insert", 2)]  # only the one message that differs


async def test_a_rewritten_history_is_replaced_from_its_first_difference(store, db):
    m = _messages("m0", "m1", "m2", "m3", "m4", "m5")
    await put(store, AgentState(session_id="s", history=m))
    _audit(db)

    replaced = (m[0], m[1], AgentMessage.user("summary of m2-m4"), m[5])  # a hook compressed history
    await put(store, AgentState(session_id="s", history=replaced))
    assert _audited(db) == [("delete", 2), ("delete", 3), ("delete", 4), ("delete", 5),
                            ("insert", 2), ("insert", 3)]
    loaded = (await store.load("s")).history
    assert loaded == replaced

    # Edits of the loaded history (the load primed the store with its messages):
    longer = (*loaded[:3], AgentMessage.user("new m3"), AgentMessage.user("m4"))
    await put(store, AgentState(session_id="s", history=longer))
    assert _audited(db) == [("delete", 3), ("insert", 3), ("insert", 4)]
    assert (await store.load("s")).history == longer

    shorter = longer[:1]
    await put(store, AgentState(session_id="s", history=shorter))
    assert _audited(db) == [("delete", 1), ("delete", 2), ("delete", 3), ("delete", 4)]
    assert (await store.load("s")).history == shorter

    await put(store, AgentState(session_id="s"))
    assert (await store.load("s")).history == ()


async def test_equal_messages_keep_their_rows(store, db):
    """Messages that are not the same objects but equal ones serialise the same: no row changes."""
    await put(store, AgentState(session_id="s", history=_messages("a", "b")))
    _audit(db)
    await put(store, AgentState(session_id="s", history=_messages("a", "b", "c")))
    assert _audited(db) == [("insert", 2)]
    await put(store, AgentState(session_id="s", history=_messages("a", "x", "c")))
    assert _audited(db) == [("delete", 1), ("delete", 2), ("insert", 1), ("insert", 2)]


async def test_two_instances_interleaving_saves_of_one_session_always_load_the_last_state(db):
    first, second, reader = SQLiteStore(db), SQLiteStore(db), SQLiteStore(db)
    histories = {first: _messages("a0"), second: _messages("b0", "b1", "b2")}
    try:
        for step in range(8):
            writer = (first, second)[step % 2]
            # Each keeps growing its own history: appending to rows the other wrote would
            # leave the other's messages in the middle of this one's conversation.
            histories[writer] += _messages(f"{'ab'[step % 2]}{step}")
            state = AgentState(session_id="s", history=histories[writer], event_sequence=step)
            await put(writer, state)
            assert same(await reader.load("s"), state)
            assert same(await writer.load("s"), state)
    finally:
        for storage in (first, second, reader):
            await storage.aclose()


async def test_a_second_instance_that_loaded_the_session_appends_to_it(db):
    first, second = SQLiteStore(db), SQLiteStore(db)
    await put(first, AgentState(session_id="s", history=_messages("one", "two")))
    _audit(db)
    loaded = await second.load("s")
    await put(second, loaded.model_copy(update={"history": loaded.history + _messages("three")}))
    assert _audited(db) == [("insert", 2)]

    # The instances share what this process knows of the file's rows (_known_rows.py):
    # first knows what second wrote, so only the row that differs is replaced.
    state = AgentState(session_id="s", history=_messages("one", "two", "four"))
    await put(first, state)
    assert _audited(db) == [("delete", 2), ("insert", 2)]
    assert same(await second.load("s"), state)

    # Rows written behind the process's back (another process, a hand edit) change the
    # session's incarnation: the next save rewrites them all instead of trusting them.
    _sql(db, "UPDATE messages SET body = body WHERE session_id = 's' AND idx = 0")
    _audited(db)
    state = AgentState(session_id="s", history=_messages("one", "two", "four", "five"))
    await put(first, state)
    assert [op for op, _ in _audited(db)] == ["delete"] * 3 + ["insert"] * 4
    assert same(await second.load("s"), state)
    await first.aclose()
    await second.aclose()


async def test_concurrent_saves_of_one_session_land_one_after_the_other(store):
    states = [make_full_state("race", metadata={"n": n}, event_sequence=n,
                              history=_messages(*(f"m{i}" for i in range(n))))
              for n in range(12)]
    revisions = await asyncio.gather(*(store.save(state.model_copy(update={"revision": n}))
                                       for n, state in enumerate(states)))
    assert revisions == list(range(1, 13))  # one worker thread: saves run in call order
    assert same(await store.load("race"), states[-1])


async def test_concurrent_saves_from_one_revision_let_exactly_one_land(store):
    states = [AgentState(session_id="race", event_sequence=n) for n in range(12)]
    outcomes = await asyncio.gather(*(store.save(state) for state in states), return_exceptions=True)
    assert outcomes[0] == 1  # one worker thread: the first call is the first save
    assert all(isinstance(o, ArkError) and o.code == "state_conflict" for o in outcomes[1:])
    assert same(await store.load("race"), states[0])


async def test_a_failed_save_leaves_the_previous_state(store, db):
    old = AgentState(session_id="s", history=_messages("old"))
    await put(store, old)
    _sql(db, "CREATE TRIGGER refuse BEFORE INSERT ON messages "
             "BEGIN SELECT RAISE(ABORT, 'disk full (injected)'); END")

    new = old.model_copy(update={"history": old.history + _messages("new"), "event_sequence": 5})
    with pytest.raises(ArkError) as info:
        await put(store, new)

    assert info.value.code == "state_save_failed" and info.value.layer == "storage"
    assert info.value.retryability == "conditional"
    assert "'s'" in info.value.message and str(db) in info.value.message
    assert isinstance(info.value.__cause__, sqlite3.Error)
    assert same(await store.load("s"), old)  # the session row was not half-updated
    _sql(db, "DROP TRIGGER refuse")
    await put(store, new)
    assert same(await store.load("s"), new)


async def test_an_unwritable_location_is_state_save_failed(tmp_path):
    (tmp_path / "a-file").write_text("x")
    storage = SQLiteStore(tmp_path / "a-file" / "state.sqlite3")
    with pytest.raises(ArkError) as info:
        await put(storage, AgentState(session_id="s"))
    assert info.value.code == "state_save_failed" and info.value.retryability == "conditional"
    assert "'s'" in info.value.message and str(tmp_path / "a-file") in info.value.message
    await storage.aclose()


async def test_an_unreadable_table_is_state_load_failed(store, db):
    await put(store, AgentState(session_id="s", history=_messages("x")))
    _sql(db, "DROP TABLE messages")
    with pytest.raises(ArkError) as info:
        await store.load("s")
    assert info.value.code == "state_load_failed" and info.value.layer == "storage"
    assert "'s'" in info.value.message and str(db) in info.value.message


# -- corrupt, foreign and newer files ------------------------------------------------------------

CORRUPTIONS = {
    "bad_json_body": "UPDATE messages SET body = '{\"role\": \"user\", ' WHERE idx = 3",
    "missing_idx": "DELETE FROM messages WHERE idx = 3",
    "extra_row": "INSERT INTO messages VALUES ('demo', 8, '{}')",
    "renumbered_row": "UPDATE messages SET idx = 20 WHERE idx = 7",
    "blob_body": "UPDATE messages SET body = x'00ff' WHERE idx = 0",
    "not_a_message": "UPDATE messages SET body = '{\"role\": 42}' WHERE idx = 1",
    "text_history_len": "UPDATE sessions SET history_len = 'eight'",
    "missing_usage_row": "DELETE FROM usages WHERE idx = 0",
    "bad_json_usage": "UPDATE usages SET body = '{\"input_tokens\": ' WHERE idx = 1",
    "header_of_another_session": "UPDATE sessions SET header = replace(header, '\"demo\"', '\"other\"')",
    "header_not_json": "UPDATE sessions SET header = 'garbage'",
}


async def _corrupted(db, full_state, kind: str) -> bytes:
    """Save ``full_state``, corrupt it with a connection of the test's own, return the file bytes.

    Both connections are closed first, so the write-ahead log is folded into the file
    and the bytes compared are the whole database.
    """
    storage = SQLiteStore(db)
    await put(storage, full_state)
    await storage.aclose()
    _sql(db, CORRUPTIONS[kind])
    return db.read_bytes()


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
async def test_a_corrupt_session_is_state_corrupt_and_the_file_is_unchanged(db, full_state, kind):
    before = await _corrupted(db, full_state, kind)
    storage = SQLiteStore(db)

    with pytest.raises(ArkError) as info:
        await storage.load("demo")
    await storage.aclose()

    assert info.value.code == "state_corrupt" and info.value.layer == "storage"
    assert "'demo'" in info.value.message and str(db) in info.value.message
    assert db.read_bytes() == before


async def test_a_missing_row_is_named_in_the_error(db, full_state):
    await _corrupted(db, full_state, "missing_idx")
    storage = SQLiteStore(db)
    with pytest.raises(ArkError) as info:
        await storage.load("demo")
    await storage.aclose()
    assert "messages: expected 8 rows, found 7" in info.value.message


async def test_mark_not_resumable_works_on_a_corrupt_session_and_keeps_its_rows(db, full_state):
    await _corrupted(db, full_state, "bad_json_body")
    rows_before = _sql(db, "SELECT idx, body FROM messages ORDER BY idx")
    storage = SQLiteStore(db)

    await storage.mark_not_resumable("demo")

    assert _sql(db, "SELECT not_resumable FROM sessions") == [(1,)]
    assert _sql(db, "SELECT idx, body FROM messages ORDER BY idx") == rows_before
    with pytest.raises(ArkError) as info:  # the mark does not make the rows readable
        await storage.load("demo")
    assert info.value.code == "state_corrupt"
    await storage.aclose()


async def test_a_marked_session_with_a_state_loads_not_resumable_and_a_save_clears_it(store, db):
    await put(store, AgentState(session_id="s", is_running=True))
    await store.mark_not_resumable("s")
    loaded = await store.load("s")
    assert loaded.not_resumable is True and loaded.is_running is True
    assert _sql(db, "SELECT header IS NOT NULL, not_resumable FROM sessions") == [(1, 1)]
    await put(store, AgentState(session_id="s"))
    assert _sql(db, "SELECT not_resumable FROM sessions") == [(0,)]


async def test_a_layout_3_file_moves_its_operations_and_events_to_row_tables(db):
    store = SQLiteStore(db)
    tools = Tools()
    runtime = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[
        ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')]), ark.ScriptedTurn(text="done")]),
        tools=tools.all, storage=store, session_id="s")
    await runtime.run("go")
    await runtime.aclose()
    operations, events = await store.list_operations("s"), await store.read_events("s")
    await store.aclose()
    assert operations and events
    # Back to layout 3: the two tables as WITHOUT ROWID, as an arknb before step 4 made them.
    statements = []
    for table in ("operations", "outbox"):
        (ddl,) = _sql(db, f"SELECT sql FROM sqlite_master WHERE type = 'table' AND name = '{table}'")[0]
        statements += [f"CREATE TABLE old_{table} AS SELECT * FROM {table}", f"DROP TABLE {table}",
                       ddl + " WITHOUT ROWID", f"INSERT INTO {table} SELECT * FROM old_{table}", f"DROP TABLE old_{table}"]
    statements += ["CREATE UNIQUE INDEX operations_purpose ON operations (session_id, purpose_key)",
                   "CREATE INDEX operations_order ON operations (session_id, ordinal)",
                   "UPDATE store_meta SET value = '3' WHERE key = 'layout_version'"]
    _sql(db, *statements)
    assert "WITHOUT ROWID" in _sql(db, "SELECT sql FROM sqlite_master WHERE name = 'operations'")[0][0]
    reopened = SQLiteStore(db)
    assert await reopened.list_operations("s") == operations
    assert [e.to_dict() for e in await reopened.read_events("s")] == [e.to_dict() for e in events]
    await reopened.aclose()
    assert _sql(db, "SELECT value FROM store_meta WHERE key = 'layout_version'") == [(str(LAYOUT_VERSION),)]
    for table in ("operations", "outbox"):
        assert "WITHOUT ROWID" not in _sql(db, f"SELECT sql FROM sqlite_master WHERE name = '{table}'")[0][0]
    indexes = {name for (name,) in _sql(db, "SELECT name FROM sqlite_master WHERE type = 'index' "
                                            "AND tbl_name = 'operations' AND sql IS NOT NULL")}
    assert indexes == {"operations_purpose", "operations_order"}


async def test_a_newer_layout_is_refused_and_the_file_is_unchanged(db):
    storage = SQLiteStore(db)
    await put(storage, AgentState(session_id="s"))
    await storage.aclose()
    _sql(db, "UPDATE store_meta SET value = ? WHERE key = 'layout_version'", params=(str(LAYOUT_VERSION + 1),))
    before = db.read_bytes()

    storage = SQLiteStore(db)
    for call in (storage.load("s"), storage.save(AgentState(session_id="s")), storage.list_sessions()):
        with pytest.raises(ArkError) as info:
            await call
        assert info.value.code == "store_version_unsupported" and info.value.layer == "storage"
        assert str(db) in info.value.message and str(LAYOUT_VERSION + 1) in info.value.message
    await storage.aclose()
    assert db.read_bytes() == before


async def test_a_newer_state_schema_in_the_header_is_refused(store, db):
    await put(store, AgentState(session_id="s"))
    _sql(db, "UPDATE sessions SET header = replace(header, '\"schema_version\":3', '\"schema_version\":99')")
    with pytest.raises(ArkError) as info:
        await store.load("s")
    assert info.value.code == "state_version_unsupported" and str(db) in info.value.message


async def test_an_old_schema_header_is_migrated_on_load(store, db):
    await put(store, AgentState(session_id="s", history=_messages("hi")))
    v1_header = '{"session_id": "s", "usage": [{"input_tokens": 3}]}'
    _sql(db, "UPDATE sessions SET header = ?", params=(v1_header,))
    state = await store.load("s")
    assert state.schema_version == SCHEMA_VERSION and state.usages[0].input_tokens == 3
    assert state.history[0].text == "hi"


async def test_a_file_that_is_not_a_database_is_refused_and_unchanged(db):
    db.write_bytes(b"my notes, not a database\n" * 100)
    before = db.read_bytes()
    storage = SQLiteStore(db)
    for call in (storage.load("s"), storage.save(AgentState(session_id="s")),
                 storage.mark_not_resumable("s"), storage.list_sessions()):
        with pytest.raises(ArkError) as info:
            await call
        assert info.value.code == "state_corrupt" and info.value.layer == "storage"
        assert str(db) in info.value.message and "not an SQLite database" in info.value.message
    await storage.aclose()
    assert db.read_bytes() == before
    assert sorted(p.name for p in db.parent.iterdir()) == [db.name]


async def test_another_applications_database_is_refused_and_unchanged(db):
    _sql(db, "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    before = db.read_bytes()
    storage = SQLiteStore(db)
    with pytest.raises(ArkError) as info:
        await put(storage, AgentState(session_id="s"))
    await storage.aclose()
    assert info.value.code == "state_corrupt"
    assert str(db) in info.value.message and "invoices" in info.value.message
    assert db.read_bytes() == before


async def test_an_empty_file_becomes_a_store(db):
    db.touch()
    storage = SQLiteStore(db)
    await put(storage, AgentState(session_id="s"))
    assert same(await storage.load("s"), AgentState(session_id="s"))
    await storage.aclose()


# -- closing and arguments -----------------------------------------------------------------------


async def test_a_closed_store_refuses_every_call_clearly(db):
    storage = SQLiteStore(db)
    await put(storage, AgentState(session_id="s"))
    await storage.aclose()
    await storage.aclose()  # closing again is fine
    storage.close()
    assert storage.closed and "closed" in repr(storage)

    calls = {"state_load_failed": [storage.load("s"), storage.list_sessions()],
             "state_save_failed": [storage.save(AgentState(session_id="s")),
                                   storage.mark_not_resumable("s"), storage.delete("s")]}
    for code, coroutines in calls.items():
        for call in coroutines:
            with pytest.raises(ArkError) as info:
                await call
            assert info.value.code == code and info.value.layer == "storage"
            assert "is closed" in info.value.message and str(db) in info.value.message
            assert not info.value.retryable


async def test_close_finishes_queued_saves_then_closes_the_connection(db):
    storage = SQLiteStore(db)
    pending = asyncio.ensure_future(storage.save(AgentState(session_id="s", event_sequence=3)))
    await asyncio.sleep(0)  # one step of the save task: its work is now queued on the worker
    storage.close()
    # Closing the last connection folds the write-ahead log into the file and removes it.
    assert not db.with_name(db.name + "-wal").exists()
    assert _sql(db, "SELECT json_extract(header, '$.event_sequence') FROM sessions") == [(3,)]
    await pending


def test_repr_names_the_file(db):
    storage = SQLiteStore(db)
    assert repr(storage) == f"SQLiteStore({str(db)!r})"
    storage.close()
    assert repr(storage) == f"SQLiteStore({str(db)!r}, closed)"


def test_a_relative_path_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    storage = SQLiteStore("state.sqlite3")
    assert storage.path == tmp_path / "state.sqlite3"
    storage.close()


@pytest.mark.parametrize("bad", [42, None, b"state.sqlite3", "", ["state.sqlite3"]])
def test_the_path_must_be_a_str_or_pathlike(bad):
    with pytest.raises(ArkError) as info:
        SQLiteStore(bad)  # type: ignore[arg-type]
    assert info.value.code == "invalid_argument" and info.value.layer == "config"


def test_a_directory_is_refused_with_its_name(tmp_path):
    with pytest.raises(ArkError) as info:
        SQLiteStore(tmp_path)
    assert info.value.code == "invalid_argument"
    assert f"{tmp_path} is a directory" in info.value.message


# -- a whole run ---------------------------------------------------------------------------------


async def test_a_run_paused_for_approval_is_completed_by_a_new_runtime_on_the_same_file(db):
    first_store = SQLiteStore(db)
    tools = Tools()
    runtime = ark.AgentRuntime(ark.ScriptedModel([dangerous_turn(text="I will clear it.")]), tools=tools.all,
                               storage=first_store, session_id="approval", system_prompt="Be careful.")
    paused = await runtime.run("Clear the cache")
    assert paused.stop_reason == "awaiting_approval" and tools.ran == []
    [pending] = runtime.controller.list_pending_approvals()
    await runtime.aclose()  # gives the session's lease up
    await first_store.aclose()
    _audit(db)

    second_store = SQLiteStore(db)
    tools = Tools()
    model = ark.ScriptedModel(["The cache is cleared."])
    restored = await ark.AgentRuntime.restore("approval", storage=second_store, model=model, tools=tools.all,
                                              system_prompt="Be careful.")
    [item] = restored.controller.list_pending_approvals()
    assert item.approval_id == pending.approval_id and item.tool_call.name == "clear_cache"

    decided = await restored.controller.approve(item.approval_id)
    result = await asyncio.wait_for(restored.current_run.wait(), 10)

    assert decided.ok and result.stop_reason == "completed" and result.text == "The cache is cleared."
    assert tools.ran == [("clear_cache", "/tmp/cache")]
    [request] = model.requests
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "tool"]
    final = await second_store.load("approval")
    assert final.pending_approval is None and final.last_stop_reason == "completed"
    assert not final.is_running and not final.not_resumable
    assert [m.role for m in final.history] == ["user", "assistant", "tool", "assistant"]
    assert_history_paired(final.history)
    # The restored runtime's saves only appended: the tool result, then the answer.
    assert _audited(db) == [("insert", 2), ("insert", 3)]
    await second_store.aclose()


@pytest.mark.parametrize("kind", ["bad_json_body", "not_a_message", "bad_json_usage", "nan_in_a_message",
                                  "unknown_field_in_a_message"])
async def test_a_row_edited_after_this_process_validated_it_is_validated_again_and_refused(db, full_state, kind):
    """The validated-row cache (restore cost): a row is trusted only as the exact text
    this process validated strictly; an edited row misses it and is refused as before."""
    from arknb.durable._known_rows import KNOWN_ROWS
    from arknb.durable._validated_rows import VALIDATED_ROWS

    corruptions = {**CORRUPTIONS,
                   "nan_in_a_message": "UPDATE messages SET body = replace(body, '\"is_error\":false', "
                                       "'\"is_error\":false,\"x\":NaN') WHERE idx = 2",
                   "unknown_field_in_a_message": "UPDATE messages SET body = replace(body, '\"is_error\":false', "
                                                 "'\"is_error\":false,\"colour\":\"red\"') WHERE idx = 2"}
    storage = SQLiteStore(db)
    await put(storage, full_state)
    await storage.aclose()
    KNOWN_ROWS.clear()  # as a new process: the rows are read (and validated) ...
    warm = SQLiteStore(db)
    loaded = await warm.load("demo")  # ... so every row is now validated and known
    await warm.aclose()
    assert len(VALIDATED_ROWS) >= len(loaded.history)
    again = SQLiteStore(db)
    assert await again.load("demo") == loaded  # a warm load is the same state
    await again.aclose()
    _sql(db, corruptions[kind])
    fresh = SQLiteStore(db)
    with pytest.raises(ArkError) as info:
        await fresh.load("demo")
    await fresh.aclose()
    assert info.value.code == "state_corrupt" and "'demo'" in info.value.message
