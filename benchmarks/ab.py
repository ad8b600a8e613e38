"""A/B one change: the same arknb subjects on a base commit and on the working tree.

Exports ``arknb/`` of ``--base`` (a git ref, default ``main``) into a temporary folder
and runs each subject alternately on it and on this checkout, one process each,
``--rounds`` times (the order flips every round so drift on a shared machine hits both
alike). Prints per-subject CPU medians (µs per run) and the ratio working tree / base:
the median of the per-round ratios, each from two processes that ran back to back, or,
with ``--together``, at the same time (on a machine shared with other work both sides
then see the same load, which keeps the paired ratio steady).

Usage:
    .venv/bin/python benchmarks/ab.py                                   # (b), (c), (d) vs main
    .venv/bin/python benchmarks/ab.py --base HEAD~3 --subjects arknb_plain --rounds 5

Both sides run the subject scripts of this checkout (``benchmarks/subjects``), so the
workload is identical; only the imported ``arknb`` differs (``PYTHONPATH`` puts the
side's copy first).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

__all__ = ["main"]

DEFAULT_SUBJECTS = ("arknb_plain", "arknb_hooks", "arknb_widget")


def _export(ref: str, into: Path) -> None:
    archive = into / "base.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(archive), ref, "arknb"],
                   check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    archive.unlink()


def _run(python: str, key: str, path: Path, args: argparse.Namespace) -> dict:
    cmd = [python, str(HERE / "subjects" / f"{key}.py"), "--no-marginal",
           "--warmup", str(args.warmup), "--min-runs", str(args.min_runs), "--max-seconds", str(args.max_seconds)]
    env = {**os.environ, "PYTHONPATH": str(path), "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, cwd=str(path))
    for line in proc.stdout.splitlines():
        if line.startswith("BENCH-RESULT "):
            return json.loads(line[len("BENCH-RESULT "):])
    raise SystemExit(f"{key} on {path} failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base", default="main", help="git ref to compare against (default: main)")
    p.add_argument("--subjects", nargs="+", default=list(DEFAULT_SUBJECTS))
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--min-runs", type=int, default=30)
    p.add_argument("--max-seconds", type=float, default=3.0)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--tree", default=None,
                   help="a git ref to measure instead of the working tree (exported like --base), so the "
                        "working tree can change while it runs")
    p.add_argument("--together", action="store_true",
                   help="run the two sides of a round at the same time (steadier on a busy machine)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="arknb-ab-") as tmp:
        base_dir = Path(tmp) / "base"
        base_dir.mkdir()
        _export(args.base, base_dir)
        tree_dir = ROOT
        if args.tree is not None:
            tree_dir = Path(tmp) / "tree"
            tree_dir.mkdir()
            _export(args.tree, tree_dir)
        sides = {"base": base_dir, "tree": tree_dir}
        cpu: dict[tuple[str, str], list[float]] = {}
        ratios: dict[str, list[float]] = {}
        for round_no in range(args.rounds):
            order = ("base", "tree") if round_no % 2 == 0 else ("tree", "base")
            for key in args.subjects:
                got = {}
                if args.together:
                    with ThreadPoolExecutor(2) as pool:
                        recs = dict(zip(order, pool.map(lambda side: _run(args.python, key, sides[side], args),
                                                        order)))
                else:
                    recs = {side: _run(args.python, key, sides[side], args) for side in order}
                for side in order:
                    got[side] = recs[side]["median_cpu_us"]
                    cpu.setdefault((key, side), []).append(got[side])
                ratios.setdefault(key, []).append(got["tree"] / got["base"])
                print(f"  round {round_no + 1}/{args.rounds} {key:<14} base {got['base']:>9,.0f}  "
                      f"tree {got['tree']:>9,.0f}  tree/base {got['tree'] / got['base']:.3f}",
                      file=sys.stderr, flush=True)
    tree_name = f"{args.tree} (exported)" if args.tree is not None else f"{ROOT} (working tree)"
    print(f"base = {args.base}, tree = {tree_name}; CPU µs per run, medians over {args.rounds} "
          f"processes per side{' (both sides of a round at once)' if args.together else ''}; "
          "ratio = median of per-round tree/base ratios")
    print("| subject | base µs/run | tree µs/run | tree / base | per-round ratios |")
    print("|---|--:|--:|--:|---|")
    for key in args.subjects:
        b, t = statistics.median(cpu[(key, "base")]), statistics.median(cpu[(key, "tree")])
        rs = ratios[key]
        print(f"| {key} | {b:,.0f} | {t:,.0f} | {statistics.median(rs):.3f} | "
              f"{', '.join(f'{r:.3f}' for r in rs)} |")


if __name__ == "__main__":
    main()
