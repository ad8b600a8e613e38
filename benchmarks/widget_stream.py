"""A fast stream into a ChatWidget (issue 6 target: 10,000 chunks/s in, at most 35
messages/s leaving the kernel).

Kernel side only; the front end is faked (``fake_frontend.py``: every comm message is
JSON-encoded as the kernel would and counted). Two measurements, each with no widget,
a ``ChatWidget``, and both a ChatWidget and a ``TimelineWidget`` (``chat+timeline``, the
notebook of subject (d) with both widgets; messages are counted over both comms):

1. **Paced**: the model streams ``--chunks`` text chunks at ``--rate`` chunks/s (bursts
   every millisecond, since asyncio cannot sleep for 100 µs). Reports the rate the
   run actually reached and the messages/s that left the kernel during the stream.
2. **Flat out**: the same chunks with no pacing. Reports the kernel-side CPU per chunk,
   with and without the widget; the difference is what the widget costs per chunk.

Reports n/a until ``arknb.AgentRuntime`` and ``arknb.widgets.ChatWidget`` exist.

Usage: python benchmarks/widget_stream.py [--chunks 10000] [--rate 10000] [--reps 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

TARGET_RATE = 10_000
BOTH = "chat+timeline"
TARGET_MSGS_PER_S = 35


class PacedModel:
    """Wraps a ScriptedModel and releases its events at ``rate`` events/s."""

    def __init__(self, inner, rate: float | None) -> None:
        self.inner = inner
        self.rate = rate

    async def stream(self, request, *, cancel=None):
        start = time.perf_counter()
        sent = 0
        async for event in self.inner.stream(request, cancel=cancel):
            yield event
            sent += 1
            if self.rate is not None and sent >= self.rate * (time.perf_counter() - start):
                await asyncio.sleep(0.001)

    async def generate(self, request, *, cancel=None):
        return await self.inner.generate(request, cancel=cancel)


async def one_run(ark, ChatWidget, traffic, chunks: int, rate: float | None, widget: bool | str) -> dict:
    model = PacedModel(ark.ScriptedModel([ark.ScriptedTurn(text=[f"w{i} " for i in range(chunks)])]),
                       rate)
    runtime = ark.AgentRuntime(model, system_prompt="Be brief.")
    w = ChatWidget(runtime) if widget else None
    timeline = None
    if widget == BOTH:  # (d) with both widgets attached: the chat and a TimelineWidget
        from arknb.widgets import TimelineWidget
        timeline = TimelineWidget(runtime)
    traffic.reset()
    seen = 0
    first = last = None
    c0 = time.process_time()
    t0 = time.perf_counter()
    async for event in runtime.run_stream("stream"):
        if event.type == ark.EventTypes.LLM_CHUNK:
            now = time.perf_counter()
            first = first if first is not None else now
            last = now
            seen += 1
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    await asyncio.sleep(0.1)  # let a trailing coalesced flush go out
    stream_msgs = sum(1 for t in traffic.times if first is not None and first <= t <= last)
    total_msgs = traffic.messages
    if w is not None and hasattr(w, "close"):
        w.close()
    if timeline is not None:
        timeline.close()
    assert seen == chunks, (seen, chunks)
    span = (last - first) if first is not None and last > first else wall
    # The rate reached is taken over the whole run (conservative); messages/s over the
    # span in which chunks reached the consumer.
    return {"wall_s": wall, "cpu_us_per_chunk": cpu / chunks * 1e6,
            "chunks_per_s": chunks / wall, "msgs_during_stream": stream_msgs,
            "msgs_per_s": stream_msgs / span, "msgs_total": total_msgs,
            "bytes_total": traffic.bytes}


async def measure(args) -> dict:
    import arknb as ark
    from arknb.widgets import ChatWidget

    from fake_frontend import install

    traffic = install()
    out: dict = {}
    for mode, rate in (("paced", float(args.rate)), ("flat", None)):
        for widget in (False, True, BOTH):
            await one_run(ark, ChatWidget, traffic, min(args.chunks, 500), rate, widget)  # warm-up
            runs = [await one_run(ark, ChatWidget, traffic, args.chunks, rate, widget)
                    for _ in range(args.reps)]
            label = BOTH if widget == BOTH else "widget" if widget else "no widget"
            out[f"{mode}/{label}"] = {
                k: statistics.median(r[k] for r in runs) for k in runs[0]}
    flat_w, flat_n = out["flat/widget"], out["flat/no widget"]
    paced_w = out["paced/widget"]
    out["widget_cpu_us_per_chunk"] = flat_w["cpu_us_per_chunk"] - flat_n["cpu_us_per_chunk"]
    out["targets"] = {
        f"reaches {args.rate:,} chunks/s with the widget": paced_w["chunks_per_s"] >= 0.95 * args.rate,
        f"<= {TARGET_MSGS_PER_S} messages/s leave the kernel": paced_w["msgs_per_s"] <= TARGET_MSGS_PER_S,
    }
    return out


def render(r: dict) -> str:
    lines = ["| mode | chunks/s reached (whole run) | messages/s out (during stream) | messages total "
             "| kernel CPU µs/chunk |", "|---|--:|--:|--:|--:|"]
    for key, v in r.items():
        if "/" not in key:
            continue
        lines.append(f"| {key} | {v['chunks_per_s']:,.0f} | {v['msgs_per_s']:.1f} | "
                     f"{v['msgs_total']:.0f} | {v['cpu_us_per_chunk']:.1f} |")
    lines.append(f"\nwidget cost per chunk (flat out, CPU): {r['widget_cpu_us_per_chunk']:.1f} µs")
    for name, met in r["targets"].items():
        lines.append(f"- {name}: {'met' if met else 'NOT met'}")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chunks", type=int, default=10_000)
    p.add_argument("--rate", type=int, default=TARGET_RATE)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    try:
        import arknb as ark
        ark.AgentRuntime  # noqa: B018
        from arknb.widgets import ChatWidget  # noqa: F401
    except (ImportError, AttributeError) as exc:
        print(f"widget stream: n/a (not built yet: {exc})")
        return
    results = asyncio.run(measure(args))
    text = render(results)
    print(json.dumps(results, indent=2) if args.json else text)
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "widget_stream.md").write_text(text)


if __name__ == "__main__":
    main()
