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
   The variants run interleaved, rep by rep, each after ``gc.collect()``.

3. **Session growth** (issue 15): one session of ``--runs`` runs (each a question, a
   tool call and an answer) with a ``ChatWidget`` attached; the bytes that left the
   kernel during runs 10, 100 and 1,000. After the first snapshot the chat sends only
   what changed, so a run costs the same however long the session already is (target:
   run 1,000 <= 1.2 x run 10). Also the size of the static HTML copy in the notebook
   output at the end (republished once the chat has been quiet for a moment, not per run).

Reports n/a until ``arknb.AgentRuntime`` and ``arknb.widgets.ChatWidget`` exist.

Usage: python benchmarks/widget_stream.py [--chunks 10000] [--rate 10000] [--reps 3] [--runs 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
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


MEASURED_RUNS = (10, 100, 1000)
WINDOW = 5
"""Each point is the median of this many consecutive runs starting there."""


async def session_growth(ark, ChatWidget, traffic, runs: int) -> dict:
    """Bytes and messages leaving the kernel per run, at runs 10/100/1000 of one session."""

    @ark.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    turns = []
    for n in range(1, runs + WINDOW):
        turns.append(ark.ScriptedTurn(text=["Let me ", "add ", "that."], tool_calls=[
            ark.ToolCall(id=f"c{n}", name="add", arguments_json=f'{{"a": {n}, "b": 2}}')]))
        turns.append(ark.ScriptedTurn(text=["It is ", f"{n + 2}."]))
    runtime = ark.AgentRuntime(ark.ScriptedModel(turns), tools=[add], system_prompt="Be brief.")
    chat = ChatWidget(runtime)
    points = [p for p in MEASURED_RUNS if p <= runs]
    samples: dict[int, list[dict]] = {p: [] for p in points}
    for n in range(1, runs + WINDOW):
        point = next((p for p in points if p <= n < p + WINDOW), None)
        if point is not None:
            await asyncio.sleep(0.06)  # the previous run's trailing flush goes out first
            traffic.reset()
        result = await runtime.run(f"What is {n} + 2?")
        assert result.stop_reason == "completed", result.stop_reason
        if point is not None:
            await asyncio.sleep(0.06)
            samples[point].append({"bytes": traffic.bytes, "messages": traffic.messages,
                                   "entries": len(chat.transcript["entries"])})
    out: dict = {p: {k: statistics.median(s[k] for s in samples[p]) for k in samples[p][0]} for p in points}
    static = getattr(chat, "_static_html", None)  # absent before issue 15: measured as 0
    out["static_copy_bytes"] = len(static().encode()) if static else 0
    out["to_html_bytes"] = len(chat.to_html().encode()) if hasattr(chat, "to_html") else 0
    chat.close()
    return out


async def measure(args) -> dict:
    import arknb as ark
    from arknb.widgets import ChatWidget

    from fake_frontend import install

    traffic = install()
    out: dict = {}
    variants = (False, True, BOTH)
    for mode, rate in (("paced", float(args.rate)), ("flat", None)):
        for widget in variants:
            await one_run(ark, ChatWidget, traffic, min(args.chunks, 500), rate, widget)  # warm-up
        # Interleaved rep by rep, each after a collection: garbage one variant left (its
        # closed widgets, its transcript) is not charged to the next one's CPU.
        runs: dict = {widget: [] for widget in variants}
        for _ in range(args.reps):
            for widget in variants:
                gc.collect()
                runs[widget].append(await one_run(ark, ChatWidget, traffic, args.chunks, rate, widget))
        for widget in variants:
            label = BOTH if widget == BOTH else "widget" if widget else "no widget"
            out[f"{mode}/{label}"] = {
                k: statistics.median(r[k] for r in runs[widget]) for k in runs[widget][0]}
    growth = await session_growth(ark, ChatWidget, traffic, args.runs)
    out["session"] = growth
    flat_w, flat_n = out["flat/widget"], out["flat/no widget"]
    paced_w = out["paced/widget"]
    out["widget_cpu_us_per_chunk"] = flat_w["cpu_us_per_chunk"] - flat_n["cpu_us_per_chunk"]
    out["targets"] = {
        f"reaches {args.rate:,} chunks/s with the widget": paced_w["chunks_per_s"] >= 0.95 * args.rate,
        f"<= {TARGET_MSGS_PER_S} messages/s leave the kernel": paced_w["msgs_per_s"] <= TARGET_MSGS_PER_S,
    }
    first, last = min(k for k in growth if isinstance(k, int)), max(k for k in growth if isinstance(k, int))
    if first != last:
        out["targets"][f"bytes per run at run {last:,} <= 1.2x run {first:,}"] = (
            growth[last]["bytes"] <= 1.2 * growth[first]["bytes"])
    return out


def render(r: dict) -> str:
    lines = ["| mode | chunks/s reached (whole run) | messages/s out (during stream) | messages total "
             "| kernel CPU µs/chunk |", "|---|--:|--:|--:|--:|"]
    for key, v in r.items():
        if "/" not in key or key == "session":
            continue
        lines.append(f"| {key} | {v['chunks_per_s']:,.0f} | {v['msgs_per_s']:.1f} | "
                     f"{v['msgs_total']:.0f} | {v['cpu_us_per_chunk']:.1f} |")
    lines.append(f"\nwidget cost per chunk (flat out, CPU): {r['widget_cpu_us_per_chunk']:.1f} µs")
    session = r.get("session") or {}
    runs = [k for k in session if isinstance(k, int)]
    if runs:
        lines += ["", f"| chat session (median of {WINDOW} runs from) | bytes sent during a run | messages "
                      "| transcript entries |",
                  "|---|--:|--:|--:|"]
        for n in sorted(runs):
            v = session[n]
            lines.append(f"| run {n:,} | {v['bytes']:,.0f} | {v['messages']:.0f} | {v['entries']:,.0f} |")
        lines.append(f"\nstatic HTML copy in the output at the end: {session['static_copy_bytes']:,} bytes "
                     f"(republished once the chat is quiet, not per run); to_html(): {session['to_html_bytes']:,} bytes")
    for name, met in r["targets"].items():
        lines.append(f"- {name}: {'met' if met else 'NOT met'}")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chunks", type=int, default=10_000)
    p.add_argument("--rate", type=int, default=TARGET_RATE)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--runs", type=int, default=1000, help="runs in the session-growth measurement")
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
