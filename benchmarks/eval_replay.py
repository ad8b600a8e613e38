"""Replaying the shared workload from a cassette vs running it on ScriptedModel (issue 12
target: replay costs at most 1.2x).

Both sides run the workload of ``workload.py`` (10 turns of 20 text chunks, 9 ``add``
calls) through ``runtime.run_stream`` exactly as ``subjects/arknb_plain.py`` does, and
every run is checked (all chunks seen, the tool ran 9 times). The cassette is recorded
once from the scripted model (untimed). Each timed run gets a fresh runtime on a fresh
model, built untimed as in the shared harness: a ``ScriptedModel`` is consumed by a
run, and so is a ``ReplayModel``'s position in its cassette. The two sides alternate
run by run, so drift on a busy machine hits both alike; medians of CPU time (all
threads) and wall time are reported with their ratio.

Opening a cassette (``ReplayModel(path)``) is reported on its own: a suite opens one per
case, and an unchanged file is parsed only once per process.

Usage: python benchmarks/eval_replay.py [--runs 200] [--out benchmarks/results/eval_replay.md]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import arknb as ark  # noqa: E402
import arknb.eval as ev  # noqa: E402
from arknb_common import make_tool, script, stream_run  # noqa: E402
from workload import CHUNKS, PROMPT, ToolCounter  # noqa: E402

TARGET = 1.2


async def _record(path: Path) -> None:
    counter = ToolCounter()
    runtime = ark.AgentRuntime(ev.Recorder(script(CHUNKS), path), tools=[make_tool(counter)],
                               system_prompt="Be brief.")
    await stream_run(runtime, counter, CHUNKS)


async def _timed(make_model, counter: ToolCounter, tool) -> tuple[int, int]:
    runtime = ark.AgentRuntime(make_model(), tools=[tool], system_prompt="Be brief.")
    c0, t0 = time.process_time_ns(), time.perf_counter_ns()
    await stream_run(runtime, counter, CHUNKS)
    return time.process_time_ns() - c0, time.perf_counter_ns() - t0


async def measure(runs: int, warmup: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="arknb-bench-replay-"))
    path = folder / "workload.jsonl"
    await _record(path)
    counter = ToolCounter()
    tool = make_tool(counter)
    sides = {"scripted": lambda: script(CHUNKS), "replay": lambda: ev.ReplayModel(path)}
    samples = {name: ([], []) for name in sides}
    for i in range(warmup + runs):
        order = list(sides) if i % 2 == 0 else list(reversed(sides))
        for name in order:
            cpu, wall = await _timed(sides[name], counter, tool)
            if i >= warmup:
                samples[name][0].append(cpu)
                samples[name][1].append(wall)
    opens = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        ev.ReplayModel(path)
        opens.append(time.perf_counter_ns() - t0)
    # The first open of a file parses it; later opens of the unchanged file reuse the parse.
    from arknb.eval import cassettes
    cassettes._parsed.clear()
    t0 = time.perf_counter_ns()
    ev.ReplayModel(path)
    first_open = time.perf_counter_ns() - t0
    out = {name: {"cpu_us": statistics.median(cpu) / 1000, "wall_us": statistics.median(wall) / 1000}
           for name, (cpu, wall) in samples.items()}
    out["ratio_cpu"] = out["replay"]["cpu_us"] / out["scripted"]["cpu_us"]
    out["ratio_wall"] = out["replay"]["wall_us"] / out["scripted"]["wall_us"]
    out["open_us"] = statistics.median(opens) / 1000
    out["first_open_us"] = first_open / 1000
    out["cassette_bytes"] = path.stat().st_size
    out["runs"] = runs
    path.unlink()
    folder.rmdir()
    return out


def render(r: dict) -> str:
    met = "met" if r["ratio_cpu"] <= TARGET else "NOT met"
    return "\n".join([
        f"Shared workload (10 turns x {CHUNKS} chunks, 9 tool calls) via run_stream; {r['runs']} runs per side, "
        "alternating; medians.",
        "",
        "| model | CPU µs/run | wall µs/run |",
        "|--|--:|--:|",
        f"| ScriptedModel | {r['scripted']['cpu_us']:,.0f} | {r['scripted']['wall_us']:,.0f} |",
        f"| ReplayModel (cassette, timing=instant) | {r['replay']['cpu_us']:,.0f} | {r['replay']['wall_us']:,.0f} |",
        "",
        f"replay / scripted: {r['ratio_cpu']:.2f}x CPU, {r['ratio_wall']:.2f}x wall. Target <= {TARGET}x (CPU): {met}",
        f"Opening the cassette ({r['cassette_bytes']:,} bytes): {r['first_open_us']:,.0f} µs the first time "
        f"(parse), {r['open_us']:,.0f} µs when reopened unchanged (median).",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--out", type=Path, help="also write the table (Markdown) here")
    args = parser.parse_args()
    gc.collect()
    result = asyncio.run(measure(args.runs, args.warmup))
    text = render(result)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
