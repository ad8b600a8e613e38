"""The newest page of a long restored session's outbox, as TimelineWidget(runtime) reads it.

A SQLiteStore holds one session of N outbox events (tool results of a few hundred bytes).
Compared in the same run: walking the outbox forward to keep its newest page
(``ForwardPages`` over ``store.read_events``, what a store of the bare protocol gets)
against reading it backwards (``store.read_events_before``, what arknb's stores offer).
Prints the medians and their ratio for each N.

Usage: python benchmarks/timeline_pages.py [--events 2000 20000 100000] [--page 500] [--reps 5]
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
from arknb.durable import Commit  # noqa: E402
from arknb.widgets._timeline_store import BackwardPages, ForwardPages  # noqa: E402


async def _fill(store: ark.SQLiteStore, n: int) -> None:
    for start in range(1, n + 1, 1000):
        events = tuple(ark.AgentEvent(f"r{k // 30}:{k}", "tool.after", "big", f"r{k // 30}", k, float(k),
                                      {"call": {"id": f"c{k}", "name": "add", "arguments": {"a": k, "b": k + 1}},
                                       "result": {"text": str(2 * k + 1)}, "duration_ms": 1.5})
                       for k in range(start, min(start + 1000, n + 1)))
        await store.commit(Commit(session_id="big", events=events))


async def _median_ms(pages, page: int, reps: int, n: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        got = await pages.read_before(None, page)
        times.append(time.perf_counter() - t0)
        assert [e.sequence for e in got] == list(range(n - page + 1, n + 1))
    return statistics.median(times) * 1e3


async def main(sizes: list[int], page: int, reps: int) -> None:
    print(f"| outbox events | forward walk ms | read backwards ms | ratio |  (newest {page}, median of {reps})")
    print("|--:|--:|--:|--:|")
    for n in sizes:
        folder = Path(tempfile.mkdtemp(prefix="arknb-timeline-pages-"))
        try:
            store = ark.SQLiteStore(folder / "arknb.sqlite3")
            await _fill(store, n)
            forward = ForwardPages(lambda **kw: store.read_events("big", **kw))
            backward = BackwardPages(lambda *, before_sequence, limit: store.read_events_before(
                "big", before_sequence, limit=limit))
            walk = await _median_ms(forward, page, reps, n)
            back = await _median_ms(backward, page, reps, n)
            print(f"| {n:,} | {walk:.1f} | {back:.1f} | {walk / back:.1f}x |")
            await store.aclose()
        finally:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, nargs="+", default=[2000, 20000, 100000])
    parser.add_argument("--page", type=int, default=500)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.events, args.page, args.reps))
