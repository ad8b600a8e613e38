"""`make demo` (python -m arknb.demo): the terminal story numbers the events it prints
1, 2, 3... (issue 25: event numbers shown to people are contiguous; the sequence gap a
restore leaves stays internal)."""

from __future__ import annotations

import re
import subprocess
import sys


def test_the_demo_completes_and_numbers_its_events_without_gaps():
    done = subprocess.run([sys.executable, "-m", "arknb.demo"], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    numbers = [int(n) for n in re.findall(r"^  #(\d+)", done.stdout, flags=re.M)]
    assert len(numbers) > 20 and numbers == list(range(1, len(numbers) + 1))
    assert "-> completed" in done.stdout
