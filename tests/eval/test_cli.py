"""python -m arknb.eval run SUITE.py: the table, --out, --baseline and the exit codes."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import arknb as ark
import arknb.eval as ev

from ._kit import add, add_model

SAMPLE = Path(__file__).with_name("_suite_sample.py")
REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, expect: str = "3", cassette: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "ARKNB_TEST_EXPECT": expect, "ARKNB_TEST_CASSETTE": str(cassette or "")}
    return subprocess.run([sys.executable, "-m", "arknb.eval", *args], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=120)


async def _cassette(tmp_path: Path) -> Path:
    path = tmp_path / "sum.jsonl"
    await ark.AgentRuntime(ev.Recorder(add_model(), path), tools=[add]).run("What is 1 + 2?")
    return path


def test_help_documents_the_command_and_its_exit_codes():
    top = cli("--help")
    assert top.returncode == 0 and "run" in top.stdout
    out = cli("run", "--help")
    assert out.returncode == 0
    for text in ("SUITE.py", "--out", "--baseline", "--concurrency", "make_runtime", "exit codes", "0  every case"):
        assert text in out.stdout, text


async def test_a_passing_suite_exits_0_and_saves_its_report(tmp_path):
    cassette = await _cassette(tmp_path)
    out = tmp_path / "report.jsonl"
    done = cli("run", str(SAMPLE), "--out", str(out), "--concurrency", "2", cassette=cassette)
    assert done.returncode == 0, done.stderr
    assert "2 case(s): 2 passed, 0 failed, 0 errored; pass rate 100%" in done.stdout
    assert "| sum | passed | 1/1 |" in done.stdout
    assert ev.SuiteReport.from_jsonl(out).pass_rate == 1.0
    assert "\r" not in done.stderr                  # no progress bar when stderr is not a terminal


async def test_a_failing_case_exits_1(tmp_path):
    cassette = await _cassette(tmp_path)
    done = cli("run", str(SAMPLE), expect="4", cassette=cassette)
    assert done.returncode == 1 and "| sum | failed |" in done.stdout


async def test_a_regression_against_the_baseline_exits_1(tmp_path):
    cassette = await _cassette(tmp_path)
    baseline = tmp_path / "baseline.jsonl"
    assert cli("run", str(SAMPLE), "--out", str(baseline), cassette=cassette).returncode == 0
    before = baseline.read_bytes()
    done = cli("run", str(SAMPLE), "--baseline", str(baseline), expect="4", cassette=cassette)
    assert done.returncode == 1
    assert "1 regression(s)" in done.stdout and "| sum | regression | passed | failed |" in done.stdout
    assert baseline.read_bytes() == before
    same = cli("run", str(SAMPLE), "--baseline", str(baseline), cassette=cassette)
    assert same.returncode == 0 and "0 regression(s)" in same.stdout


async def test_an_errored_case_exits_1(tmp_path):
    cassette = await _cassette(tmp_path)
    lines = cassette.read_text().splitlines()
    cassette.write_text("\n".join(lines[:2]) + "\n")        # the second model call is missing
    done = cli("run", str(SAMPLE), cassette=cassette)
    assert done.returncode == 1 and "errored" in done.stdout and "cassette_exhausted" in done.stdout


def test_unusable_input_exits_2_naming_file_and_line(tmp_path):
    broken = tmp_path / "broken_suite.py"
    broken.write_text("import arknb.eval as ev\ncases = [\n  ev.Case('a', 'hi'\n", encoding="utf-8")
    done = cli("run", str(broken))
    assert done.returncode == 2 and "suite_invalid" in done.stderr and f"{broken}, line" in done.stderr
    raising = tmp_path / "raising_suite.py"
    raising.write_text("x = 1\nraise ValueError('no cases today')\n", encoding="utf-8")
    done = cli("run", str(raising))
    assert done.returncode == 2 and f"{raising}, line 2: ValueError: no cases today" in done.stderr
    empty = tmp_path / "empty_suite.py"
    empty.write_text("cases = []\n", encoding="utf-8")
    assert "`cases` is empty" in cli("run", str(empty)).stderr
    no_factory = tmp_path / "no_factory.py"
    shutil.copy(SAMPLE, no_factory)
    no_factory.write_text(no_factory.read_text().replace("def make_runtime", "def other"), encoding="utf-8")
    done = cli("run", str(no_factory), cassette=tmp_path / "x.jsonl")
    assert done.returncode == 2 and "make_runtime" in done.stderr
    bad_baseline = tmp_path / "bad.jsonl"
    bad_baseline.write_text(json.dumps({"arknb_report": 1}) + "\n{broken\n", encoding="utf-8")
    done = cli("run", str(SAMPLE), "--baseline", str(bad_baseline), cassette=tmp_path / "x.jsonl")
    assert done.returncode == 2 and f"{bad_baseline}, line 2" in done.stderr
    assert cli("run", str(tmp_path / "absent.py")).returncode == 2
    assert cli("run", str(SAMPLE), "--concurrency", "0").returncode == 2


def _counting_suite(tmp_path: Path) -> tuple[Path, Path]:
    """A suite file whose make_runtime appends a line to a file each time it runs."""
    runs = tmp_path / "runs.txt"
    suite = tmp_path / "counting_suite.py"
    suite.write_text(
        "import arknb as ark, arknb.eval as ev\n"
        "cases = [ev.Case('hello', 'Hi', graders=[ev.contains('Hello')])]\n"
        "def make_runtime(case):\n"
        f"    with open({str(runs)!r}, 'a') as f:\n"
        "        f.write('run\\n')\n"
        "    return ark.AgentRuntime(ark.ScriptedModel(['Hello!']))\n", encoding="utf-8")
    return suite, runs


def test_out_into_a_missing_folder_creates_it(tmp_path):
    from arknb.eval.cli import main

    suite, runs = _counting_suite(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    target = tmp_path / "reports" / "nightly" / "report.jsonl"
    assert main(["run", str(suite), "--out", str(target), "--no-progress"], out=out, err=err) == 0, err.getvalue()
    assert ev.SuiteReport.from_jsonl(target).pass_rate == 1.0 and f"report saved to {target}" in err.getvalue()


def test_an_unusable_out_exits_2_before_any_case_runs(tmp_path):
    from arknb.eval.cli import main

    suite, runs = _counting_suite(tmp_path)
    folder = tmp_path / "reports"
    folder.mkdir()
    out, err = io.StringIO(), io.StringIO()
    assert main(["run", str(suite), "--out", str(folder), "--no-progress"], out=out, err=err) == 2
    assert "is a folder: give a file name" in err.getvalue() and out.getvalue() == ""
    assert not runs.exists()                        # nothing ran: no model call was spent
