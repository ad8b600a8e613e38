"""Subject (d'): arknb with a ``TimelineWidget`` attached (kernel side only).

The front end is faked (``fake_frontend.py``): every comm message is JSON-encoded as
the kernel would and counted. Each timed run ends with the widget's pending flush, so
everything the timeline sends for the run is inside the timing. Reports messages and
bytes per run.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workload import CHUNKS, ToolCounter, main, report_unavailable  # noqa: E402

SUBJECT = "arknb+TimelineWidget"

try:
    import arknb as ark
    ark.AgentRuntime  # noqa: B018
    from arknb.widgets import TimelineWidget
    from arknb_common import ModelBuildTimer, make_tool, stream_run
    from fake_frontend import install
except (ImportError, AttributeError) as exc:
    report_unavailable(SUBJECT, f"n/a (not built yet: {exc})")
    sys.exit(0)

traffic = install()
timer = ModelBuildTimer()
per_run: list[tuple[int, int, int]] = []  # (chunks per turn, messages, bytes)
_previous: list = []


async def make(chunks: int):
    while _previous:  # a widget of an earlier run must not flush into this one
        _previous.pop().close()
    counter = ToolCounter()
    runtime = ark.AgentRuntime(timer.script(chunks), tools=[make_tool(counter)], system_prompt="Be brief.")
    widget = TimelineWidget(runtime)
    _previous.append(widget)

    async def run():
        traffic.reset()
        outcome = await stream_run(runtime, counter, chunks)
        widget._coalescer.flush_now()  # what the timeline still had to send for this run
        per_run.append((chunks, traffic.messages, traffic.bytes))
        return outcome

    return run


def extras() -> dict:
    msgs = sorted(m for c, m, _ in per_run if c == CHUNKS)
    size = sorted(b for c, _, b in per_run if c == CHUNKS)
    return {**timer.extras(), "messages_per_run": msgs[len(msgs) // 2] if msgs else None,
            "bytes_per_run": size[len(size) // 2] if size else None}


if __name__ == "__main__":
    main(SUBJECT, make, fresh_per_run=True, extras=extras)
