"""Bad input (issue 11): a corrupt or foreign database, a newer layout, a full disk and a
connection lost mid-commit each end with a clear ArkError, leave no half-written
operation, and the session still restores to its last committed point."""

from __future__ import annotations

import asyncio
import time

import pytest

import arknb as ark
from arknb.domain import AgentMessage, ToolCall
from arknb.durable import Commit, Operation, OperationPhase
from arknb.events import AgentEvent
from arknb.state import AgentState


def _add_tool():
    @ark.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return add


def _adding_model(turns: int = 2) -> ark.ScriptedModel:
    script = [ark.ScriptedTurn(text=f"step {n}", tool_calls=[
        ToolCall(id=f"c{n}", name="add", arguments_json=f'{{"a": {n}, "b": 1}}')]) for n in range(turns)]
    return ark.ScriptedModel([*script, ark.ScriptedTurn(text="done")])


async def test_restoring_from_a_file_that_is_not_a_database_is_state_corrupt_and_leaves_it(tmp_path):
    db = tmp_path / "arknb.sqlite3"
    db.write_bytes(b"notes, not a database\n" * 200)
    before = db.read_bytes()
    store = ark.SQLiteStore(db)
    with pytest.raises(ark.ArkError) as err:
        await ark.AgentRuntime.restore("s1", storage=store, model=ark.ScriptedModel([]))
    assert err.value.code == "state_corrupt" and str(db) in err.value.message
    await store.aclose()
    assert db.read_bytes() == before


async def test_a_foreign_database_is_refused_before_a_run_writes_anything(tmp_path):
    import sqlite3

    db = tmp_path / "arknb.sqlite3"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    before = db.read_bytes()
    store = ark.SQLiteStore(db)
    runtime = ark.AgentRuntime(_adding_model(), tools=[_add_tool()], storage=store, session_id="s1")
    with pytest.raises(ark.ArkError) as err:  # the session is loaded (and its lease taken) first
        await runtime.run("go")
    assert err.value.code == "state_corrupt" and "invoices" in err.value.message
    await store.aclose()
    assert db.read_bytes() == before


async def test_a_newer_layout_is_refused_on_restore_and_left_untouched(tmp_path):
    import sqlite3

    from arknb.durable._database import LAYOUT_VERSION

    db = tmp_path / "arknb.sqlite3"
    store = ark.SQLiteStore(db)
    runtime = ark.AgentRuntime(ark.ScriptedModel(["hi"]), storage=store, session_id="s1")
    await runtime.run("hello")
    await runtime.aclose()
    await store.aclose()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE store_meta SET value = ? WHERE key = 'layout_version'", (str(LAYOUT_VERSION + 1),))
    before = db.read_bytes()
    store = ark.SQLiteStore(db)
    with pytest.raises(ark.ArkError) as err:
        await ark.AgentRuntime.restore("s1", storage=store, model=ark.ScriptedModel([]))
    assert err.value.code == "store_version_unsupported" and "upgrade arknb" in err.value.message
    await store.aclose()
    assert db.read_bytes() == before


async def test_a_full_disk_fails_the_run_clearly_and_the_session_restores_to_its_last_commit(tmp_path):
    db = tmp_path / "arknb.sqlite3"
    store = ark.SQLiteStore(db)
    big = "x" * 200_000

    @ark.tool
    def fetch(n: int) -> str:
        """Fetch a big page."""
        return big if n == 1 else "small"

    model = ark.ScriptedModel([
        ark.ScriptedTurn(text="first", tool_calls=[ToolCall(id="c0", name="fetch", arguments_json='{"n": 0}')]),
        ark.ScriptedTurn(text="second", tool_calls=[ToolCall(id="c1", name="fetch", arguments_json='{"n": 1}')]),
        ark.ScriptedTurn(text="done")])
    runtime = ark.AgentRuntime(model, tools=[fetch], storage=store, session_id="s1")

    limit_set = asyncio.Event()

    def limit(conn):  # per connection: the worker's, and the one commits are made in line on
        conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0] + 8}")

    def limit_after_first_batch(event):
        # Sync, so the limit is in place before the run goes on (listeners hear tool.after
        # once it is committed): the worker gets it ahead of any later commit it makes.
        if event.payload["call"]["id"] == "c0" and not limit_set.is_set():
            store._worker.post(limit, store._conn)
            if store._here is not None:
                limit(store._here)
            limit_set.set()

    runtime.bus.subscribe(ark.EventTypes.TOOL_AFTER, limit_after_first_batch)
    result = await runtime.run("go")
    assert result.stop_reason == "failed" and result.error.code == "state_save_failed", result.error
    assert "full" in result.error.message and result.error.retryable
    await runtime.aclose()
    await store.aclose()

    reopened = ark.SQLiteStore(db)  # a new connection: no page limit
    ops = await reopened.list_operations("s1")
    assert all(op.phase in (OperationPhase.EXECUTING, OperationPhase.COMPLETED) for op in ops)
    big_op = [op for op in ops if op.purpose_key.endswith(":c1")]
    assert not big_op or big_op[0].raw_result is None  # never half-written
    saved = await reopened.load("s1")
    assert [m.text for m in saved.history][:2] == ["go", "first"]  # the last committed point
    await reopened.aclose()


async def test_a_connection_killed_mid_commit_writes_nothing_and_the_next_commit_reconnects(pg_dsn, pg_server):
    import psycopg

    _, admin = pg_server
    victim = f"{pg_dsn} application_name=arknb_victim"
    store = ark.PostgresStore(victim)
    first = AgentState(session_id="s1", history=(AgentMessage.user("committed"),))
    revision = await store.save(first)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("CREATE FUNCTION slow_insert() RETURNS trigger AS $$ BEGIN PERFORM pg_sleep(30); RETURN NEW; "
                     "END $$ LANGUAGE plpgsql")
        conn.execute("CREATE TRIGGER slow BEFORE INSERT ON operations FOR EACH ROW EXECUTE FUNCTION slow_insert()")
    op = Operation(operation_id="op_victim", session_id="s1", run_id="r1", kind="tool_call", purpose_key="r1:c1",
                   request_event_id="req").advance(OperationPhase.EXECUTING, at=time.time())
    newer = first.model_copy(update={"revision": revision, "history": first.history + (AgentMessage.user("lost"),)})
    commit = asyncio.ensure_future(store.commit(Commit(session_id="s1", state=newer, operations=(op,), events=(
        AgentEvent("r1:1", "tool.before", "s1", "r1", 1, 1.0, {}),))))
    with admin() as conn:
        deadline = time.monotonic() + 30
        while not conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'arknb_victim' "
                               "AND query LIKE 'INSERT INTO operations%'").fetchone()[0]:
            assert time.monotonic() < deadline, "the commit never reached the operations insert"
            await asyncio.sleep(0.05)  # an external condition with no notification to await
        [(killed,)] = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                   "WHERE application_name = 'arknb_victim'").fetchall()
    assert killed
    with pytest.raises(ark.ArkError) as err:
        await commit
    assert err.value.code == "state_save_failed" and "connection" in err.value.message and err.value.retryable
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("DROP TRIGGER slow ON operations")
    # Nothing of the killed transaction is there; the session is at its last commit.
    assert await store.get_operation("op_victim") is None and await store.read_events("s1") == []
    saved = await store.load("s1")  # this call reconnects
    assert saved.revision == revision and [m.text for m in saved.history] == ["committed"]
    assert await store.save(newer) == revision + 1
    await store.aclose()
