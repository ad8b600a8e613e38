"""MCP tool sources (issue 22): per-call overhead, connect time, memory with many servers.

Prints medians and ratios against baselines measured in the same run:

* per call: one ``add(a, b)`` tool of an SDK server over stdio, called
  (a) with the bare ``mcp`` ``ClientSession.call_tool`` (the floor),
  (b) through arknb (the registry's ``execute`` of the ``MCPServer`` entry: argument
      parsing, the call, the result conversion), and
  (c) the same function as a plain ``@ark.tool`` (in process, no server);
  target: (b) / (a) <= 1.2.
* connect: ``await MCPServer.connect()`` (spawn, initialize, list) vs the bare SDK doing
  the same (stdio_client + initialize + list_tools).
* memory: 10 servers of 50 tools each connected in one registry: resident memory of the
  arknb side (tracemalloc), and the tool list built once per change (the same definitions
  object on every model call).

(Named mcp_tools.py, not mcp.py: a script called mcp.py would shadow the mcp package.)
Usage: .venv/bin/python benchmarks/mcp_tools.py [--calls 300] [--connects 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import arknb as ark

SERVER = '''
import sys
from mcp.server import MCPServer
from mcp_types import ToolAnnotations
n = int(sys.argv[1]) if len(sys.argv) > 1 else 1
server = MCPServer("bench")

@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

for i in range(n - 1):
    def make(i=i):
        def tool_fn(text: str, count: int = 1) -> str:
            return text * count
        return tool_fn
    server.add_tool(make(), name=f"tool_{i:03d}", description=f"Tool number {i}: repeats a text.",
                    annotations=ToolAnnotations(readOnlyHint=True))
server.run()
'''


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def paired_calls(script: str, calls: int) -> tuple[list[float], list[float]]:
    """Bare SDK calls and arknb calls, alternated call by call (each on its own server
    process), so both see the same machine noise."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    server = ark.MCPServer.stdio(sys.executable, [script], name="bench")
    registry = ark.ToolRegistry([server])
    await registry.refresh()
    bare_times, ours_times = [], []
    try:
        async with stdio_client(StdioServerParameters(command=sys.executable, args=[script])) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await session.list_tools()
                for i in range(calls + 20):
                    start = time.perf_counter()
                    result = await session.call_tool("add", {"a": i, "b": 1})
                    bare = time.perf_counter() - start
                    assert result.content[0].text == str(i + 1)
                    call = ark.ToolCall(id=f"c{i}", name="add", arguments_json=json.dumps({"a": i, "b": 1}))
                    ctx = ark.ToolContext(session_id="s", run_id="r", call_id=call.id,
                                          idempotency_key=f"s:r:{call.id}")
                    start = time.perf_counter()
                    ours = await registry.execute(call, ctx)
                    elapsed = time.perf_counter() - start
                    assert ours.text == str(i + 1), ours.text
                    if i >= 20:
                        bare_times.append(bare)
                        ours_times.append(elapsed)
    finally:
        await server.aclose()
    return bare_times, ours_times


async def plain_calls(calls: int) -> list[float]:
    @ark.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    registry = ark.ToolRegistry([add])
    times = []
    for i in range(calls + 20):
        call = ark.ToolCall(id=f"c{i}", name="add", arguments_json=json.dumps({"a": i, "b": 1}))
        ctx = ark.ToolContext(session_id="s", run_id="r", call_id=call.id)
        start = time.perf_counter()
        result = await registry.execute(call, ctx)
        elapsed = time.perf_counter() - start
        assert result.text == str(i + 1)
        if i >= 20:
            times.append(elapsed)
    return times


async def bare_connect(script: str) -> float:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    start = time.perf_counter()
    async with stdio_client(StdioServerParameters(command=sys.executable, args=[script])) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            elapsed = time.perf_counter() - start
    return elapsed


async def arknb_connect(script: str) -> float:
    server = ark.MCPServer.stdio(sys.executable, [script], name="bench")
    start = time.perf_counter()
    await server.connect()
    elapsed = time.perf_counter() - start
    await server.aclose()
    return elapsed


async def many_servers(script: str, servers: int, tools: int) -> tuple[float, int, bool]:
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    made = [ark.MCPServer.stdio(sys.executable, [script, str(tools)], name=f"s{i}", prefix=f"s{i}")
            for i in range(servers)]
    registry = ark.ToolRegistry(made)
    await registry.refresh()
    first = registry.definitions()
    for _ in range(100):  # what 100 model calls cost: no change, no rebuild
        await registry.refresh()
    same = registry.definitions() is first
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    count = len(registry)
    for server in made:
        await server.aclose()
    return grown / 1e6, count, same


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--connects", type=int, default=5)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="arknb-mcp-bench-"))
    script = str(folder / "server.py")
    Path(script).write_text(SERVER)
    try:
        bare_times, ours_times = await paired_calls(script, args.calls)
        bare, ours = median_ms(bare_times), median_ms(ours_times)
        paired = statistics.median(o / b for o, b in zip(ours_times, bare_times))
        plain = median_ms(await plain_calls(args.calls))
        print(f"per call (median of {args.calls}, stdio):")
        print(f"  bare mcp ClientSession.call_tool   {bare:8.3f} ms")
        print(f"  arknb MCPServer (registry.execute) {ours:8.3f} ms   ratio to bare {ours / bare:5.2f}x "
              f"(median of paired ratios {paired:5.2f}x; target <= 1.2x)")
        print(f"  plain @ark.tool (in process)       {plain:8.3f} ms   MCP over stdio costs {ours / plain:7.1f}x "
              "a plain tool")
        bare_c = statistics.median([await bare_connect(script) for _ in range(args.connects)]) * 1000
        ours_c = statistics.median([await arknb_connect(script) for _ in range(args.connects)]) * 1000
        print(f"connect + initialize + list (median of {args.connects}):")
        print(f"  bare SDK {bare_c:8.1f} ms   arknb {ours_c:8.1f} ms   ratio {ours_c / bare_c:5.2f}x")
        grown, count, same = await many_servers(script, 10, 50)
        print(f"10 servers x 50 tools: {count} registry entries, {grown:.2f} MB allocated on the arknb side "
              f"(tracemalloc, SDK sessions included); definitions rebuilt per model call: {not same}")
    finally:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()


if __name__ == "__main__":
    asyncio.run(main())
