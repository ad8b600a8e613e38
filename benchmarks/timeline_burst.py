"""What attaching a TimelineWidget costs a run (issue 15, item 1).

Kernel side only; the front end is faked (``fake_frontend.py``: every comm message is
JSON-encoded as the kernel would and counted). Four measurements:

1. **Burst**: one model call streams ``--chunks`` text chunks at once (the issue's
   case: 5,000 chunks, 13 ms without a timeline, 562 ms with one before this work).
   The run is consumed with ``run_stream`` both times; with the timeline, the timing
   also covers its last flush, so everything it sends for the run is inside. Runs
   with and without alternate; the ratio is of the CPU-time medians. Target <= 1.2x.
2. **The shared workload** (``workload.py``: 10 turns of 20 chunks and a tool call, what
   subject (d') of ``run.py`` times in separate processes) in one process, runs with and
   without a timeline alternating, so that both see the same machine. Target <= 1.2x.
3. **Kernel memory** after a 100,000-chunk run: what the timeline keeps (bounded by
   ``max_events``, default 10,000) measured with tracemalloc.
4. **Static HTML refresh**: one ``to_html()`` over a full store (what the companion
   output costs, at most about once a second and only once the widget is displayed).

Usage: python benchmarks/timeline_burst.py [--chunks 5000] [--reps 30] [--shared-reps 200]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

TARGET_RATIO = 1.2


async def one_run(ark, TimelineWidget, traffic, chunks: int, widget: bool) -> dict:
    model = ark.ScriptedModel([ark.ScriptedTurn(text=[f"w{i} " for i in range(chunks)])])
    runtime = ark.AgentRuntime(model, system_prompt="Be brief.")
    timeline = TimelineWidget(runtime) if widget else None
    traffic.reset()
    gc.collect()
    seen = 0
    c0, t0 = time.process_time(), time.perf_counter()
    async for event in runtime.run_stream("stream"):
        if event.type == "llm.chunk":
            seen += 1
    if timeline is not None:
        timeline._coalescer.flush_now()  # what the timeline still had to send
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    assert seen == chunks, (seen, chunks)
    if timeline is not None:
        timeline.close()
    return {"cpu_ms": cpu * 1000, "wall_ms": wall * 1000, "messages": traffic.messages, "bytes": traffic.bytes}


async def one_shared_run(ark, TimelineWidget, widget: bool) -> float:
    from arknb_common import make_tool, script, stream_run
    from workload import CHUNKS, ToolCounter

    counter = ToolCounter()
    runtime = ark.AgentRuntime(script(CHUNKS), tools=[make_tool(counter)], system_prompt="Be brief.")
    timeline = TimelineWidget(runtime) if widget else None
    gc.collect()
    c0 = time.process_time()
    await stream_run(runtime, counter, CHUNKS)  # asserts every chunk and tool call happened
    if timeline is not None:
        timeline._coalescer.flush_now()
    cpu = time.process_time() - c0
    if timeline is not None:
        timeline.close()
    return cpu * 1000


async def shared(ark, TimelineWidget, reps: int) -> dict:
    for _ in range(10):  # warm-up
        for widget in (False, True):
            await one_shared_run(ark, TimelineWidget, widget)
    plain, attached = [], []
    for i in range(reps):
        for widget in ((False, True) if i % 2 else (True, False)):
            (attached if widget else plain).append(await one_shared_run(ark, TimelineWidget, widget))
    out = {"runs": reps, "plain_cpu_ms": statistics.median(plain), "timeline_cpu_ms": statistics.median(attached)}
    out["ratio"] = out["timeline_cpu_ms"] / out["plain_cpu_ms"]
    out["paired_ratio"] = statistics.median(b / a for a, b in zip(plain, attached))
    return out


async def kept_memory(ark, TimelineWidget, chunks: int) -> dict:
    model = ark.ScriptedModel([ark.ScriptedTurn(text=[f"w{i} " for i in range(chunks)])])
    runtime = ark.AgentRuntime(model, system_prompt="Be brief.")
    gc.collect()
    tracemalloc.start()
    timeline = TimelineWidget(runtime)
    await runtime.run("stream")
    timeline._coalescer.flush_now()
    gc.collect()
    current, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    t0 = time.perf_counter()
    html = timeline.to_html()
    refresh_ms = (time.perf_counter() - t0) * 1000
    out = {"events_seen": timeline.forgotten + len(timeline.events), "events_kept": len(timeline.events),
           "retained_mib": current / 2**20, "to_html_ms": refresh_ms, "to_html_kib": len(html) / 1024}
    timeline.close()
    return out


async def measure(args) -> dict:
    import arknb as ark
    from arknb.widgets import TimelineWidget

    from fake_frontend import install

    traffic = install()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    for widget in (False, True):  # warm-up
        await one_run(ark, TimelineWidget, traffic, min(args.chunks, 500), widget)
    plain, attached = [], []
    for i in range(args.reps):
        order = (False, True) if i % 2 else (True, False)
        for widget in order:
            (attached if widget else plain).append(await one_run(ark, TimelineWidget, traffic, args.chunks, widget))
    med = lambda runs, k: statistics.median(r[k] for r in runs)  # noqa: E731
    out = {"chunks": args.chunks, "reps": args.reps, "load_average": load,
           "plain_cpu_ms": med(plain, "cpu_ms"), "timeline_cpu_ms": med(attached, "cpu_ms"),
           "plain_wall_ms": med(plain, "wall_ms"), "timeline_wall_ms": med(attached, "wall_ms"),
           "messages": med(attached, "messages"), "bytes": med(attached, "bytes")}
    out["ratio"] = out["timeline_cpu_ms"] / out["plain_cpu_ms"]
    # On a shared machine the fastest run is the least disturbed one: its ratio as well.
    out["min_ratio"] = min(r["cpu_ms"] for r in attached) / min(r["cpu_ms"] for r in plain)
    out["shared"] = await shared(ark, TimelineWidget, args.shared_reps)
    out["memory"] = await kept_memory(ark, TimelineWidget, args.memory_chunks)
    return out


def render(r: dict) -> str:
    m, sh = r["memory"], r["shared"]
    lines = [
        f"## A {r['chunks']:,}-chunk burst with and without a TimelineWidget ({r['reps']} runs each, alternating)",
        "",
        "| | CPU ms (median) | wall ms (median) |",
        "|---|--:|--:|",
        f"| run_stream, no timeline | {r['plain_cpu_ms']:.2f} | {r['plain_wall_ms']:.2f} |",
        f"| run_stream + TimelineWidget (incl. its last flush) | {r['timeline_cpu_ms']:.2f} | {r['timeline_wall_ms']:.2f} |",
        "",
        f"Ratio (CPU medians): **{r['ratio']:.2f}x** (target <= {TARGET_RATIO}x: "
        f"{'met' if r['ratio'] <= TARGET_RATIO else 'NOT met'}); of the fastest runs: {r['min_ratio']:.2f}x; "
        f"{r['messages']:.0f} comm messages, {r['bytes'] / 1024:.0f} KiB per run.",
        "",
        f"Machine load average at the start: {r['load_average']} (2 cores, shared).",
        "",
        f"## The shared workload (10 turns x 20 chunks + a tool call) with and without a TimelineWidget "
        f"({sh['runs']} runs each, alternating, one process)",
        "",
        f"CPU ms medians: {sh['plain_cpu_ms']:.2f} without, {sh['timeline_cpu_ms']:.2f} with; ratio "
        f"**{sh['ratio']:.2f}x** (target <= {TARGET_RATIO}x: {'met' if sh['ratio'] <= TARGET_RATIO else 'NOT met'}); "
        f"median of the paired ratios {sh['paired_ratio']:.2f}x.",
        "",
        f"After a {m['events_seen']:,}-event run the kernel keeps {m['events_kept']:,} events "
        f"({m['retained_mib']:.1f} MiB retained, tracemalloc); one static HTML refresh over them takes "
        f"{m['to_html_ms']:.1f} ms ({m['to_html_kib']:.0f} KiB).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chunks", type=int, default=5000)
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--shared-reps", type=int, default=200)
    p.add_argument("--memory-chunks", type=int, default=100_000)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    results = asyncio.run(measure(args))
    text = render(results)
    print(json.dumps(results, indent=2) if args.json else text)
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "timeline_burst.md").write_text(text)


if __name__ == "__main__":
    main()
