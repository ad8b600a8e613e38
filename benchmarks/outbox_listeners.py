"""What holding events until their commit, and a slow listener, cost a durable run (issue 26).

Each subject runs the same SQLite-backed workload (``--turns`` turns, each a text chunk and
a tool call, then a final answer), alternating subjects in rounds so all see the same
machine. Medians of wall time, and the ratio to the bare run (no listener) measured in
the same rounds:

- ``bare``: no listener;
- ``quick sync``: a sync listener that appends each event to a list (what widgets do);
- ``slow sync (1 ms)``: a sync listener that blocks 1 ms per event (``time.sleep``);
- ``slow async (1 s)``: an async listener that awaits 1 s per event (its deliveries
  beyond ``max_pending`` and over ``callback_timeout`` are dropped and counted).

Also printed: commits per run (the outbox's own commits for events no commit of the run
carried are counted in), events per run, ``bus.dropped``. A sync listener runs on the
event loop's thread, in line: its time is the run's time (DESIGN §4/§13 as this issue
leaves them say so); an async one is bounded and never slows the run.

Usage: python benchmarks/outbox_listeners.py [--turns 20] [--rounds 9]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import arknb as ark  # noqa: E402


@ark.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _script(turns: int) -> list:
    return [ark.ScriptedTurn(text=[f"step {i}"], tool_calls=[ark.ToolCall(
        id=f"c{i}", name="add", arguments_json=f'{{"a": {i}, "b": 2}}')]) for i in range(turns)] + ["done"]


async def _one(kind: str, turns: int) -> tuple[float, float, int, int, int]:
    folder = Path(tempfile.mkdtemp(prefix="arknb-outbox-bench-"))
    store = ark.SQLiteStore(folder / "s.db")
    bus = ark.EventBus(max_pending=8, callback_timeout=0.05)
    runtime = ark.AgentRuntime(ark.ScriptedModel(_script(turns)), tools=[add], storage=store, session_id="s",
                               event_bus=bus, max_turns=turns + 5)
    heard: list = []
    if kind == "quick sync":
        bus.subscribe("*", heard.append)
    elif kind == "slow sync (1 ms)":
        bus.subscribe("*", lambda event: (heard.append(event), time.sleep(0.001)))
    elif kind == "slow async (1 s)":
        async def slow(event):
            heard.append(event)
            await asyncio.sleep(1.0)
        bus.subscribe("*", slow)
    try:
        started, cpu = time.perf_counter(), time.process_time()
        result = await runtime.run("go")
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu
        assert result.stop_reason == "completed", result
        events = len(await store.read_events("s"))
        return elapsed, cpu, store.commits, events, bus.dropped
    finally:
        await runtime.aclose()
        await store.aclose()
        shutil.rmtree(folder, ignore_errors=True)


async def main_async(turns: int, rounds: int) -> str:
    kinds = ["bare", "quick sync", "slow sync (1 ms)", "slow async (1 s)"]
    times: dict[str, list[float]] = {k: [] for k in kinds}
    cpus: dict[str, list[float]] = {k: [] for k in kinds}
    extra: dict[str, tuple[int, int, int]] = {}
    for _ in range(rounds):
        for kind in kinds:
            elapsed, cpu, commits, events, dropped = await _one(kind, turns)
            times[kind].append(elapsed)
            cpus[kind].append(cpu)
            extra[kind] = (commits, events, dropped)
    base = statistics.median(times["bare"])
    base_cpu = statistics.median(cpus["bare"])
    lines = ["| subject | median wall ms | ratio to bare | median CPU ms | CPU ratio | commits/run | outbox events/run "
             "| bus.dropped |", "|---|--:|--:|--:|--:|--:|--:|--:|"]
    for kind in kinds:
        median, cpu = statistics.median(times[kind]), statistics.median(cpus[kind])
        commits, events, dropped = extra[kind]
        lines.append(f"| {kind} | {median * 1000:.1f} | {median / base:.2f} | {cpu * 1000:.1f} | {cpu / base_cpu:.2f} "
                     f"| {commits} | {events} | {dropped} |")
    return f"{turns} turns, {rounds} rounds (SQLite)\n\n" + "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    text = asyncio.run(main_async(args.turns, args.rounds))
    print(text)
    (Path(__file__).parent / "results").mkdir(exist_ok=True)
    (Path(__file__).parent / "results" / "outbox_listeners.md").write_text(text)


if __name__ == "__main__":
    main()
