"""Leases (DESIGN §13, issue 11 item 7) with two processes: a live owner locks the
session, takeover bumps the generation, the stale owner's next commit fails with
lease_lost and leaves the new owner's rows alone, a killed owner frees it at once."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

import arknb as ark
from arknb.durable import MemoryStore

CHILD = Path(__file__).with_name("_lease_child.py")
ROOT = Path(__file__).resolve().parents[2]


class Child:
    """The other process: owns session s1 until told otherwise."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, kind: str, where: str) -> Child:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(CHILD), kind, where, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        child = cls(proc)
        assert await child.line() == "READY completed"
        return child

    async def line(self) -> str:
        raw = await asyncio.wait_for(self.proc.stdout.readline(), 60)
        if not raw:
            raise AssertionError((await self.proc.stderr.read()).decode()[-3000:])
        return raw.decode().strip()

    async def run(self, text: str) -> str:
        self.proc.stdin.write(text.encode() + b"\n")
        await self.proc.stdin.drain()
        return await self.line()

    async def stop(self) -> None:
        if self.proc.returncode is None:
            self.proc.stdin.write(b"\n")
            await self.proc.stdin.drain()
            try:
                await asyncio.wait_for(self.proc.wait(), 30)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


async def check_leases(kind: str, where: str, open_store) -> None:
    child = await Child.start(kind, where)
    try:
        store = open_store()
        with pytest.raises(ark.ArkError) as err:
            await ark.AgentRuntime.restore("s1", storage=store, model=ark.ScriptedModel([]))
        assert err.value.code == "session_locked" and err.value.layer == "storage"
        assert f":{child.proc.pid}:" in err.value.message and "takeover=True" in err.value.message

        runtime = await ark.AgentRuntime.restore("s1", storage=store, model=ark.ScriptedModel(["mine"]),
                                                 takeover=True)
        assert runtime._invocations.lease.generation == 2
        assert (await runtime.run("new owner")).stop_reason == "completed"
        mine = await store.load("s1")

        # The stale owner's next commit fails and writes nothing.
        assert await child.run("stale owner") == "RESULT failed lease_lost"
        after = await store.load("s1")
        assert after.revision == mine.revision and after.history == mine.history
        assert [m.text for m in after.history if m.role == "user"] == ["hello", "new owner"]
        await runtime.aclose()
        await store.aclose()
    finally:
        await child.stop()


async def test_two_processes_on_sqlite_lock_take_over_and_lose_the_lease(tmp_path):
    db = tmp_path / "arknb.sqlite3"
    await check_leases("sqlite", str(db), lambda: ark.SQLiteStore(db))


async def test_a_killed_owner_frees_the_session_at_once(tmp_path):
    db = tmp_path / "arknb.sqlite3"
    child = await Child.start("sqlite", str(db))
    child.proc.send_signal(signal.SIGKILL)
    await child.proc.wait()
    store = ark.SQLiteStore(db)
    runtime = await asyncio.wait_for(ark.AgentRuntime.restore("s1", storage=store, model=ark.ScriptedModel([])), 10)
    assert runtime._invocations.lease.generation == 2  # a new owner, no waiting for the 30 s expiry
    await runtime.aclose()
    await store.aclose()


async def test_in_one_process_the_newest_runtime_takes_the_session_and_aclose_frees_it_for_others(tmp_path):
    db = tmp_path / "arknb.sqlite3"
    store = ark.SQLiteStore(db)
    first = ark.AgentRuntime(ark.ScriptedModel(["hi"]), storage=store, session_id="s1")
    await first.run("hello")
    # The same process (a notebook cell run again): the newer runtime owns the session.
    second = await ark.AgentRuntime.restore("s1", storage=store, model=ark.ScriptedModel([]))
    assert second.history[-1].text == "hi"
    # Another process is locked out until the last runtime of this one closes.
    child_locked = await _restore_in_child(db)
    assert "session_locked" in child_locked
    await first.aclose()
    assert "session_locked" in await _restore_in_child(db)  # the second runtime still holds it
    await second.aclose()
    assert (await _restore_in_child(db)).strip() == "restored hi"
    await store.aclose()


async def _restore_in_child(db: Path) -> str:
    code = ("import asyncio, sys, arknb as ark\n"
            "async def main():\n"
            "    store = ark.SQLiteStore(sys.argv[1])\n"
            "    try:\n"
            "        rt = await ark.AgentRuntime.restore('s1', storage=store, model=ark.ScriptedModel([]))\n"
            "        print('restored', rt.history[-1].text)\n"
            "        await rt.aclose()\n"
            "    except ark.ArkError as exc:\n"
            "        print(exc.code)\n"
            "    await store.aclose()\n"
            "asyncio.run(main())\n")
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", code, str(db), stdout=asyncio.subprocess.PIPE,
                                                env=dict(os.environ, PYTHONPATH=str(ROOT)))
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    return out.decode()


async def test_two_processes_on_postgres_lock_take_over_and_lose_the_lease(pg_dsn):
    await check_leases("postgres", pg_dsn, lambda: ark.PostgresStore(pg_dsn))


class RenewCounting(MemoryStore):
    def __init__(self) -> None:
        super().__init__(lease_ttl=0.15)
        self.renewed = asyncio.Event()

    async def renew_lease(self, lease, *, ttl):
        renewed = await super().renew_lease(lease, ttl=ttl)
        self.renewed.set()
        return renewed


async def test_an_open_runtime_renews_its_lease_and_a_dropped_one_stops_renewing():
    import gc

    store = RenewCounting()
    runtime = ark.AgentRuntime(ark.ScriptedModel(["hi"]), storage=store, session_id="s1")
    await runtime.run("hello")
    before = runtime._invocations.lease.expires_at
    store.renewed.clear()  # a renewal during the run (a slow machine) is already in `before`: wait for the next
    await asyncio.wait_for(store.renewed.wait(), 10)
    assert runtime._invocations.lease.expires_at > before
    renewer = runtime._invocations._renewer
    del runtime
    gc.collect()
    await asyncio.wait_for(renewer, 10)  # the task ends by itself once the runtime is gone


async def test_fresh_true_on_a_durable_store_starts_over_and_keeps_owning_the_session(tmp_path):
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    first = ark.AgentRuntime(ark.ScriptedModel(["one"]), storage=store, session_id="s1")
    await first.run("hi")
    await first.aclose()
    again = ark.AgentRuntime(ark.ScriptedModel(["two"]), storage=store, session_id="s1", fresh=True)
    result = await again.run("again")
    assert result.stop_reason == "completed", result.error
    assert [m.text for m in (await store.load("s1")).history] == ["again", "two"]
    assert [op.run_id for op in await store.list_operations("s1")] == [result.run_id]  # the old run's are gone
    await again.aclose()
    await store.aclose()
