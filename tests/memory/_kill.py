"""Running a child process until it reports a line, then SIGKILLing it (crash tests)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path


def run_until_line(script: Path, *args: str, prefix: str) -> str:
    """Start ``python script args...``, read its first line, SIGKILL it; return the line.

    The child prints the line once what the test needs is saved, then blocks; the
    assertion names its stderr when it said anything else.
    """
    proc = subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
    finally:
        proc.send_signal(signal.SIGKILL)
        returncode = proc.wait(timeout=60)
    stderr = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    assert line.startswith(prefix), f"child said {line!r}; stderr:\n{stderr}"
    assert returncode == -signal.SIGKILL
    return line
