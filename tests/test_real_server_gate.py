"""The real-server suite never passes by accident: without a cached llama-server it is skipped,
and under CI=true it fails, naming the build script (issue 24 item 4)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("ci", "outcome"), [("", "skipped"), ("true", "error")])
def test_without_a_cached_server_the_real_suite_skips_locally_and_fails_in_ci(tmp_path, ci, outcome):
    env = {**os.environ, "ARKNB_CACHE": str(tmp_path / "empty-cache"), "CI": ci, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                           "tests/real/test_llama_server.py::test_streamed_text_and_usage_through_the_runtime"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    out = done.stdout + done.stderr
    assert f"1 {outcome}" in out, out
    assert "run tests/real/build_llama_server.sh" in out
    assert done.returncode == (0 if outcome == "skipped" else 1), out
    if ci:
        assert "required under CI=true" in out
