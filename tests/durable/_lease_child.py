"""Child process of the lease tests (tests/durable/test_leases.py).

Opens session ``s1`` on the given store, runs one input and prints ``READY``; then for
each line on stdin runs that line as input and prints ``RESULT <stop_reason> <error
code or ->``. An empty line (or the end of stdin) ends it.

Usage: python _lease_child.py <sqlite PATH | postgres DSN>
"""

from __future__ import annotations

import asyncio
import sys

import arknb as ark


def open_store(kind: str, where: str):
    if kind == "postgres":
        return ark.PostgresStore(where)
    return ark.SQLiteStore(where)


async def main(kind: str, where: str) -> None:
    store = open_store(kind, where)
    runtime = ark.AgentRuntime(ark.ScriptedModel(["first answer", "second answer", "third answer"]),
                               storage=store, session_id="s1")
    result = await runtime.run("hello")
    print(f"READY {result.stop_reason}", flush=True)
    loop = asyncio.get_running_loop()
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if not line:
            break
        result = await runtime.run(line)
        code = result.error.code if result.error else "-"
        print(f"RESULT {result.stop_reason} {code}", flush=True)
    await runtime.aclose()
    await store.aclose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
