"""Issue 11's measurement, repeated: random SIGKILLs during an approved batch of slow
tools (three dangerous calls, each taking a random 0-0.4 s; the child is killed a random
0-0.6 s after the approvals were saved), then a restore that finishes the run.

The child approves the three calls one by one and is killed right after its k-th
approval (k random) plus a random delay. Prints how many approved calls had no
``executing`` record at the kill and ran after the restore, how many were in doubt
(each had ``executing`` committed), and every broken invariant (there must be none): an
acknowledged decision asked again, an approved call lost, a call run twice, a call in
doubt with no ``executing`` record, an event a listener of the killed child received that
is missing from the outbox (issue 26).

With ``--listener-kills`` the child kills itself inside its bus listener as it receives
its k-th event (k = 1, 2, ... per trial, wrapping at 30): the harshest moment for the
outbox, since nothing after the announcement runs (issue 26: 0 events missing).

Usage: python benchmarks/random_kills.py [--trials 300] [--store sqlite|postgres] [--listener-kills]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.durable.random_kills import run_trial  # noqa: E402


async def main_async(trials: int, store: str, dsn_for=None, listener_kills: bool = False) -> str:
    totals: Counter = Counter()
    problems: list[str] = []
    for seed in range(trials):
        folder = Path(tempfile.mkdtemp(prefix="arknb-kills-"))
        try:
            if dsn_for is not None:
                (folder / "dsn").write_text(dsn_for(seed))
            trial = await run_trial(folder, store, seed,
                                    kill_on_event=(seed % 30) + 1 if listener_kills else None)
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
        totals["events a listener of the killed child received"] += trial.announced
        totals["of those, missing from read_events() after the kill"] += len(trial.announced_missing)
        totals["trials with an announced event missing"] += bool(trial.announced_missing)
        kept = trial.problems
        if listener_kills:
            # A kill before the approval batch was saved leaves a run the restore answers
            # without the tools: of the call invariants only "never twice" applies.
            kept = [p for p in kept if "announced" in p or re.search(r"ran ([2-9]|\d\d+) times", p)]
        problems += [f"seed {seed}: {p}" for p in kept]
    lines = [f"| {name} | {count} |" for name, count in totals.items()]
    text = "| what | count |\n|---|--:|\n" + "\n".join(lines) + "\n\n"
    text += f"broken invariants: {len(problems)}\n" + "".join(f"- {p}\n" for p in problems[:50])
    return text


def _database(dsn: str, seed: int) -> str:
    """A fresh database per trial on the benchmark's server."""
    import psycopg  # noqa: PLC0415

    name = f"kills_{seed}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return " ".join(part for part in dsn.split() if not part.startswith("dbname=")) + f" dbname={name}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--listener-kills", action="store_true")
    args = parser.parse_args()
    if args.store == "postgres":
        from pg_server import postgres_dsn  # noqa: PLC0415 - benchmarks/ is on sys.path

        with postgres_dsn() as dsn:
            if dsn is None:
                raise SystemExit("PostgreSQL could not start (binaries or psycopg missing)")
            text = asyncio.run(main_async(args.trials, args.store, lambda seed: _database(dsn, seed),
                                          args.listener_kills))
    else:
        text = asyncio.run(main_async(args.trials, args.store, listener_kills=args.listener_kills))
    print(text)
    (Path(__file__).parent / "results").mkdir(exist_ok=True)
    name = "random_kills.md" if args.store == "sqlite" and not args.listener_kills else (
        f"random_kills_{args.store}{'_listener' if args.listener_kills else ''}.md")
    (Path(__file__).parent / "results" / name).write_text(text)


if __name__ == "__main__":
    main()
