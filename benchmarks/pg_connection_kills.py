"""PostgresStore under frequent connection kills (issue 26: "under frequent connection
kills no run completed").

A throwaway server on loopback (``pg_server.py``); one runtime on a ``PostgresStore`` runs
``--runs`` short runs (a tool call, then an answer), one after another, while a killer
thread terminates every connection of the store's database (``pg_terminate_backend``)
every ``--every`` seconds. Prints how many runs completed, how many failed and with which
error codes, and how many backends were killed. A kill that lands while a connection sits
idle costs nothing since issue 26 (the store reconnects once); one that lands inside a
transaction fails that call, honestly.

Usage: python benchmarks/pg_connection_kills.py [--runs 40] [--every 0.02]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import arknb as ark  # noqa: E402
from pg_server import postgres_dsn  # noqa: E402


@ark.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _killer(dsn: str, every: float, stop: threading.Event, killed: list[int]) -> None:
    import psycopg

    name = dict(part.split("=", 1) for part in dsn.split())["dbname"]
    admin = " ".join(p for p in dsn.split() if not p.startswith("dbname=")) + " dbname=postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        while not stop.wait(every):
            rows = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                "WHERE datname = %s AND pid <> pg_backend_pid()", (name,)).fetchall()
            killed[0] += sum(1 for (ok,) in rows if ok)


async def main_async(dsn: str, runs: int, every: float) -> str:
    turns = []
    for i in range(runs):
        turns += [ark.ScriptedTurn(tool_calls=[ark.ToolCall(id=f"c{i}", name="add",
                                                            arguments_json=f'{{"a": {i}, "b": 1}}')]), f"done {i}"]
    store = ark.PostgresStore(dsn)
    runtime = ark.AgentRuntime(ark.ScriptedModel(turns), tools=[add], storage=store, session_id="kills",
                               loop_detector=ark.LoopDetector(threshold=10_000, window=10_000))
    outcomes: Counter = Counter()
    stop, killed = threading.Event(), [0]
    killer = threading.Thread(target=_killer, args=(dsn, every, stop, killed), daemon=True)
    killer.start()
    try:
        for i in range(runs):
            try:
                result = await runtime.run(f"question {i}")
            except ark.ArkError as exc:
                outcomes[f"raised {exc.code}"] += 1
                if outcomes[f"raised {exc.code}"] == 1:
                    print("first:", exc)
                continue
            outcomes[result.stop_reason if result.error is None else f"{result.stop_reason} {result.error.code}"] += 1
    finally:
        stop.set()
        killer.join(10)
        await runtime.aclose()
        await store.aclose()
    lines = [f"{runs} runs, every connection killed every {every:g} s ({killed[0]} backends killed)", "",
             "| outcome | runs |", "|---|--:|"]
    lines += [f"| {name} | {count} |" for name, count in sorted(outcomes.items())]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--every", type=float, default=0.02)
    args = parser.parse_args()
    with postgres_dsn() as dsn:
        if dsn is None:
            raise SystemExit("PostgreSQL could not start (binaries or psycopg missing)")
        text = asyncio.run(main_async(dsn, args.runs, args.every))
    print(text)
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "pg_connection_kills.md").write_text(text)


if __name__ == "__main__":
    main()
