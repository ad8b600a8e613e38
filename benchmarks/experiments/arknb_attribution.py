"""Where arknb's time goes in the shared workload: the same run with one cost removed
at a time (CPU-time medians, one process, variants interleaved run by run).

Variants:
  default          sync tool, default storage, consumed via run_stream()   (= subject b)
  async-tool       the tool is `async def`: no worker-thread hop per call
  null-storage     + a storage whose save() does nothing: no per-save serialisation
  run()            + `await runtime.run()` instead of iterating run_stream(): no queue hand-off
  +3 hooks         async-tool + null-storage + run_stream, plus the 30 no-op hooks of subject c

Not part of `make bench`; an aid for reading the profiles.
Usage: python benchmarks/experiments/arknb_attribution.py [--runs 60]
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
from workload import CHUNKS, PROMPT, TOOL_CALLS, Outcome, ToolCounter  # noqa: E402


class NullStorage:
    """A StateStorage that stores nothing (to measure what persistence costs)."""

    async def load(self, session_id):
        return None

    async def save(self, state):
        return None

    async def mark_not_resumable(self, session_id):
        return None

    async def delete(self, session_id):
        return None

    async def list_sessions(self):
        return []


def async_tool(counter: ToolCounter):
    @ark.tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return counter.add(a, b)

    return add


def noop(ctx):
    return None


async def anoop(ctx):
    return None


async def one(variant: str) -> int:
    counter = ToolCounter()
    tool = make_tool(counter) if variant == "default" else async_tool(counter)
    kwargs = {} if variant in ("default", "async-tool") else {"storage": NullStorage()}
    runtime = ark.AgentRuntime(script(CHUNKS), tools=[tool], system_prompt="Be brief.", **kwargs)
    if variant == "+3 hooks":
        for slot in HOOK_SLOTS:
            for i, fn in enumerate((noop, anoop, noop)):
                getattr(runtime.hooks, slot)(name=f"noop_{slot}_{i}")(fn)
    c0 = time.process_time_ns()
    if variant == "run()":
        counter.count = 0
        result = await runtime.run(PROMPT)
        assert result.stop_reason == "completed" and counter.count == TOOL_CALLS
    else:
        outcome: Outcome = await stream_run(runtime, counter, CHUNKS)
        assert outcome.tool_calls == TOOL_CALLS
    return time.process_time_ns() - c0


async def main(runs: int) -> None:
    variants = ["default", "async-tool", "null-storage", "run()", "+3 hooks"]
    samples: dict[str, list[int]] = {v: [] for v in variants}
    for i in range(runs + 10):
        for v in variants:
            t = await one(v)
            if i >= 10:
                samples[v].append(t)
    med = {v: statistics.median(samples[v]) for v in variants}
    # What each variant changes, relative to the variant it builds on.
    parent = {"async-tool": "default", "null-storage": "async-tool", "run()": "null-storage",
              "+3 hooks": "null-storage"}
    print(f"{'variant':<14} {'CPU µs/run':>11} {'vs default':>10} {'step':>9}  step relative to")
    for v in variants:
        step = "" if v not in parent else f"{(med[v] - med[parent[v]]) / 1000:+9,.0f}  {parent[v]}"
        print(f"{v:<14} {med[v] / 1000:11,.0f} {med[v] / med['default']:10.2f} {step}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=60)
    asyncio.run(main(p.parse_args().runs))
