"""What redacting secrets costs subject (b): the same run on another arknb tree and on
this one, in alternating processes, with no secret configured (the shared workload as
it is) and with one configured secret that never appears (every event payload and
every streamed chunk is then checked for it).

Each process is ``benchmarks/subjects/arknb_plain.py`` (or, with ``--with-secret``, the
same subject with ``secrets=[...]``), run with ``PYTHONPATH`` pointing at the tree, so
both trees run on this venv's interpreter. Reported: the median over processes of
per-process CPU-time medians per run and of the marginal CPU µs per chunk, and the
ratio new / base.

Not part of ``make bench``. Usage:
    git archive main arknb | tar -x -C /tmp/base       # the tree to compare against
    .venv/bin/python benchmarks/experiments/secret_redaction.py --base /tmp/base [--rounds 6]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
REPO = BENCH.parent
SUBJECT = BENCH / "subjects" / "arknb_plain.py"

# The (b) subject with one configured secret that never occurs in the run.
WITH_SECRET = '''
import sys, runpy
sys.argv = [{subject!r}] + sys.argv[1:]
import arknb as ark
_Runtime = ark.AgentRuntime
class AgentRuntime(_Runtime):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("secrets", ["bench-secret-never-present-0123456789"])
        super().__init__(*args, **kwargs)
ark.AgentRuntime = AgentRuntime
runpy.run_path({subject!r}, run_name="__main__")
'''


def run_once(tree: Path, with_secret: bool, seconds: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = ["--max-seconds", str(seconds)]
    with tempfile.TemporaryDirectory() as cwd:  # so `arknb` is not found in the cwd first
        if with_secret:
            script = Path(cwd) / "with_secret.py"
            script.write_text(WITH_SECRET.format(subject=str(SUBJECT)))
            command = [sys.executable, str(script), *args]
        else:
            command = [sys.executable, str(SUBJECT), *args]
        out = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout
    line = next(line for line in out.splitlines() if line.startswith("BENCH-RESULT "))
    return json.loads(line.removeprefix("BENCH-RESULT "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="folder holding the other tree's arknb/")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=3.0, help="timed seconds per process")
    args = parser.parse_args()
    trees = {"base": args.base.resolve(), "new": REPO}
    for with_secret in (False, True):
        samples: dict[str, list[dict]] = {name: [] for name in trees}
        for round_ in range(args.rounds):
            order = list(trees.items()) if round_ % 2 == 0 else list(trees.items())[::-1]
            for name, tree in order:
                samples[name].append(run_once(tree, with_secret, args.seconds))
        label = "one configured secret (never present)" if with_secret else "no secret configured"
        print(f"\n(b) arknb, {label}: medians over {args.rounds} processes each")
        print(f"{'tree':<6} {'µs/run CPU':>12} {'marginal µs/chunk':>18}")
        medians = {}
        for name, records in samples.items():
            run = statistics.median(r["median_cpu_us"] for r in records)
            chunk = statistics.median(r["marginal_cpu_us_per_chunk"] for r in records)
            medians[name] = (run, chunk)
            print(f"{name:<6} {run:>12,.0f} {chunk:>18.2f}")
        (base_run, base_chunk), (new_run, new_chunk) = medians["base"], medians["new"]
        print(f"new/base: run {new_run / base_run:.3f}x, marginal per chunk {new_chunk - base_chunk:+.2f} µs")


if __name__ == "__main__":
    main()
