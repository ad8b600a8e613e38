"""A replayed suite: cases per second at concurrency 4, and its memory at 50 vs 200 cases.

Each case replays the shared workload (10 turns x 20 chunks, 9 ``add`` calls, see
``workload.py``) from one cassette on a fresh runtime and is graded by three graders
(``contains``, ``tool_called``, ``max_turns``). Reported:

- ``ev.run_suite`` over 100 cases at concurrency 4 (median of several suites), beside
  the same suite on a ``ScriptedModel`` per case, in cases/s;
- the traced peak memory (``tracemalloc``) of suites of 50 and 200 cases, and the
  bytes of events their reports keep in the spool file instead of memory; once as the
  process would run, and once with a ``gc.collect()`` every 10 cases, which shows what
  the suite keeps alive apart from garbage the cycle collector reclaims in its own time.

Usage: python benchmarks/eval_suite.py [--suites 5] [--out benchmarks/results/eval_suite.md]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import arknb as ark  # noqa: E402
import arknb.eval as ev  # noqa: E402
from arknb_common import make_tool, script  # noqa: E402
from workload import CHUNKS, FINAL_TEXT, PROMPT, TOOL_CALLS, TURNS, ToolCounter  # noqa: E402

CASES = 100
CONCURRENCY = 4


def _cases(n: int, collect_every: int = 0) -> list[ev.Case]:
    graders = [ev.contains(FINAL_TEXT.split()[-1]), ev.tool_called("add"), ev.max_turns(TURNS)]
    if collect_every:
        finished = {"n": 0}

        @ev.grader
        def collect(case, result):
            finished["n"] += 1
            if finished["n"] % collect_every == 0:
                gc.collect()
            return True

        graders.append(collect)
    return [ev.Case(f"case {i}", PROMPT, graders=graders) for i in range(n)]


def _factory(kind: str, path: Path):
    def make_runtime(case):
        tool = make_tool(ToolCounter())
        model = ev.ReplayModel(path) if kind == "replay" else script(CHUNKS)
        return ark.AgentRuntime(model, tools=[tool], system_prompt="Be brief.")
    return make_runtime


async def _suite(kind: str, path: Path, n: int, collect_every: int = 0) -> tuple[float, float, ev.SuiteReport]:
    cases = _cases(n, collect_every)
    c0, t0 = time.process_time(), time.perf_counter()
    report = await ev.run_suite(cases, _factory(kind, path), concurrency=CONCURRENCY, progress=False)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    if len(report.passed) != n or any(r.tool_calls != TOOL_CALLS for r in report.rows):
        raise AssertionError(f"{kind}: {report.summary()}")
    return elapsed, cpu, report


async def _peak(path: Path, n: int, collect_every: int) -> tuple[int, int]:
    gc.collect()
    tracemalloc.start()
    try:
        _, _, report = await _suite("replay", path, n, collect_every)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, report._spool.size


async def measure(suites: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="arknb-bench-suite-"))
    path = folder / "workload.jsonl"
    counter = ToolCounter()
    await ark.AgentRuntime(ev.Recorder(script(CHUNKS), path), tools=[make_tool(counter)],
                           system_prompt="Be brief.").run(PROMPT)
    await _suite("replay", path, 8)                      # warm-up
    await _suite("scripted", path, 8)
    speed: dict[str, list[float]] = {"replay": [], "scripted": []}
    per_cpu: dict[str, list[float]] = {"replay": [], "scripted": []}
    for i in range(suites):
        for kind in (("replay", "scripted") if i % 2 == 0 else ("scripted", "replay")):
            elapsed, cpu, _ = await _suite(kind, path, CASES)
            speed[kind].append(CASES / elapsed)
            per_cpu[kind].append(CASES / cpu)
    memory = {}
    for collect_every in (0, 10):
        for n in (50, 200):
            memory[(collect_every, n)] = await _peak(path, n, collect_every)
    path.unlink()
    folder.rmdir()
    return {"speed": {k: statistics.median(v) for k, v in speed.items()},
            "per_cpu": {k: statistics.median(v) for k, v in per_cpu.items()}, "suites": suites, "memory": memory}


def render(r: dict) -> str:
    lines = [
        f"{CASES} cases at concurrency {CONCURRENCY}, each the shared workload (10 turns x {CHUNKS} chunks, "
        f"9 tool calls) and 3 graders; median of {r['suites']} suites.",
        "",
        "| each case runs on | cases/s (wall) | cases per CPU second |",
        "|--|--:|--:|",
        f"| ReplayModel (one cassette) | {r['speed']['replay']:,.1f} | {r['per_cpu']['replay']:,.1f} |",
        f"| ScriptedModel | {r['speed']['scripted']:,.1f} | {r['per_cpu']['scripted']:,.1f} |",
        "",
        "Memory of a replayed suite (tracemalloc peak) and the events its report keeps in the spool file:",
        "",
        "| cases | gc.collect() | traced peak | events in the spool |",
        "|--:|--|--:|--:|",
    ]
    for (every, n), (peak, spooled) in r["memory"].items():
        lines.append(f"| {n} | {'every 10 cases' if every else 'never (as a user runs it)'} | "
                     f"{peak / 1e6:,.2f} MB | {spooled / 1e6:,.2f} MB |")
    for every in (0, 10):
        small, large = r["memory"][(every, 50)][0], r["memory"][(every, 200)][0]
        lines.append(f"\n200 / 50 cases, gc {'every 10 cases' if every else 'never'}: {large / small:.2f}x peak "
                     "for 4x the cases")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", type=int, default=5)
    parser.add_argument("--out", type=Path, help="also write the table (Markdown) here")
    args = parser.parse_args()
    result = asyncio.run(measure(args.suites))
    text = render(result)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
