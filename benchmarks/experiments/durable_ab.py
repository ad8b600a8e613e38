"""Durable commit path, before and after: subject (e)'s ms added per tool call on two
arknb trees, interleaved run by run in one process, so the comparison does not drift
with the load of a shared machine.

The other tree (e.g. ``main``) is copied to a temporary folder as the package
``arknb_base`` (see ``secret_redaction.py``), so both import side by side. Per round,
in a rotating order: each tree's run on its default in-memory storage and on its own
``SQLiteStore`` (WAL, ``synchronous=FULL``, a fresh session per run), the garbage
collector off during each timed run. Reported per tree: CPU and wall medians per run,
the ms added per tool call against the same tree's memory run (as
``benchmarks/durable.py`` reports it), and new / base.

With ``--profile`` instead: cProfile of this tree's sqlite runs, for reading against (it
sees the event loop's thread only, not the store's).

Not part of ``make bench``. Usage:
    mkdir /tmp/base && git archive main arknb | tar -x -C /tmp/base
    .venv/bin/python benchmarks/experiments/durable_ab.py --base /tmp/base [--runs 60]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import arknb  # noqa: E402

from secret_redaction import load_base  # noqa: E402
from workload import PROMPT, TOOL_CALLS, TURNS, add_args_json, chunk_text  # noqa: E402

CHUNKS = 20
sessions = itertools.count()


def build(ark, store):
    ran = []

    @ark.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        ran.append(1)
        return a + b

    turns = [ark.ScriptedTurn(text=[chunk_text(t, i) for i in range(CHUNKS)],
                              tool_calls=[ark.ToolCall(id=f"call_{t}", name="add", arguments_json=add_args_json(t))])
             for t in range(TOOL_CALLS)]
    turns.append(ark.ScriptedTurn(text=[chunk_text(TURNS - 1, i) for i in range(CHUNKS)]))
    runtime = ark.AgentRuntime(ark.ScriptedModel(turns), tools=[add], system_prompt="Be brief.",
                               storage=store, session_id=f"ab-{next(sessions)}")
    return runtime, ran


async def timed_run(ark, store) -> tuple[float, float]:
    runtime, ran = build(ark, store)
    gc.collect()
    gc.disable()
    try:
        c0, t0 = time.process_time_ns(), time.perf_counter_ns()
        success = False
        async for event in runtime.run_stream(PROMPT):
            if event.type == ark.EventTypes.AGENT_SUCCESS:
                success = True
        cpu, wall = time.process_time_ns() - c0, time.perf_counter_ns() - t0
    finally:
        gc.enable()
    await runtime.aclose()
    if not success or len(ran) != TOOL_CALLS:
        raise AssertionError("the run did not complete its tool calls")
    return cpu / 1e3, wall / 1e3


async def compare(trees: dict, runs: int, tmp: Path) -> dict:
    subjects = {}
    for label, ark in trees.items():
        subjects[(label, "memory")] = (ark, None)
        subjects[(label, "sqlite")] = (ark, ark.SQLiteStore(tmp / f"{label}.sqlite3"))
    samples: dict = {key: [] for key in subjects}
    for _ in range(3):
        for ark, store in subjects.values():
            await timed_run(ark, store)
    order = list(subjects.items())
    for r in range(runs):
        for key, (ark, store) in order[r % len(order):] + order[:r % len(order)]:
            samples[key].append(await timed_run(ark, store))
    for ark, store in subjects.values():
        if store is not None:
            await store.aclose()
    result: dict = {}
    if "base" in trees:
        result["paired"] = [n[0] - b[0] for n, b in zip(samples[("new", "sqlite")], samples[("base", "sqlite")],
                                                         strict=True)]
    for label in trees:
        mem, sql = samples[(label, "memory")], samples[(label, "sqlite")]
        mem_cpu, sql_cpu = statistics.median(s[0] for s in mem), statistics.median(s[0] for s in sql)
        mem_wall, sql_wall = statistics.median(s[1] for s in mem), statistics.median(s[1] for s in sql)
        result[label] = {"memory_cpu": mem_cpu, "sqlite_cpu": sql_cpu, "sqlite_wall": sql_wall,
                         "ms_cpu": (sql_cpu - mem_cpu) / TOOL_CALLS / 1000,
                         "ms_wall": (sql_wall - mem_wall) / TOOL_CALLS / 1000}
    return result


async def profile(runs: int, tmp: Path) -> None:
    import cProfile  # noqa: PLC0415
    import pstats  # noqa: PLC0415

    store = arknb.SQLiteStore(tmp / "profile.sqlite3")
    for _ in range(3):
        await timed_run(arknb, store)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(runs):
        await timed_run(arknb, store)
    profiler.disable()
    await store.aclose()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(35)
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, help="a tree holding the arknb package to compare against")
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="arknb-durable-ab-") as tmp:
        if args.profile:
            asyncio.run(profile(args.runs, Path(tmp)))
            return
        trees = {"new": arknb}
        if args.base is not None:
            trees = {"base": load_base(args.base, Path(tmp)), "new": arknb}
        result = asyncio.run(compare(trees, args.runs, Path(tmp)))
    print("| tree | memory µs CPU | sqlite µs CPU | sqlite µs wall | ms added/tool call CPU | (wall) |")
    print("|---|--:|--:|--:|--:|--:|")
    for label, r in result.items():
        if label == "paired":
            continue
        print(f"| {label} | {r['memory_cpu']:,.0f} | {r['sqlite_cpu']:,.0f} | {r['sqlite_wall']:,.0f} | "
              f"{r['ms_cpu']:.3f} | {r['ms_wall']:.3f} |")
    if "base" in result:
        print(f"\nnew / base, ms added per tool call (CPU): {result['new']['ms_cpu'] / result['base']['ms_cpu']:.2f}")
        paired = sorted(result["paired"])
        q = len(paired) // 4
        print(f"paired per round, new - base sqlite run (CPU): median {statistics.median(paired) / TOOL_CALLS / 1000:+.3f} "
              f"ms per tool call (quartiles {paired[q] / TOOL_CALLS / 1000:+.3f} .. "
              f"{paired[-1 - q] / TOOL_CALLS / 1000:+.3f})")


if __name__ == "__main__":
    main()
