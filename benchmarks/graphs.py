"""Graph step overhead and restore time (issue 23, DESIGN §16), each against a baseline
measured in the same run.

1. Per step: a graph of one function node that routes back to itself N times, against
   the same function called N times in a plain async loop. Two node bodies: a trivial
   one (pure overhead) and one that awaits 1 ms (an I/O-like step). Storage: none (in
   memory), a MemoryStore (durable rules, in memory), and a SQLiteStore on disk.
   Printed: medians per step and the ratios; for SQLite the milliseconds added per step.
2. fsyncs per step on SQLite, counted with strace in a child process (fsync + fdatasync
   calls of an N-step run minus a 1-step run, divided by N - 1), when strace is there.
3. Restore: a run of N steps that then waits for a person, restored from SQLite
   (``Graph.restore``) for N = 10 and N = 1000; medians and their ratio.

Usage: python benchmarks/graphs.py [--steps 200] [--reps 5]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel  # noqa: E402

import arknb as ark  # noqa: E402
from arknb.durable import MemoryStore  # noqa: E402


class Count(BaseModel):
    n: int = 0
    ok: bool | None = None


def loop_graph(name: str, steps: int, body, *, human: bool = False, idempotent: bool = False) -> ark.Graph:
    g = ark.Graph(name, state=Count)

    async def step(state: Count) -> dict:
        await body()
        return {"n": state.n + 1}

    g.node(step, name="step", idempotent=idempotent)
    g.edge(ark.START, "step")
    after = "ask" if human else ark.END
    g.route("step", lambda s: after if s.n >= steps else "step", targets=["step", after])
    if human:
        g.human("ask", ask="done?", output="ok")
    return g


async def trivial() -> None:
    return None


async def io_1ms() -> None:
    await asyncio.sleep(0.001)


async def plain_loop(steps: int, body) -> float:
    state = Count()
    start = time.perf_counter()
    for _ in range(steps):
        await body()
        state = state.model_copy(update={"n": state.n + 1})
    return time.perf_counter() - start


async def graph_time(steps: int, body, storage_kind: str, folder: Path, rep: int) -> float:
    storage = None
    if storage_kind == "memory_store":
        storage = MemoryStore()
    elif storage_kind.startswith("sqlite"):
        storage = ark.SQLiteStore(folder / f"bench-{rep}-{time.monotonic_ns()}.sqlite3")
    g = loop_graph(f"bench_{storage_kind}", steps, body, idempotent=storage_kind == "sqlite_idem")
    start = time.perf_counter()
    run = await g.run(Count(), storage=storage)
    elapsed = time.perf_counter() - start
    assert run.status == "completed" and run.state.n == steps, run
    if storage_kind.startswith("sqlite"):
        await storage.aclose()
    return elapsed


async def bare_commit_ms(folder: Path, n: int = 50) -> float:
    """One synced commit of a small state on a bare SQLiteStore: what the disk costs per fsync."""
    store = ark.SQLiteStore(folder / f"bare-{time.monotonic_ns()}.sqlite3")
    state = ark.AgentState(session_id="bare")
    times = []
    for _ in range(n):
        start = time.perf_counter()
        revision = await store.save(state)
        times.append(time.perf_counter() - start)
        state = state.model_copy(update={"revision": revision})
    await store.aclose()
    return statistics.median(times) * 1e3


async def per_step(steps: int, reps: int, folder: Path) -> None:
    print(f"per step ({steps} steps, median of {reps})")
    for label, body in (("trivial node", trivial), ("node awaiting 1 ms", io_1ms)):
        base = statistics.median([await plain_loop(steps, body) for _ in range(reps)])
        print(f"  {label}: plain async loop {base / steps * 1e6:9.1f} µs/step")
        for kind in ("none", "memory_store", "sqlite", "sqlite_idem"):
            took = statistics.median([await graph_time(steps, body, kind, folder, r) for r in range(reps)])
            extra = (took - base) / steps * 1e3
            print(f"    graph, storage={kind:<12} {took / steps * 1e6:9.1f} µs/step   ratio {took / base:6.2f}×   "
                  f"added {extra:6.3f} ms/step")
    bare = await bare_commit_ms(folder)
    print(f"  a bare synced SQLiteStore commit on this disk: {bare:.3f} ms (a step of a chain of function nodes "
          "makes one synced commit: its end and the next step's start; sqlite_idem = idempotent=True)")


def fsyncs(steps: int, folder: Path) -> int | None:
    strace = shutil.which("strace")
    if strace is None:
        return None
    out = subprocess.run([strace, "-f", "-c", "-e", "trace=fsync,fdatasync", sys.executable, __file__,
                          "--fsync-child", str(steps), "--folder", str(folder)], capture_output=True, text=True)
    total = 0
    for line in out.stderr.splitlines():
        match = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(fsync|fdatasync)\s*$", line)
        if match:
            total += int(match.group(1))
    return total


async def fsync_child(steps: int, folder: Path) -> None:
    store = ark.SQLiteStore(folder / f"fsync-{steps}-{time.monotonic_ns()}.sqlite3")
    run = await loop_graph("fsync", steps, trivial).run(Count(), storage=store)
    assert run.status == "completed"
    await store.aclose()


async def restore_times(reps: int, folder: Path) -> None:
    print(f"restore from SQLite (a run of N steps waiting for a person; median of {reps})")
    medians = {}
    for steps in (10, 1000):
        path = folder / f"restore-{steps}.sqlite3"
        store = ark.SQLiteStore(path)
        g = loop_graph(f"restore_{steps}", steps, trivial, human=True)
        run = await g.run(Count(), storage=store, run_id=f"r{steps}")
        assert run.status == "awaiting_human", run
        await run.aclose()
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            again = await g.restore(f"r{steps}", storage=store)
            times.append(time.perf_counter() - start)
            assert again.status == "awaiting_human" and again.state.n == steps
            await again.aclose()
        await store.aclose()
        medians[steps] = statistics.median(times)
        print(f"  {steps:5d} steps: {medians[steps] * 1e3:8.2f} ms")
    print(f"  ratio 1000-step / 10-step: {medians[1000] / medians[10]:.2f}×")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--fsync-child", type=int, default=None)
    parser.add_argument("--folder", type=Path, default=None)
    args = parser.parse_args()
    if args.fsync_child is not None:
        await fsync_child(args.fsync_child, args.folder)
        return
    folder = Path(tempfile.mkdtemp(prefix="arknb-bench-graphs-"))
    try:
        await per_step(args.steps, args.reps, folder)
        many, one = fsyncs(args.steps, folder), fsyncs(1, folder)
        if many is None or one is None:
            print("fsyncs per step: strace not found (not counted)")
        else:
            print(f"fsyncs per step on SQLite (strace): ({many} - {one}) / {args.steps - 1} = "
                  f"{(many - one) / (args.steps - 1):.2f}")
        await restore_times(args.reps, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
