"""An MCP call is a durable operation (DESIGN §13, §15): SIGKILL a kernel mid-call, restore.

The child (_mcp_kill_child.py) runs a real stdio server written with the SDK; the server
appends one line per side effect to a file, so the counts hold across processes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import arknb as ark
from arknb.durable import OperationStatus

import pytest

from ._mcp_kill_child import open_store, server, turns

CHILD = Path(__file__).with_name("_mcp_kill_child.py")


async def crash(tmp_path: Path, kind: str = "sqlite", *, idempotent: bool = False) -> None:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[3]))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(CHILD), str(tmp_path), kind, *(["idempotent"] if idempotent else []),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 90)
        assert line.decode().strip() == "READY", (line, (await proc.stderr.read()).decode()[-2000:])
    finally:
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
    assert proc.returncode == -signal.SIGKILL


def effects(tmp_path: Path) -> list[str]:
    return (tmp_path / "effects.log").read_text().splitlines()


async def restore(tmp_path: Path, kind: str = "sqlite", *, idempotent: bool = False):
    store = open_store(str(tmp_path), kind)
    model = ark.ScriptedModel(turns()[1:])
    runtime = await ark.AgentRuntime.restore("s1", storage=store, model=model, tools=[server(str(tmp_path), idempotent)])
    return store, runtime


@pytest.fixture(params=["sqlite", "postgres"])
def kind(request, tmp_path) -> str:
    if request.param == "postgres":  # a real PostgreSQL the suite starts (tests/durable/conftest.py)
        (tmp_path / "dsn").write_text(request.getfixturevalue("pg_dsn"))
    return request.param


async def test_a_killed_non_idempotent_mcp_call_is_in_doubt_and_a_finished_one_never_runs_again(tmp_path, kind):
    await crash(tmp_path, kind)
    # c1 and c2 run concurrently: their lines come in either order.
    assert sorted(line.split(" ")[0] for line in effects(tmp_path)) == ["put", "start"]
    assert not any(line.startswith("effect") for line in effects(tmp_path))  # the killed call never got there
    store, runtime = await restore(tmp_path, kind)
    try:
        [item] = runtime.controller.list_in_doubt()
        assert item.tool_call.name == "slow_effect" and item.attempts == 1
        ops = {op.purpose_key.split(":")[-1]: op for op in await store.list_operations("s1") if op.kind == "tool_call"}
        assert ops["c1"].completed and ops["c1"].raw_input["source"] == "MCP server 'kit'"
        assert ops["c2"].status is OperationStatus.INDETERMINATE
        assert (await runtime.controller.mark_done(item.operation_id, "checked by hand")).ok
        result = await asyncio.wait_for(runtime.current_run.wait(), 60)
        assert result.stop_reason == "completed"
        # Nothing ran again: put_item once, slow_effect started once.
        assert sorted(line.split(" ")[0:2] for line in effects(tmp_path)) == [["put", "a"], ["start", "z"]]
        answers = {m.tool_call_id: m.text for m in runtime.history if m.role == "tool"}
        assert answers == {"c1": "stored a", "c2": "checked by hand"}
    finally:
        await runtime.aclose()
        await store.aclose()


async def test_a_killed_idempotent_mcp_call_runs_again_with_the_same_key(tmp_path, kind):
    await crash(tmp_path, kind, idempotent=True)
    store, runtime = await restore(tmp_path, kind, idempotent=True)
    try:
        assert runtime.controller.list_in_doubt() == []
        # resume() runs the interrupted idempotent call again (no person asked); it sleeps
        # its 60 s again, so the test waits for the second start line, then cancels.
        run = asyncio.ensure_future(runtime.resume())
        for _ in range(600):  # the server writes in another process: poll its file, bounded
            starts = [line for line in effects(tmp_path) if line.startswith("start z")]
            if len(starts) == 2:
                break
            await asyncio.sleep(0.05)
        starts = [line for line in effects(tmp_path) if line.startswith("start z")]
        assert len(starts) == 2 and starts[0] == starts[1] and starts[0].endswith(":c2")  # same idempotency key
        assert [line for line in effects(tmp_path) if line.startswith("put")] == ["put a"]  # c1 never again
        runtime.cancel()
        await asyncio.wait_for(run, 30)
    finally:
        await runtime.aclose()
        await store.aclose()
