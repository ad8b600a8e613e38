"""Widgets dropped without ``close()`` (issue 25 item 7): how many stay alive, and how many
bus listeners they leave on the runtime, after ``gc.collect()``.

For ``--count`` ChatWidgets and as many TimelineWidgets on one real ``AgentRuntime``:

* **dropped**: made and dropped, never shown (a loop, a marimo cell whose old element went);
* **shown** (the baseline, measured in the same run): each shown once (``_repr_mimebundle_``,
  what a notebook output does) and dropped: ipywidgets holds a shown widget until
  ``close()``, as it holds any widget a view may use, so these stay; a re-run of their cell
  closes them (``CELLS``, tested in tests/widgets/test_widget_lifecycle.py);
* **closed**: shown, then ``close()``.

Also the time to make and drop one widget (median of ``--reps``). Kernel side only, no
front end. Reports counts; nothing here is a pass/fail.

Usage: python benchmarks/widget_lifetime.py [--count 200] [--reps 5]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import weakref
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import arknb as ark  # noqa: E402
from arknb.widgets import ChatWidget, TimelineWidget  # noqa: E402


def listeners(runtime) -> int:
    return sum(len(entries) for entries in runtime.bus._by_type.values())


def measure(count: int, mode: str) -> tuple[int, int, int]:
    """(listeners before, listeners after gc, widgets alive after gc)."""
    runtime = ark.AgentRuntime(ark.ScriptedModel(["hi"]))
    gc.collect()
    before = listeners(runtime)
    refs = []
    for _ in range(count):
        for cls in (ChatWidget, TimelineWidget):
            widget = cls(runtime)
            if mode in ("shown", "closed"):
                widget._repr_mimebundle_()
            if mode == "closed":
                widget.close()
            refs.append(weakref.ref(widget))
            del widget
    gc.collect()
    alive = sum(r() is not None for r in refs)
    after = listeners(runtime)
    for ref in refs:  # leave nothing for the next measurement
        widget = ref()
        if widget is not None:
            widget.close()
    return before, after, alive


def make_and_drop(reps: int, count: int = 50) -> float:
    runtime = ark.AgentRuntime(ark.ScriptedModel(["hi"]))
    times = []
    for _ in range(reps):
        gc.collect()
        start = time.perf_counter()
        for _ in range(count):
            ChatWidget(runtime)
        gc.collect()
        times.append((time.perf_counter() - start) / count)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    print(f"{args.count} ChatWidgets + {args.count} TimelineWidgets on one runtime, then gc.collect()")
    print(f"{'mode':<10}{'listeners before':>18}{'after':>8}{'extra':>8}{'widgets alive':>15}")
    for mode in ("dropped", "shown", "closed"):
        before, after, alive = measure(args.count, mode)
        print(f"{mode:<10}{before:>18}{after:>8}{after - before:>8}{alive:>15}")
    per = make_and_drop(args.reps)
    print(f"make + drop + collect one ChatWidget: median {per * 1000:.2f} ms ({args.reps} reps of 50)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
