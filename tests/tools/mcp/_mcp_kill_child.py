"""Child process of the MCP SIGKILL test (test_mcp_durable.py).

One turn on a SQLiteStore or PostgresStore calls the kit server's ``put_item`` (c1, finishes at once) and
``slow_effect`` (c2, writes ``start`` then sleeps a minute). Once c1's operation is
committed completed and the server logged c2's start, the child prints ``READY`` and
blocks until the parent SIGKILLs it. The server logs every effect to ``<dir>/effects.log``.

Usage: python _mcp_kill_child.py <dir> <sqlite|postgres> [idempotent]   (postgres: the DSN is in <dir>/dsn)
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import arknb as ark

KIT = str(Path(__file__).with_name("kit_server.py"))


def server(directory: str, idempotent: bool) -> ark.MCPServer:
    return ark.MCPServer.stdio(sys.executable, [KIT], env={"ARKNB_MCP_LOG": str(Path(directory) / "effects.log")},
                               name="kit", idempotent={"slow_effect": True} if idempotent else None)


def turns() -> list:
    return [ark.ScriptedTurn(tool_calls=[
        ark.ToolCall(id="c1", name="put_item", arguments_json=json.dumps({"name": "a"}), index=0),
        ark.ToolCall(id="c2", name="slow_effect", arguments_json=json.dumps({"name": "z", "seconds": 60}), index=1)]),
        ark.ScriptedTurn(text="Both finished.")]


def open_store(directory: str, kind: str):
    if kind == "postgres":
        return ark.PostgresStore((Path(directory) / "dsn").read_text())
    return ark.SQLiteStore(Path(directory) / "arknb.sqlite3")


async def main(directory: str, kind: str, idempotent: bool) -> None:
    store = open_store(directory, kind)
    runtime = ark.AgentRuntime(ark.ScriptedModel(turns()), tools=[server(directory, idempotent)], storage=store,
                               session_id="s1")
    effects = Path(directory) / "effects.log"

    async def watch() -> None:
        while True:  # another process writes the log; the store is read back: poll both, until killed
            logged = effects.read_text().splitlines() if effects.exists() else []
            run_id = runtime.current_run.run_id if runtime.current_run is not None else None
            op = await store.find_operation("s1", f"{run_id}:c1") if run_id else None
            if op is not None and op.completed and any(line.startswith("start z") for line in logged):
                print("READY", flush=True)
                return
            await asyncio.sleep(0.02)

    handle = runtime.start("Run both")
    await watch()
    await asyncio.Event().wait()  # until SIGKILL
    print(f"UNEXPECTED {(await handle.wait()).stop_reason}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], len(sys.argv) > 3))
