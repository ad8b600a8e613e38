"""PostgresStore survives a connection that died while idle (issue 26 item 4): a server
restart, ``idle_session_timeout`` or a killed backend costs no failed user action: the
store reconnects once and makes the call again, because the server had answered nothing
of it. And a store refuses to write a database whose layout a newer arknb changed while
the store had it open (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

import arknb as ark
from arknb.domain import ToolCall


def _dbname(dsn: str) -> str:
    return dict(part.split("=", 1) for part in dsn.split())["dbname"]


def _backends(admin, dsn: str) -> list[int]:
    with admin() as conn:
        return [pid for (pid,) in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (_dbname(dsn),)).fetchall()]


def _kill_backends(admin, dsn: str) -> int:
    """Terminate every connection to the test's database, waiting (up to 5 s) for each to end."""
    pids = _backends(admin, dsn)
    with admin() as conn:
        for pid in pids:
            conn.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
    return len(pids)


@ark.tool(risk="dangerous")
def wipe(path: str) -> str:
    """Delete a folder."""
    return f"wiped {path}"


def _chatty(runs: int) -> ark.ScriptedModel:
    return ark.ScriptedModel([f"answer {n}" for n in range(runs)])


async def test_a_killed_idle_connection_costs_no_failed_run(pg_dsn, pg_server):
    _, admin = pg_server
    store = ark.PostgresStore(pg_dsn)
    runtime = ark.AgentRuntime(_chatty(2), storage=store, session_id="s1")
    try:
        assert (await runtime.run("one")).stop_reason == "completed"
        assert _kill_backends(admin, pg_dsn) >= 1
        assert (await store.load("s1")).history[-1].text == "answer 0"  # the first call after the kill
        assert _kill_backends(admin, pg_dsn) >= 1
        second = await runtime.run("two")
        assert (second.stop_reason, second.final_message.text) == ("completed", "answer 1")
        assert [m.text for m in (await store.load("s1")).history][-1] == "answer 1"
    finally:
        await runtime.aclose()
        await store.aclose()


async def test_under_a_kill_before_every_action_every_run_completes_and_restores(pg_dsn, pg_server):
    _, admin = pg_server
    store = ark.PostgresStore(pg_dsn)
    runs = 8
    runtime = ark.AgentRuntime(_chatty(runs), storage=store, session_id="s1")
    killed = 0
    try:
        for n in range(runs):
            killed += _kill_backends(admin, pg_dsn)
            result = await runtime.run(f"question {n}")
            assert (result.stop_reason, result.final_message.text) == ("completed", f"answer {n}")
        assert killed >= runs - 1  # (before the first run the runtime had not connected yet)
    finally:
        await runtime.aclose()
    _kill_backends(admin, pg_dsn)
    restored = await ark.AgentRuntime.restore("s1", storage=store, model=_chatty(0))
    try:
        assert [m.text for m in restored.state.history if m.role == "assistant"] == [
            f"answer {n}" for n in range(runs)]
    finally:
        await restored.aclose()
        await store.aclose()


async def test_idle_session_timeout_costs_no_failed_run(pg_dsn, pg_server):
    _, admin = pg_server
    store = ark.PostgresStore(pg_dsn + " options='-c idle_session_timeout=200'")
    runtime = ark.AgentRuntime(_chatty(2), storage=store, session_id="s1", )
    try:
        assert (await runtime.run("one")).stop_reason == "completed"
        for _ in range(200):  # the server closes the idle connection after 200 ms
            if not _backends(admin, pg_dsn):
                break
            await asyncio.sleep(0.05)
        assert _backends(admin, pg_dsn) == [], "the server never ended the idle session"
        assert (await store.load("s1")).history[-1].text == "answer 0"  # the first call after the timeout
        assert (await runtime.run("two")).stop_reason == "completed"
    finally:
        await runtime.aclose()
        await store.aclose()


async def test_a_server_restart_costs_no_failed_decision_and_the_run_continues(pg_dsn, pg_restart):
    store = ark.PostgresStore(pg_dsn)
    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[ToolCall(id="c1", name="wipe",
                                                                     arguments_json='{"path": "/tmp/x"}')]),
                               "done"])
    runtime = ark.AgentRuntime(model, tools=[wipe], storage=store, session_id="s1")
    try:
        paused = await runtime.run("wipe it")
        assert paused.stop_reason == "awaiting_approval"
        [item] = runtime.state.pending_approval.items
        pg_restart()
        decided = await runtime.controller.approve(item.approval_id)
        assert decided.ok, decided.error
        if runtime.current_run is not None:
            await runtime.current_run.wait()
        assert runtime.state.history[-1].text == "done"
        pg_restart()
        events = await store.read_events("s1")
        assert events[-1].type == ark.EventTypes.AGENT_SUCCESS
    finally:
        await runtime.aclose()
        await store.aclose()


# -- a layout changed under an open store -----------------------------------------------------


def _upgrade_sqlite(path) -> None:
    from arknb.durable._database import LAYOUT_VERSION

    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE store_meta SET value = ? WHERE key = 'layout_version'", (str(LAYOUT_VERSION + 1),))


def _upgrade_postgres(dsn: str) -> None:
    import psycopg

    from arknb.durable.postgres_store import PG_LAYOUT_VERSION

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE store_meta SET value = %s WHERE key = 'layout_version'", (str(PG_LAYOUT_VERSION + 1),))


def _rows(store_name: str, where) -> list:
    if store_name == "sqlite":
        with sqlite3.connect(where) as conn:
            return conn.execute("SELECT sequence, event_type FROM outbox ORDER BY sequence").fetchall()
    import psycopg

    with psycopg.connect(where) as conn:
        return conn.execute("SELECT sequence, event_type FROM outbox ORDER BY sequence").fetchall()


@pytest.mark.parametrize("store_name", ["sqlite", "postgres"])
async def test_a_store_refuses_to_write_a_database_upgraded_while_it_was_open(store_name, tmp_path, request):
    if store_name == "sqlite":
        where = tmp_path / "s.db"
        store, upgrade = ark.SQLiteStore(where), (lambda: _upgrade_sqlite(where))
    else:
        where = request.getfixturevalue("pg_dsn")
        store, upgrade = ark.PostgresStore(where), (lambda: _upgrade_postgres(where))
    runtime = ark.AgentRuntime(_chatty(2), storage=store, session_id="s1")
    try:
        assert (await runtime.run("one")).stop_reason == "completed"
        before = _rows(store_name, where)
        upgrade()
        refused = await runtime.run("two")
        assert (refused.stop_reason, refused.error.code) == ("failed", "store_version_unsupported"), refused.error
        assert "changed layout while this store had it open" in refused.error.message
        assert "upgrade arknb" in refused.error.message
        assert _rows(store_name, where) == before  # nothing of the refused run was written
    finally:
        await runtime.aclose()
        await store.aclose()
