"""Child process of tests/durable/test_cancel_in_doubt.py: one batch of two ``send``
calls (c1, c2) that both block once they have appended ``send <n>`` to
``<dir>/effects.log``; it prints ``READY`` once both run, then blocks until SIGKILL, so a
restore finds both in doubt.

Usage: python _two_doubts_child.py <sqlite|postgres> <dir>  (postgres: the DSN is in <dir>/dsn)
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import arknb as ark

TURN = ark.ScriptedTurn(tool_calls=[
    ark.ToolCall(id=f"c{n}", name="send", arguments_json=json.dumps({"n": n}), index=n - 1) for n in (1, 2)])


def make_tools(directory: str | Path, *, first_process: bool) -> list:
    log = Path(directory) / "effects.log"
    both = asyncio.Event() if first_process else None

    @ark.tool
    async def send(n: int) -> str:
        """Send a message (a side effect)."""
        with log.open("a") as handle:
            handle.write(f"send {n}\n")
        if both is not None:
            if len(log.read_text().split("\n")) > 2:
                print("READY", flush=True)
            await both.wait()  # until SIGKILL
        return f"sent {n}"

    return [send]


def open_store(kind: str, directory: str | Path):
    if kind == "postgres":
        return ark.PostgresStore((Path(directory) / "dsn").read_text())
    return ark.SQLiteStore(Path(directory) / "arknb.sqlite3")


async def main(kind: str, directory: str) -> None:
    store = open_store(kind, directory)
    runtime = ark.AgentRuntime(ark.ScriptedModel([TURN]), tools=make_tools(directory, first_process=True),
                               storage=store, session_id="s1")
    result = await runtime.run("go")
    print(f"UNEXPECTED {result.stop_reason}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
