"""``python -m arknb.eval run SUITE.py``: run a suite from the command line (DESIGN §11).

Exit codes: 0 when every case passed and there is no regression against the
baseline; 1 when a case failed or errored, or the baseline comparison has
regressions; 2 when the suite file, the baseline or an option is unusable.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ..domain import ArkError, invalid_argument

__all__ = ["main"]

_EPILOG = """\
The suite file is Python. It defines

    cases         a list of ev.Case (or a function returning one)
    make_runtime  make_runtime(case) -> AgentRuntime, sync or async: a fresh runtime per run

for example:

    import arknb as ark, arknb.eval as ev
    cases = [ev.Case("capital", "Capital of France?", graders=[ev.contains("Paris")])]
    def make_runtime(case):
        return ark.AgentRuntime(ev.ReplayModel("cassettes/capital.jsonl"))

exit codes:
  0  every case passed (and no regression against --baseline)
  1  a case failed or errored, or --baseline shows a regression
  2  the suite file, the baseline file or an option is unusable
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m arknb.eval", description="Run arknb evaluation suites.",
        epilog="`python -m arknb.eval run --help` shows the suite file format and the exit codes "
               "(0 all passed, 1 a failure or regression, 2 unusable input).")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    run = commands.add_parser("run", help="run a suite file and print its report",
                              description="Run the cases of SUITE.py, print the report table, and exit 1 when a "
                                          "case fails or errors or the baseline shows a regression.",
                              epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("suite", metavar="SUITE.py", help="the suite file (defines cases and make_runtime)")
    run.add_argument("--out", metavar="REPORT.jsonl", help="save the report (JSONL) here")
    run.add_argument("--baseline", metavar="OLD.jsonl",
                     help="a saved report to compare with: a case that passed there and does not now is a regression")
    run.add_argument("--concurrency", type=int, default=4, metavar="N", help="cases run at once (default 4)")
    run.add_argument("--repeats", type=int, default=1, metavar="K",
                     help="runs per case; cases that pass only sometimes are flagged flaky (default 1)")
    run.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                     help="time limit for one run of a case (default none)")
    run.add_argument("--no-progress", action="store_true", help="do not draw the progress bar")
    return parser


async def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ._suite_file import load_suite
    from .compare import compare
    from .report import SuiteReport
    from .suite import run_suite

    suite = load_suite(args.suite)
    out_path = _prepare_out(args.out) if args.out else None
    # Read the baseline before running anything: a bad baseline fails fast, and it is
    # never overwritten even when --out names the same file.
    baseline = SuiteReport.from_jsonl(args.baseline) if args.baseline else None
    report = await run_suite(suite.cases, suite.make_runtime, concurrency=args.concurrency, repeats=args.repeats,
                             progress=not args.no_progress, timeout=args.timeout)
    out.write(report.to_markdown() + "\n")
    code = 1 if report.failed or report.errored else 0
    if baseline is not None:
        comparison = compare(baseline, report)
        out.write("\n" + comparison.to_markdown() + "\n")
        if comparison.has_regressions:
            code = 1
    if out_path is not None:
        path = report.to_jsonl(out_path)
        err.write(f"report saved to {path}\n")
    return code


def _prepare_out(value: str) -> Path:
    """Check ``--out`` before anything runs (a suite may cost real model calls); create its folder."""
    path = Path(value)
    if path.is_dir():
        raise invalid_argument(f"--out {path} is a folder: give a file name, e.g. {path / 'report.jsonl'}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise invalid_argument(f"--out {path}: cannot create its folder ({exc})") from None
    return path


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """The command line; returns the exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    args = _parser().parse_args(argv)
    if args.concurrency < 1 or args.repeats < 1 or (args.timeout is not None and args.timeout <= 0):
        err.write("error: --concurrency and --repeats must be >= 1 and --timeout > 0\n")
        return 2
    try:
        return asyncio.run(_run(args, out, err))
    except ArkError as exc:
        err.write(f"error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        err.write("interrupted\n")
        return 130
