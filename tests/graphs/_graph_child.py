"""Child process of the graph crash tests (tests/graphs/test_graph_crash.py).

Usage: python _graph_child.py <sqlite DIR | postgres DSN> <kind> <scenario> <effects file> <mode> [stop_at] [idempotent]

mode ``run``: runs graph run ``g1`` until the node ``stop_at`` prints ``AT <node>`` (then
the parent kills it), or until it waits for a person (prints ``WAITING``, then blocks).
mode ``hold``: restores ``g1``, prints ``HELD <status>`` and holds its lease; a line
``answer`` on stdin then answers its question (``ANSWER ok`` or ``ANSWER <error code>``);
or it prints ``LOCKED <code>`` if it could not restore.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import arknb as ark  # noqa: E402
from _crash_graphs import Work, build, build_plan, open_store  # noqa: E402


async def main(where: str, kind: str, scenario: str, effects: str, mode: str, stop_at: str, idempotent: bool) -> None:
    store = open_store(kind, where)
    if scenario in ("plan", "plan_approval"):
        team = build_plan(store, Path(effects), stop_at=stop_at or None, dangerous=scenario == "plan_approval")
        run = await team.run("Fetch the tide tables", storage=store, run_id="g1")
        if scenario == "plan":
            return
        print(f"WAITING {run.status}", flush=True)
        await asyncio.Event().wait()
    graph = build(scenario, store, Path(effects), stop_at=stop_at or None, idempotent=idempotent)
    if mode == "run":
        run = await graph.run(Work(topic="tides"), storage=store, run_id="g1")
        print(f"WAITING {run.status}", flush=True)
    else:
        try:
            run = await graph.restore("g1", storage=store)
        except ark.ArkError as exc:
            print(f"LOCKED {exc.code}", flush=True)
            return
        print(f"HELD {run.status}", flush=True)
        line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        if line.strip() == "answer":  # answer the question as the (possibly no longer) owner
            try:
                await run.controller.answer_human(run.pending[0].item_id, True)
                print("ANSWER ok", flush=True)
            except ark.ArkError as exc:
                print(f"ANSWER {exc.code}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    args = sys.argv[1:] + [""] * 2
    asyncio.run(main(args[0], args[1], args[2], args[3], args[4], args[5], args[6] == "idempotent"))
