"""Durable invocation's cost (issue 11): the shared workload on durable stores.

For the workload of ``workload.py`` (10 turns, 20 chunks each, 9 ``add`` tool calls per
run), interleaved run by run in one process:

- ``memory``: ``AgentRuntime`` on its default in-memory storage (no operations: the
  baseline, measured in the same run);
- ``sqlite``: on ``ark.SQLiteStore`` (WAL, ``synchronous=FULL``): every model and tool
  call an operation, events in the outbox, a fresh session per run;
- ``postgres``: on ``ark.PostgresStore`` against a throwaway local server (skipped when
  PostgreSQL's binaries or psycopg are missing).

Reports per subject the median CPU and wall time per run, the ms added per tool call
against ``memory`` (target <= 2 ms), and commits per turn, of which fsync'd (target <= 3).

Then save and restore cost at turn 1,000 against turn 10 (target <= 1.5x) on each
durable store: ``append+save`` adds one turn to a saved N-turn session and saves it;
``restore`` is ``AgentRuntime.restore`` of that session by a new store instance (state
load, lease, in-doubt check). ``restore`` is warm: this process wrote or read the session
before (a re-run restore cell, a second runtime), so it knows what the rows hold
(``_known_rows.py``) and reads only the session row; ``cold restore`` forgets that and the
validated-row cache first, as a new process (a restarted kernel) starts without them, so
it reads and validates every row. Each timed call starts with nothing of the previous
one left to free: dropping a restored turn-1,000 runtime frees thousands of messages
(2-4 ms), which, when its variable was reassigned, was timed as part of the next restore
(a turn-10 one), and made the cold-restore ratio read 4.7-6.3x instead of about 10-13x.

Usage: python benchmarks/durable.py [--runs 40] [--reps 20]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import arknb as ark  # noqa: E402
from arknb_common import make_tool, script, stream_run  # noqa: E402
from pg_server import postgres_dsn  # noqa: E402
from arknb.durable._known_rows import KNOWN_ROWS  # noqa: E402
from arknb.durable._validated_rows import VALIDATED_ROWS  # noqa: E402
from workload import CHUNKS, TOOL_CALLS, TURNS, ToolCounter  # noqa: E402

TARGET_MS_PER_TOOL = 2.0
TARGET_SYNCS_PER_TURN = 3
TARGET_RATIO = 1.5
sessions = itertools.count()


async def one_run(store) -> tuple[float, float, int, int]:
    counter = ToolCounter()
    runtime = ark.AgentRuntime(script(CHUNKS), tools=[make_tool(counter)], system_prompt="Be brief.",
                               storage=store if store is not None else None, session_id=f"bench-{next(sessions)}")
    commits0 = getattr(store, "commits", 0)
    synced0 = getattr(store, "synced_commits", 0)
    c0, t0 = time.process_time_ns(), time.perf_counter_ns()
    await stream_run(runtime, counter, CHUNKS)
    cpu, wall = time.process_time_ns() - c0, time.perf_counter_ns() - t0
    commits = getattr(store, "commits", 0) - commits0
    synced = getattr(store, "synced_commits", 0) - synced0
    await runtime.aclose()
    return cpu / 1e3, wall / 1e3, commits, synced


async def workload(subjects: dict, runs: int) -> dict:
    samples = {name: [] for name in subjects}
    for _ in range(3):  # warm-up
        for name, store in subjects.items():
            await one_run(store)
    for r in range(runs):
        order = list(subjects.items())
        order = order[r % len(order):] + order[:r % len(order)]  # rotate: drift hits all alike
        for name, store in order:
            samples[name].append(await one_run(store))
    results = {}
    for name, rows in samples.items():
        results[name] = {"cpu_us": statistics.median(r[0] for r in rows),
                         "wall_us": statistics.median(r[1] for r in rows),
                         "commits_per_turn": statistics.median(r[2] for r in rows) / TURNS,
                         "synced_per_turn": statistics.median(r[3] for r in rows) / TURNS}
    base = results["memory"]
    for name, r in results.items():
        r["ms_per_tool_cpu"] = (r["cpu_us"] - base["cpu_us"]) / TOOL_CALLS / 1000
        r["ms_per_tool_wall"] = (r["wall_us"] - base["wall_us"]) / TOOL_CALLS / 1000
    return results


def _turn(n: int) -> tuple:
    call = ark.ToolCall(id=f"call_{n}", name="add", arguments_json=f'{{"a": {n}, "b": {n + 1}}}')
    return (ark.AgentMessage.assistant("x" * 200, tool_calls=[call]), ark.AgentMessage.tool(f"call_{n}", "5"))


async def save_restore(name: str, make_store, reps: int) -> dict:
    store = make_store()
    results: dict = {}
    sizes = (10, 1000)
    states = {}
    for n in sizes:
        history = (ark.AgentMessage.user("Add, many times."),) + sum((_turn(t) for t in range(n)), ())
        usages = tuple(ark.Usage(input_tokens=100 + t, output_tokens=10) for t in range(n))
        state = ark.AgentState(session_id=f"{name}-{n}-{next(sessions)}", history=history, usages=usages)
        revision = await store.save(state)
        states[n] = state.model_copy(update={"revision": revision})
    save = {n: [] for n in sizes}
    restore = {n: [] for n in sizes}
    cold = {n: [] for n in sizes}
    for r in range(reps):
        for n in sizes:
            state = states[n]
            c0 = time.process_time_ns()
            grown = state.model_copy(update={"history": state.history + _turn(n + r),
                                             "usages": state.usages + (ark.Usage(input_tokens=1),)})
            revision = await store.save(grown)
            save[n].append((time.process_time_ns() - c0) / 1e3)
            states[n] = grown.model_copy(update={"revision": revision})
            fresh = make_store()
            c0 = time.process_time_ns()
            runtime = await ark.AgentRuntime.restore(state.session_id, storage=fresh, model=ark.ScriptedModel([]))
            restore[n].append((time.process_time_ns() - c0) / 1e3)
            await runtime.aclose()
            await fresh.aclose()
            del runtime, fresh  # freed here, not inside the next timed call
    for r in range(reps):  # after the warm ones: clearing the cache here leaves them alone
        for n in sizes:
            fresh = make_store()
            KNOWN_ROWS.clear()
            VALIDATED_ROWS.clear()
            c0 = time.process_time_ns()
            runtime = await ark.AgentRuntime.restore(states[n].session_id, storage=fresh,
                                                     model=ark.ScriptedModel([]))
            cold[n].append((time.process_time_ns() - c0) / 1e3)
            await runtime.aclose()
            await fresh.aclose()
            del runtime, fresh
    await store.aclose()
    for n in sizes:
        results[n] = {"save_us": statistics.median(save[n]), "restore_us": statistics.median(restore[n]),
                      "cold_us": statistics.median(cold[n])}
    results["save_ratio"] = results[1000]["save_us"] / results[10]["save_us"]
    results["restore_ratio"] = results[1000]["restore_us"] / results[10]["restore_us"]
    results["cold_ratio"] = results[1000]["cold_us"] / results[10]["cold_us"]
    return results


def render(work: dict, saves: dict) -> str:
    lines = ["| subject | µs/run CPU | µs/run wall | ms added per tool call (CPU) | (wall) | commits/turn "
             "| fsync'd commits/turn |", "|---|--:|--:|--:|--:|--:|--:|"]
    for name, r in work.items():
        lines.append(f"| {name} | {r['cpu_us']:,.0f} | {r['wall_us']:,.0f} | {r['ms_per_tool_cpu']:.3f} | "
                     f"{r['ms_per_tool_wall']:.3f} | {r['commits_per_turn']:.1f} | {r['synced_per_turn']:.1f} |")
    lines.append("")
    for name, r in work.items():
        if name == "memory":
            continue
        lines.append(f"- {name}: {r['ms_per_tool_cpu']:.2f} ms CPU / {r['ms_per_tool_wall']:.2f} ms wall added per "
                     f"tool call (target <= {TARGET_MS_PER_TOOL} ms: "
                     f"{'met' if r['ms_per_tool_cpu'] <= TARGET_MS_PER_TOOL else 'NOT met'} on CPU); "
                     f"{r['synced_per_turn']:.1f} fsync'd commits per turn (target <= {TARGET_SYNCS_PER_TURN}: "
                     f"{'met' if r['synced_per_turn'] <= TARGET_SYNCS_PER_TURN else 'NOT met'})")
    lines += ["", "| store | turns | append+save µs CPU | restore µs CPU (warm) | cold restore µs CPU |",
              "|---|--:|--:|--:|--:|"]
    for name, r in saves.items():
        for n in (10, 1000):
            lines.append(f"| {name} | {n:,} | {r[n]['save_us']:,.0f} | {r[n]['restore_us']:,.0f} | "
                         f"{r[n]['cold_us']:,.0f} |")
    lines.append("")
    for name, r in saves.items():
        lines.append(f"- {name}: save at turn 1,000 / turn 10 = {r['save_ratio']:.2f}x, restore "
                     f"{r['restore_ratio']:.2f}x (target <= {TARGET_RATIO}x: save "
                     f"{'met' if r['save_ratio'] <= TARGET_RATIO else 'NOT met'}, restore "
                     f"{'met' if r['restore_ratio'] <= TARGET_RATIO else 'NOT met'}); cold restore "
                     f"{r['cold_ratio']:.2f}x ({'met' if r['cold_ratio'] <= TARGET_RATIO else 'NOT met'})")
    return "\n".join(lines) + "\n"


async def main_async(runs: int, reps: int) -> str:
    with tempfile.TemporaryDirectory(prefix="arknb-bench-durable-") as tmp, postgres_dsn() as dsn:
        db = Path(tmp) / "bench.sqlite3"
        subjects = {"memory": None, "sqlite": ark.SQLiteStore(db)}
        if dsn is not None:
            subjects["postgres"] = ark.PostgresStore(dsn)
        work = await workload(subjects, runs)
        for store in subjects.values():
            if store is not None:
                await store.aclose()
        saves = {"SQLiteStore": await save_restore("sqlite", lambda: ark.SQLiteStore(Path(tmp) / "saves.sqlite3"),
                                                   reps)}
        if dsn is not None:
            saves["PostgresStore"] = await save_restore("pg", lambda: ark.PostgresStore(dsn), reps)
    return render(work, saves)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    text = asyncio.run(main_async(args.runs, args.reps))
    print(text)
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "durable.md").write_text(text)


if __name__ == "__main__":
    main()
