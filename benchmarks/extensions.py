"""What an installed extension costs a run: the shared workload with and without extensions.

Three variants of subject (b) run interleaved in one process (same interpreter, same
moment of a shared machine), each on a fresh runtime per run as in ``workload.py``:

* ``plain``: no extensions (the baseline; the loop takes its no-extension path);
* ``noop_extension``: one user extension that contributes nothing (the seam's own cost);
* ``plan_auto``: ``plan_mode=PlanMode.AUTO`` (a tool, a prompt section and a hook every turn).

Prints the median run time of each and its ratio to ``plain``.

    .venv/bin/python benchmarks/extensions.py [--runs 60] [--chunks 20]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import arknb as ark  # noqa: E402
from arknb.runtime.extensions import Extension  # noqa: E402
from arknb_common import make_tool, script, stream_run  # noqa: E402
from workload import ToolCounter  # noqa: E402


class Noop(Extension):
    name = "noop"


VARIANTS = {
    "plain": {},
    "noop_extension": {"extensions": lambda: [Noop()]},
    "plan_auto": {"plan_mode": lambda: ark.PlanMode.AUTO},
}


async def one_run(variant: str, chunks: int) -> float:
    counter = ToolCounter()
    options = {key: make() for key, make in VARIANTS[variant].items()}
    runtime = ark.AgentRuntime(script(chunks), tools=[make_tool(counter)], system_prompt="Be brief.", **options)
    t0 = time.perf_counter()
    await stream_run(runtime, counter, chunks)
    return time.perf_counter() - t0


async def main(runs: int, chunks: int, warmup: int) -> None:
    samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    for i in range(warmup + runs):
        # Interleaved, in a rotating order: drift on a shared machine and the cost of going
        # first in a round hit every variant alike.
        for name in names[i % len(names):] + names[:i % len(names)]:
            elapsed = await one_run(name, chunks)
            if i >= warmup:
                samples[name].append(elapsed)
    base = statistics.median(samples["plain"])
    print(f"{'variant':16} {'median ms':>10} {'ratio':>7}   ({runs} runs each, {chunks} chunks/turn, 10 turns)")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:16} {median * 1000:10.2f} {median / base:7.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.chunks, args.warmup))
