"""The AG-UI server's overhead on the shared workload (issue 27, DESIGN §18).

The workload of ``workload.py`` (10 turns, 20 text chunks each, 9 tool calls) runs two ways:

1. **In-process**: ``runtime.run_stream()`` consumed in this process (the baseline).
2. **AG-UI over loopback**: the same runtime behind ``ark.agui.app`` in a server process
   (uvicorn, 127.0.0.1), driven by a minimal HTTP client here that reads the SSE stream
   and parses every event (what a client must do at least).

Measured twice: with the server in a process of its own (a deployment) and with the server
on this process's loop (a notebook serving its own agent). Printed: medians of time to the
first text event and of the total time, and their ratios (target total <= 1.3x); bytes on
the wire per model text chunk (whole body / chunks, and one TEXT_MESSAGE_CONTENT frame;
fragments that reach one write together are joined, so there may be fewer text events than
model chunks, never less text); then 20 threads run at once on one server, each checked
(RUN_FINISHED success, all the text, every tool result): errors must be 0.

Usage: python benchmarks/agui.py [--reps 30] [--concurrent 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from workload import CHUNKS, PROMPT, TOOL_CALLS, TURNS, ToolCounter, chunk_text  # noqa: E402

# Every text chunk of every turn, in order: what the client must have received in all.
EXPECTED_TEXT = "".join(chunk_text(t, i) for t in range(TURNS) for i in range(CHUNKS))

TARGET_RATIO = 1.3


def _factory():
    import arknb as ark
    from arknb_common import make_tool, script

    counter = ToolCounter()
    return lambda thread: ark.AgentRuntime(script(CHUNKS), tools=[make_tool(counter)], session_id=thread,
                                           max_turns=TURNS + 1)


def _thread_ids(reps: int, concurrent: int) -> list[str]:
    return ([f"warm-{i}" for i in range(3)] + [f"rep-{i}" for i in range(reps)]
            + [f"many-{i}" for i in range(concurrent)])


async def _serve(reps: int, concurrent: int) -> None:
    import arknb as ark

    # Set-up is untimed on both sides (workload.py): the in-process baseline builds its
    # runtime before the clock starts, so the server's runtimes are built before the
    # requests come; the factory hands each thread its own.
    build = _factory()
    ready = {thread: build(thread) for thread in _thread_ids(reps, concurrent)}
    server = await ark.agui.serve(lambda thread: ready.pop(thread))
    print(server.url, flush=True)
    await asyncio.Event().wait()


async def in_process() -> tuple[float, float]:
    """(seconds to the first text chunk, seconds in all) of one run_stream run (set-up untimed)."""
    import arknb as ark

    runtime = _factory()(f"bench-{time.perf_counter_ns()}")
    first = None
    chunks = 0
    t0 = time.perf_counter()
    async for event in runtime.run_stream(PROMPT):
        if event.type == ark.EventTypes.LLM_CHUNK and event.payload.get("kind") == "text":
            chunks += 1
            if first is None:
                first = time.perf_counter() - t0
    total = time.perf_counter() - t0
    assert chunks == TURNS * CHUNKS and runtime.last_result.stop_reason == "completed", chunks
    return first, total


class LoopbackClient:
    """A minimal HTTP/1.1 client: the request in one write (TCP_NODELAY, as browsers), the
    chunked SSE body parsed as it arrives. httpx here adds ~20 ms before the response
    headers of each request on this machine, which would measure the client, not the server."""

    def __init__(self, url: str) -> None:
        host, port = url.split("//", 1)[1].strip("/").split(":")
        self.host, self.port = host, int(port)

    async def post(self, body: dict):
        """Yield ``(arrival time, raw SSE line)`` for each line of the response."""
        reader, writer = await asyncio.open_connection(self.host, self.port)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        data = json.dumps(body).encode()
        writer.write(b"POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (self.host.encode(), len(data), data))
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200"), head
            pending = b""
            while True:
                size = int((await reader.readline()).strip(), 16)
                if size == 0:
                    return
                pending += await reader.readexactly(size)
                await reader.readexactly(2)
                *lines, pending = pending.split(b"\n")
                now = time.perf_counter()
                for line in lines:
                    yield now, line
        finally:
            writer.close()


async def over_agui(client: LoopbackClient, thread: str) -> tuple[float, float, int, list[int]]:
    """(first text, total, body bytes, sizes of TEXT_MESSAGE_CONTENT frames) of one run."""
    body = {"threadId": thread, "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": PROMPT}]}
    first = None
    size = 0
    frames: list[int] = []
    text: list[str] = []
    results = 0
    end = None
    t0 = time.perf_counter()
    async for arrived, line in client.post(body):
        size += len(line) + 1
        if not line.startswith(b"data: "):
            continue
        event = json.loads(line[6:])
        kind = event["type"]
        if kind == "TEXT_MESSAGE_CONTENT":
            frames.append(len(line) + 2)
            text.append(event["delta"])
            if first is None:
                first = arrived - t0
        elif kind == "TOOL_CALL_RESULT":
            results += 1
        elif kind in ("RUN_FINISHED", "RUN_ERROR"):
            end = event
    total = time.perf_counter() - t0
    if end is None or end["type"] != "RUN_FINISHED" or "".join(text) != EXPECTED_TEXT or results != TOOL_CALLS:
        raise AssertionError(f"thread {thread}: {len(frames)} text events, {results} results, end {end}")
    return first, total, size, frames


async def measure(url: str, reps: int, concurrent: int) -> dict:
    local_first, local_total, wire_first, wire_total, sizes, frame_sizes = [], [], [], [], [], []
    client = LoopbackClient(url)
    for i in range(3):  # warm-up, both ways
        await in_process()
        await over_agui(client, f"warm-{i}")
    for i in range(reps):  # interleaved, so drift on a busy machine hits both alike
        f, t = await in_process()
        local_first.append(f)
        local_total.append(t)
        f, t, size, frames = await over_agui(client, f"rep-{i}")
        wire_first.append(f)
        wire_total.append(t)
        sizes.append(size)
        frame_sizes.extend(frames)

    t0 = time.perf_counter()
    outcomes = await asyncio.gather(*(over_agui(client, f"many-{i}") for i in range(concurrent)),
                                    return_exceptions=True)
    many = time.perf_counter() - t0
    errors = [repr(o) for o in outcomes if isinstance(o, BaseException)]
    med = statistics.median
    return {
        "reps": reps,
        "in_process_first_text_ms": med(local_first) * 1e3,
        "in_process_total_ms": med(local_total) * 1e3,
        "agui_first_text_ms": med(wire_first) * 1e3,
        "agui_total_ms": med(wire_total) * 1e3,
        "ratio_first_text": med(wire_first) / med(local_first),
        "ratio_total": med(wire_total) / med(local_total),
        "body_bytes_per_text_chunk": med(sizes) / (TURNS * CHUNKS),
        "text_frame_bytes": med(frame_sizes),
        "text_events_per_run": len(frame_sizes) / reps,
        "concurrent_threads": concurrent,
        "concurrent_wall_ms": many * 1e3,
        "concurrent_errors": len(errors),
        "concurrent_error_examples": errors[:3],
    }


async def _measure_in_one_process(reps: int, concurrent: int) -> dict:
    """The server on this process's loop (as in a notebook): no second process to wake."""
    import arknb as ark

    build = _factory()
    ready = {thread: build(thread) for thread in _thread_ids(reps, concurrent)}
    server = await ark.agui.serve(lambda thread: ready.pop(thread))
    try:
        return await measure(server.url, reps, concurrent)
    finally:
        await server.aclose()


