"""Issue 11's measurement, repeated: random SIGKILLs during an approved batch of slow
tools (three dangerous calls, each taking a random 0-0.4 s; the child is killed a random
0-0.6 s after the approvals were saved), then a restore that finishes the run.

The child approves the three calls one by one and is killed right after its k-th
approval (k random) plus a random delay. Prints how many approved calls had no
``executing`` record at the kill and ran after the restore, how many were in doubt
(each had ``executing`` committed), and every broken invariant (there must be none): an
acknowledged decision asked again, an approved call lost, a call run twice, a call in
doubt with no ``executing`` record.

Usage: python benchmarks/random_kills.py [--trials 300] [--store sqlite]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.durable.random_kills import run_trial  # noqa: E402


async def main_async(trials: int, store: str) -> str:
    totals: Counter = Counter()
    problems: list[str] = []
    for seed in range(trials):
        folder = Path(tempfile.mkdtemp(prefix="arknb-kills-"))
        try:
            trial = await run_trial(folder, store, seed)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        totals["trials"] += 1
        totals[f"killed after approval {len(trial.approved_before_kill)} of 3"] += 1
        totals["calls approved before the kill"] += len(trial.approved_before_kill)
        totals["approved before the kill, asked again after restore"] += len(trial.asked_again)
        totals["calls with executing committed at the kill"] += len(trial.executing_recorded)
        totals["calls begun before the kill (start line)"] += len(trial.began)
        totals["calls finished before the kill (end line)"] += len(trial.finished)
        totals["no executing record: ran after the restore"] += len(
            {c for c in trial.ran_after_restore if c not in trial.executing_recorded})
        totals["in doubt after restore (executing, no committed result)"] += len(trial.in_doubt)
        totals["in doubt without a start line (killed before the tool's first line)"] += len(
            trial.in_doubt - trial.began)
        # A call that returned is in doubt only if the kill fell between its last line and
        # the commit of its result (a later call waiting for an earlier one's answer included).
        totals["finished before the kill, yet in doubt after restore"] += len(trial.in_doubt & trial.finished)
        totals["runs completed"] += trial.stop_reason == "completed"
        problems += [f"seed {seed}: {p}" for p in trial.problems]
    lines = [f"| {name} | {count} |" for name, count in totals.items()]
    text = "| what | count |\n|---|--:|\n" + "\n".join(lines) + "\n\n"
    text += f"broken invariants: {len(problems)}\n" + "".join(f"- {p}\n" for p in problems[:50])
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--store", choices=["sqlite"], default="sqlite")
    args = parser.parse_args()
    text = asyncio.run(main_async(args.trials, args.store))
    print(text)
    (Path(__file__).parent / "results").mkdir(exist_ok=True)
    (Path(__file__).parent / "results" / "random_kills.md").write_text(text)


if __name__ == "__main__":
    main()
