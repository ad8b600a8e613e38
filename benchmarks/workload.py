"""The shared workload and the timing harness every benchmark subject uses.

One run = ``TURNS`` model calls. In each of the first ``TURNS - 1`` turns the model
streams ``CHUNKS`` text deltas and then one call to ``add(a, b)``; the last turn
streams ``CHUNKS`` deltas and finishes. The consumer iterates the streamed events as
a user would and counts the text deltas it saw. Every run asserts the tool ran
``TURNS - 1`` times and that every text delta reached the consumer, so no subject can
win by skipping work (issue 6, point 2).

A subject module defines ``async def make(chunks) -> Run`` (untimed set-up: build the
agent, the scripted model, hooks, widgets) where ``Run`` is an ``async () -> Outcome``
(timed: one full run), and calls :func:`main` with it. :func:`main` prints one JSON
line that ``benchmarks/run.py`` collects. A subject that cannot run yet (a feature
not built) calls :func:`report_unavailable` instead.

Set-up is excluded from the timing on purpose: users build an agent (or compile a
graph) once and run it many times. Where a framework's run consumes its model script
(arknb's ``ScriptedModel``), ``make`` is called again before each run, still untimed.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = [
    "TURNS",
    "CHUNKS",
    "TOOL_CALLS",
    "add_args_json",
    "FINAL_TEXT",
    "Outcome",
    "ToolCounter",
    "chunk_text",
    "main",
    "report_unavailable",
]

TURNS = 10
CHUNKS = 20
WARMUP_SECONDS = 2.0  # warm-up stops after this long (but runs at least 3 times)
TOOL_CALLS = TURNS - 1


def add_args_json(turn: int) -> str:
    """The arguments of turn ``turn``'s ``add`` call. They differ per turn: a real
    agent does not repeat a call verbatim, and arknb's loop detector (rightly) ends a
    run that calls the same tool with the same arguments 3 times in 8."""
    return f'{{"a": {turn}, "b": {turn + 1}}}'

PROMPT = "Add 2 and 3, nine times."


def chunk_text(turn: int, index: int) -> str:
    """The text of delta ``index`` in ``turn`` (0-based); short, like real tokens."""
    return f"t{turn}c{index} "


def final_text(chunks: int = CHUNKS) -> str:
    return "".join(chunk_text(TURNS - 1, i) for i in range(chunks))


FINAL_TEXT = final_text()


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one run observed; checked after every timed run."""

    text_chunks: int
    tool_calls: int


class ToolCounter:
    """Counts executions of ``add``; reset before each run."""

    def __init__(self) -> None:
        self.count = 0

    def add(self, a: int, b: int) -> int:
        self.count += 1
        return a + b


Run = Callable[[], Awaitable[Outcome]]
Make = Callable[[int], Awaitable[Run]]


def _check(outcome: Outcome, chunks: int) -> None:
    expected_chunks = TURNS * chunks
    if outcome.tool_calls != TOOL_CALLS:
        raise AssertionError(f"tool ran {outcome.tool_calls} times, expected {TOOL_CALLS}")
    if outcome.text_chunks != expected_chunks:
        raise AssertionError(
            f"consumer saw {outcome.text_chunks} text chunks, expected {expected_chunks}"
        )


@dataclass
class Timings:
    """Per-run times (ns) for one chunk count."""

    wall: list[int]
    cpu: list[int]


async def _measure(
    make: Make, *, chunk_counts: tuple[int, ...], fresh_per_run: bool, warmup: int,
    min_runs: int, max_runs: int, max_seconds: float, profiler=None,
) -> dict[int, Timings]:
    """Warm up, then time runs, cycling through ``chunk_counts`` run by run (so that
    drift on a busy machine affects every chunk count alike and the runs pair up)."""
    runs = {c: await make(c) for c in chunk_counts}
    warm_deadline = time.perf_counter() + WARMUP_SECONDS
    for i in range(warmup):
        if i >= 3 and time.perf_counter() > warm_deadline:
            break
        for c in chunk_counts:
            _check(await runs[c](), c)
            if fresh_per_run:
                runs[c] = await make(c)
    out = {c: Timings([], []) for c in chunk_counts}
    first = out[chunk_counts[0]]
    deadline = time.perf_counter() + max_seconds
    while len(first.wall) < max_runs and (len(first.wall) < min_runs
                                          or time.perf_counter() < deadline):
        for c in chunk_counts:
            if fresh_per_run:
                runs[c] = await make(c)
            profiling = profiler is not None and c == chunk_counts[0]
            if profiling:  # the timed part only, never make()
                profiler.start()
            c0 = time.process_time_ns()
            t0 = time.perf_counter_ns()
            outcome = await runs[c]()
            elapsed = time.perf_counter_ns() - t0
            cpu = time.process_time_ns() - c0
            if profiling:
                profiler.stop()
            _check(outcome, c)
            out[c].wall.append(elapsed)
            out[c].cpu.append(cpu)
    return out


