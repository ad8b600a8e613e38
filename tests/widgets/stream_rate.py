"""Measure the stream path: kernel->browser messages per second at 10,000 chunks/s,
and the kernel-side cost per chunk with a ChatWidget + TimelineWidget attached vs without.

Run: python -m tests.widgets.stream_rate   (not a test: numbers, not pass/fail)
"""

from __future__ import annotations

import asyncio
import time

from arknb.events import AgentEvent, EventBus
from arknb.widgets import ChatWidget, TimelineWidget

N = 10_000
RATE = 10_000  # chunks per second


class _Runtime:
    def __init__(self) -> None:
        self.bus = EventBus()
        self.state = type("S", (), {"history": (), "pending_approval": None})()
        self.is_running = False
        self.controller = type("C", (), {"list_pending_approvals": staticmethod(lambda: [])})()


def _events(n: int) -> list[AgentEvent]:
    return [AgentEvent("llm.chunk", "s", "r", i + 2, 0.0, {"kind": "text", "text": "x", "index": i}) for i in range(n)]


async def paced(attach: bool) -> dict[str, float]:
    rt = _Runtime()
    sent: list[int] = []
    if attach:
        widgets = [ChatWidget(rt), TimelineWidget(rt)]
        for w in widgets:
            w.send = lambda content, buffers=None, _s=sent: _s.append(1)
            w.observe(lambda change, _s=sent: _s.append(1), names=["_snapshot"])
    rt.bus.publish(AgentEvent("llm.before", "s", "r", 1, 0.0, {"turn": 1}))
    events = _events(N)
    start = time.perf_counter()
    for i, event in enumerate(events):
        rt.bus.publish(event)
        if i % 100 == 99:  # 100 chunks per 10 ms = 10,000 chunks/s, yielding to the loop
            target = start + (i + 1) / RATE
            await asyncio.sleep(max(0.0, target - time.perf_counter()))
    elapsed = time.perf_counter() - start
    await asyncio.sleep(0.1)
    return {"elapsed_s": elapsed, "messages": len(sent), "messages_per_s": len(sent) / elapsed}


def cost_per_chunk(attach: bool) -> float:
    rt = _Runtime()
    if attach:
        for w in (ChatWidget(rt, call_later=lambda d, cb: _Handle()), TimelineWidget(rt, call_later=lambda d, cb: _Handle())):
            w.send = lambda content, buffers=None: None
    rt.bus.publish(AgentEvent("llm.before", "s", "r", 1, 0.0, {"turn": 1}))
    events = _events(100_000)
    start = time.perf_counter()
    for event in events:
        rt.bus.publish(event)
    return (time.perf_counter() - start) / len(events) * 1e6


class _Handle:
    def cancel(self) -> None:
        pass


def main() -> None:
    for attach in (False, True):
        r = asyncio.run(paced(attach))
        print(f"widgets={'on ' if attach else 'off'} 10k chunks in {r['elapsed_s']:.2f}s: "
              f"{r['messages']} messages, {r['messages_per_s']:.1f} msg/s")
    off, on = cost_per_chunk(False), cost_per_chunk(True)
    print(f"publish cost per chunk: {off:.2f} us without widgets, {on:.2f} us with chat+timeline "
          f"(+{on - off:.2f} us)")


if __name__ == "__main__":
    main()