def _report(title: str, result: dict, reps: int) -> None:
    print(f"-- {title}")
    print(f"{'':28}{'first text':>12}{'total':>12}")
    print(f"{'run_stream() in-process':28}{result['in_process_first_text_ms']:10.2f}ms"
          f"{result['in_process_total_ms']:10.2f}ms")
    print(f"{'AG-UI over loopback':28}{result['agui_first_text_ms']:10.2f}ms{result['agui_total_ms']:10.2f}ms")
    print(f"{'ratio (AG-UI / in-process)':28}{result['ratio_first_text']:11.2f}x{result['ratio_total']:11.2f}x"
          f"   (target total <= {TARGET_RATIO}x: {'met' if result['ratio_total'] <= TARGET_RATIO else 'NOT met'})")
    print(f"bytes on the wire: {result['body_bytes_per_text_chunk']:.0f} B of body per model text chunk (all events "
          f"counted), {result['text_frame_bytes']:.0f} B per TEXT_MESSAGE_CONTENT frame, "
          f"{result['text_events_per_run']:.0f} text events per run for {TURNS * CHUNKS} model chunks")
    print(f"{result['concurrent_threads']} concurrent threads on one server: {result['concurrent_wall_ms']:.0f} ms, "
          f"{result['concurrent_errors']} errors {result['concurrent_error_examples'] or ''}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--concurrent", type=int, default=20)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(args.reps, args.concurrent))
        return 0
    server = subprocess.Popen([sys.executable, __file__, "--serve", "--reps", str(args.reps), "--concurrent",
                               str(args.concurrent)], stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        if not url:
            raise SystemExit("the AG-UI server did not start")
        separate = asyncio.run(measure(url, args.reps, args.concurrent))
    finally:
        server.kill()
        server.wait()
    together = asyncio.run(_measure_in_one_process(args.reps, args.concurrent))
    print(f"workload: {TURNS} turns x {CHUNKS} text chunks, {TOOL_CALLS} tool calls; medians of {args.reps} runs")
    _report("server in its own process (a deployment)", separate, args.reps)
    _report("server on the client's loop (a notebook serving itself; the client's parsing counts too)",
            together, args.reps)
    print("BENCH-RESULT " + json.dumps({"subject": "agui", "separate_process": separate, "same_loop": together}))
    return 1 if separate["concurrent_errors"] or together["concurrent_errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
