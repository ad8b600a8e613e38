"""What saving a session costs at turn 1,000 compared with turn 10 (issue 6 target:
at most 1.5x), for each durable backend.

A turn here is what the shared workload produces: one assistant message (20 text
chunks joined, one ``add`` tool call) and its tool result, plus the token usage a real
provider reports for the model call (``AgentState.usages`` grows by one per turn). For N in (10, 1000) the
script builds an ``AgentState`` holding N turns, then times, many times over:

- ``to_json``: serialising that state whole (what a backend that rewrites the whole
  session has to do), in a loop of its own;
- ``append+save``: adding one fresh turn to the N-turn history (``model_copy``, as the
  runtime's autosave does) and awaiting the backend's ``save``:
  ``FileStateStorage`` (temp file, fsync, ``os.replace``, directory fsync) and
  ``SQLiteStore`` (one WAL transaction with ``synchronous=FULL``). Before
  each repetition the N-turn state is saved again (untimed), so every timed save
  appends a fresh turn to a saved N-turn session, as the runtime's autosave does;
  the two sizes take turns.

Prints medians and the 1000/10 ratio per backend. Reports n/a until ``arknb.state``
exists; the SQLite rows until ``arknb.durable`` does.

Usage: python benchmarks/state_save.py [--reps 30]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from workload import add_args_json, CHUNKS, chunk_text  # noqa: E402

TURN_COUNTS = (10, 1000)
TARGET_RATIO = 1.5


def _turn_usage(ark_domain, turn: int):
    return ark_domain.Usage(input_tokens=200 + 60 * turn, output_tokens=40, cached_tokens=200)


def _turn_messages(ark_domain, turn: int) -> tuple:
    call = ark_domain.ToolCall(id=f"call_{turn}", name="add", arguments_json=add_args_json(turn))
    text = "".join(chunk_text(turn, i) for i in range(CHUNKS))
    return (ark_domain.AgentMessage.assistant(text, tool_calls=[call]),
            ark_domain.AgentMessage.tool(f"call_{turn}", "5"))


def _backends(tmp: Path) -> dict:
    from arknb.state import FileStateStorage

    backends = {"FileStateStorage": FileStateStorage(tmp / "files")}
    try:
        from arknb.durable import SQLiteStore
    except ImportError:
        pass
    else:
        backends["SQLiteStore"] = SQLiteStore(tmp / "state.sqlite3")
    return backends


async def measure_backend(storage, reps: int) -> dict:
    import arknb.domain as domain
    from arknb.state import AgentState

    states, extras = {}, {}
    to_json: dict = {n: [] for n in TURN_COUNTS}
    append_save: dict = {n: [] for n in TURN_COUNTS}
    append_save_cpu: dict = {n: [] for n in TURN_COUNTS}
    for n in TURN_COUNTS:
        history: tuple = (domain.AgentMessage.user("Add 2 and 3, many times."),)
        for t in range(n):
            history += _turn_messages(domain, t)
        usages = tuple(_turn_usage(domain, t) for t in range(n))
        states[n] = AgentState(session_id=f"bench-{n}", history=history, usages=usages,
                               total_loop_count=n)
        extras[n] = [(_turn_messages(domain, n + r), _turn_usage(domain, n + r)) for r in range(reps)]
        # Saves are compare-and-swaps: each state carries the revision the last save stored.
        revision = await storage.save(states[n])  # warm the file / the database and its pages
        states[n] = states[n].model_copy(update={"revision": revision})
        # A loop of its own: a 600 kB to_json just before each save would leave the
        # save running on cold CPU caches, charging it for work that is not its own.
        for _ in range(reps):
            t0 = time.perf_counter_ns()
            states[n].to_json()
            to_json[n].append(time.perf_counter_ns() - t0)
    # The sizes take turns, so drift over the run (disk, neighbours, a growing
    # write-ahead log) weighs on both alike.
    for r in range(reps):
        for n in TURN_COUNTS:
            state = states[n]
            state = state.model_copy(update={"revision": await storage.save(state)})  # back to N turns, untimed
            c0 = time.process_time_ns()  # all threads: the write runs in a worker
            t0 = time.perf_counter_ns()
            messages, usage = extras[n][r]
            nxt = state.model_copy(update={"history": state.history + messages,
                                           "usages": state.usages + (usage,),
                                           "total_loop_count": n + 1})
            revision = await storage.save(nxt)
            append_save[n].append(time.perf_counter_ns() - t0)
            append_save_cpu[n].append(time.process_time_ns() - c0)
            states[n] = state.model_copy(update={"revision": revision})
    results: dict = {}
    for n in TURN_COUNTS:
        results[n] = {"to_json_us": statistics.median(to_json[n]) / 1000,
                      "append_save_us": statistics.median(append_save[n]) / 1000,
                      "append_save_cpu_us": statistics.median(append_save_cpu[n]) / 1000,
                      "bytes": len(states[n].to_json().encode()),
                      "messages": len(states[n].history)}
    lo, hi = TURN_COUNTS
    results["ratio_append_save"] = results[hi]["append_save_us"] / results[lo]["append_save_us"]
    results["ratio_append_save_cpu"] = (results[hi]["append_save_cpu_us"]
                                        / results[lo]["append_save_cpu_us"])
    results["ratio_to_json"] = results[hi]["to_json_us"] / results[lo]["to_json_us"]
    # Judged on CPU: the wall time of a save is dominated by fsync latency, which on a
    # shared disk says more about the neighbours than about arknb.
    results["target_met"] = results["ratio_append_save_cpu"] <= TARGET_RATIO
    return results


async def measure(reps: int) -> dict:
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="arknb-bench-state-") as tmp:
        for name, storage in _backends(Path(tmp)).items():
            try:
                results[name] = await measure_backend(storage, reps)
            finally:
                if hasattr(storage, "aclose"):
                    await storage.aclose()
    return results


def render(results: dict) -> str:
    lo, hi = TURN_COUNTS
    lines = ["| backend | turns | messages | state JSON bytes | to_json µs | append+save µs wall "
             "| append+save µs CPU |", "|--|--:|--:|--:|--:|--:|--:|"]
    for name, r in results.items():
        for n in TURN_COUNTS:
            lines.append(f"| {name} | {n:,} | {r[n]['messages']:,} | {r[n]['bytes']:,} | "
                         f"{r[n]['to_json_us']:,.0f} | {r[n]['append_save_us']:,.0f} | "
                         f"{r[n]['append_save_cpu_us']:,.0f} |")
    lines.append("")
    for name, r in results.items():
        lines.append(f"{name}: save at turn {hi:,} / save at turn {lo}: "
                     f"{r['ratio_append_save_cpu']:.1f}x CPU, {r['ratio_append_save']:.1f}x wall "
                     f"(fsync-bound); to_json alone {r['ratio_to_json']:.1f}x. Target <= "
                     f"{TARGET_RATIO}x (CPU): {'met' if r['target_met'] else 'NOT met'}")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--json", action="store_true", help="print the raw results as JSON")
    args = p.parse_args()
    try:
        from arknb.state import AgentState, FileStateStorage  # noqa: F401
    except ImportError as exc:
        print(f"state save: n/a (arknb.state not built yet: {exc})")
        return
    results = asyncio.run(measure(args.reps))
    text = render(results)
    print(json.dumps(results, indent=2, default=str) if args.json else text)
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "state_save.md").write_text(text)


if __name__ == "__main__":
    main()