class _CProfiler:
    """cProfile with the start/stop interface of pyinstrument's Profiler."""

    def __init__(self) -> None:
        import cProfile

        self.profile = cProfile.Profile()

    def start(self) -> None:
        self.profile.enable()

    def stop(self) -> None:
        self.profile.disable()

    def write(self, path: str, subject: str, runs: int) -> None:
        import pstats

        stats = pstats.Stats(self.profile)
        rows = []
        for (file, line, func), (cc, nc, tt, ct, _callers) in stats.stats.items():
            short = file.split("site-packages/")[-1].split("/work/main/")[-1]
            rows.append((tt, ct, nc, f"{short}:{line}({func})"))
        total = sum(r[0] for r in rows)
        with open(path, "w") as f:
            f.write(f"# {subject}: cProfile over {runs} timed runs (set-up excluded); "
                    f"per-run figures. Deterministic profiling inflates cheap calls.\n")
            f.write(f"# total profiled: {total / runs * 1e6:,.0f} us/run\n")
            for title, key in (("self time", 0), ("cumulative time", 1)):
                f.write(f"\n# top 45 by {title}\n{'self us':>9} {'cum us':>9} {'calls':>8}  function\n")
                for tt, ct, nc, name in sorted(rows, key=lambda r: r[key], reverse=True)[:45]:
                    f.write(f"{tt / runs * 1e6:9.1f} {ct / runs * 1e6:9.1f} {nc / runs:8.1f}  {name}\n")


def _emit(record: dict) -> None:
    sys.stdout.write("BENCH-RESULT " + json.dumps(record) + "\n")
    sys.stdout.flush()


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--min-runs", type=int, default=30)
    p.add_argument("--max-runs", type=int, default=2000)
    p.add_argument("--max-seconds", type=float, default=4.0)
    p.add_argument("--chunks", type=int, default=CHUNKS, help="text chunks per turn")
    p.add_argument("--no-marginal", action="store_true",
                   help="skip the interleaved runs with twice the chunks that give the marginal "
                        "cost of one chunk")
    p.add_argument("--profile", metavar="PATH",
                   help="profile the timed runs with pyinstrument and write the text report")
    p.add_argument("--cprofile", metavar="PATH",
                   help="profile the timed runs with cProfile (exact call counts per run)")
    return p.parse_args(argv)


def report_unavailable(subject: str, reason: str) -> None:
    """Report a subject that cannot run yet (the feature it measures is not built)."""
    _emit({"subject": subject, "available": False, "reason": reason})


def main(subject: str, make: Make, *, fresh_per_run: bool = False,
         extras: Callable[[], dict] | None = None, argv: list[str] | None = None) -> None:
    """Measure ``make``'s runs and print one ``BENCH-RESULT`` JSON line.

    Args:
        subject: the name shown in the table.
        make: untimed set-up returning the timed run (see the module docstring).
        fresh_per_run: call ``make`` again (untimed) before every run.
        extras: called after the runs; its dict is added to the result (subject-specific
            measurements such as messages sent per run).
    """
    args = _parse(argv)
    profiler = None
    if args.profile:
        from pyinstrument import Profiler

        profiler = Profiler(async_mode="enabled", interval=0.0001)
    elif args.cprofile:
        profiler = _CProfiler()

    counts = (args.chunks,) if args.no_marginal else (args.chunks, 2 * args.chunks)

    async def go() -> dict[int, Timings]:
        common = dict(chunk_counts=counts, fresh_per_run=fresh_per_run,
                      max_runs=args.max_runs, max_seconds=args.max_seconds)
        if profiler is None:
            return await _measure(make, warmup=args.warmup, min_runs=args.min_runs, **common)
        # Warm up unprofiled, then profile the measured runs only.
        await _measure(make, warmup=args.warmup, min_runs=0, **{**common, "max_runs": 0})
        return await _measure(make, warmup=0, min_runs=args.min_runs, profiler=profiler, **common)

    gc.collect()
    timings = asyncio.run(go())
    base = timings[args.chunks]
    times, cpu_times = base.wall, base.cpu
    marginal = None
    if len(counts) == 2:
        # Median of paired differences: each 2x run against the base run just before it.
        double = timings[counts[1]]
        diffs = [d - b for b, d in zip(base.cpu, double.cpu)]
        marginal = statistics.median(diffs) / 1000 / (TURNS * (counts[1] - counts[0]))
    if isinstance(profiler, _CProfiler):
        profiler.write(args.cprofile, subject, len(times))
    elif profiler is not None:
        from pyinstrument.renderers import ConsoleRenderer

        with open(args.profile, "w") as f:
            f.write(f"# {subject}: pyinstrument over {len(times)} timed runs (set-up excluded); "
                    f"times include profiler overhead.\n# Call tree:\n")
            f.write(profiler.output_text(unicode=False, color=False, show_all=False))
            f.write("\n# Flat: self time per function, all frames (top 60):\n")
            flat = profiler.output(ConsoleRenderer(unicode=False, color=False, flat=True,
                                                   show_all=True))
            f.write("\n".join(flat.splitlines()[:70]) + "\n")
    # ru_maxrss is KiB on Linux, bytes on macOS.
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rss_mib = maxrss / (1024 * 1024) if sys.platform == "darwin" else maxrss / 1024
    _emit({
        "subject": subject,
        "available": True,
        "chunks_per_turn": args.chunks,
        "runs": len(times),
        "median_us": statistics.median(times) / 1000,
        "min_us": min(times) / 1000,
        "stdev_us": statistics.pstdev(times) / 1000,
        # CPU time of the whole process (all threads) per run: the runs do no I/O, so on
        # an idle machine it matches wall time, and on a shared one it is far less noisy.
        "median_cpu_us": statistics.median(cpu_times) / 1000,
        "min_cpu_us": min(cpu_times) / 1000,
        "marginal_cpu_us_per_chunk": marginal,
        "peak_rss_mib": rss_mib,
        "python": platform.python_version(),
        "pid": os.getpid(),
        **({"extras": extras()} if extras is not None else {}),
    })
