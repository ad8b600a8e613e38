"""What the 30 no-op hooks of subject (c) cost, by slot group: the (b) run with the
hooks of one group at a time, the variants interleaved run by run in one process
(CPU-time medians), so the (c)/(b) ratio is read without drift between processes.

Groups: chunk (on_model_chunk), persist (before/after_persist_state), others (the
other seven slots), all (subject c). Each group has subject (c)'s three hooks per slot:
sync, async, sync, all returning None.

Not part of `make bench`; an aid for reading the (c) profile.
Usage: python benchmarks/experiments/hook_slots.py [--runs 80]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import arknb as ark  # noqa: E402

from arknb_common import HOOK_SLOTS, make_tool, script, stream_run  # noqa: E402
from workload import CHUNKS, ToolCounter  # noqa: E402

PERSIST = ("before_persist_state", "after_persist_state")
GROUPS = {
    "none": (),
    "chunk": ("on_model_chunk",),
    "persist": PERSIST,
    "others": tuple(s for s in HOOK_SLOTS if s != "on_model_chunk" and s not in PERSIST),
    "all": HOOK_SLOTS,
}


def noop(ctx):
    return None


async def anoop(ctx):
    return None


def build(slots: tuple[str, ...]):
    counter = ToolCounter()
    runtime = ark.AgentRuntime(script(CHUNKS), tools=[make_tool(counter)], system_prompt="Be brief.")
    for slot in slots:
        for i, fn in enumerate((noop, anoop, noop)):
            getattr(runtime.hooks, slot)(name=f"noop_{slot}_{i}")(fn)
    return runtime, counter


async def main(runs: int) -> None:
    samples: dict[str, list[float]] = {group: [] for group in GROUPS}
    for i in range(runs + 10):
        for group, slots in GROUPS.items():
            runtime, counter = build(slots)
            c0 = time.process_time_ns()
            await stream_run(runtime, counter, CHUNKS)
            if i >= 10:  # warm-up
                samples[group].append((time.process_time_ns() - c0) / 1000)
    base = statistics.median(samples["none"])
    print(f"{'hooks on':<10}{'CPU µs/run':>12}{'added':>10}{'vs none':>10}")
    for group, values in samples.items():
        median = statistics.median(values)
        print(f"{group:<10}{median:>12,.0f}{median - base:>+10,.0f}{median / base:>9.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=80)
    asyncio.run(main(parser.parse_args().runs))
