"""Child process of the SIGKILL recovery tests (tests/durable/test_crash_recovery.py).

Runs one agent turn with two tool calls (``fast`` and ``slow``) on the chosen store and
prints ``READY <point>`` when it reaches the chosen kill point, then blocks until the
parent kills it with SIGKILL. Every tool execution appends one line
``<tool> <call_id> <idempotency_key>`` to ``<dir>/effects.log`` (flushed and fsynced
before the tool goes on), so the parent counts executions across processes.

Usage: python _crash_child.py <sqlite|postgres|file> <dir> <session_id> <point> [idempotent]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import arknb as ark

POINTS = ("before_batch", "one_done_one_running", "later_done_earlier_running", "tool_started", "after_tool_hook",
          "model_stream", "after_model_hook", "between_commits")


def open_store(kind: str, directory: str | Path):
    if kind == "sqlite":
        return ark.SQLiteStore(Path(directory) / "arknb.sqlite3")
    if kind == "postgres":  # the DSN is in <dir>/dsn
        return ark.PostgresStore((Path(directory) / "dsn").read_text())
    return ark.FileStateStorage(Path(directory) / "states")


def record(directory: str | Path, tool: str, ctx: ark.ToolContext) -> None:
    with open(Path(directory) / "effects.log", "a", encoding="utf-8") as handle:
        handle.write(f"{tool} {ctx.call_id} {ctx.idempotency_key}\n")
        handle.flush()
        os.fsync(handle.fileno())


def make_tools(directory: str | Path, *, idempotent: bool = False, on_slow=None, slow_risk: str = "safe"):
    @ark.tool
    async def fast(n: int, ctx: ark.ToolContext) -> str:
        """Finish at once."""
        record(directory, "fast", ctx)
        return f"fast {n} done"

    @ark.tool(idempotent=idempotent, risk=slow_risk)
    async def slow(n: int, ctx: ark.ToolContext) -> str:
        """Take a while."""
        record(directory, "slow", ctx)
        if on_slow is not None:
            await on_slow(ctx)
        return f"slow {n} done"

    return [fast, slow]


def script(chunk_delay: float = 0.0, *, slow_first: bool = False) -> list:
    """One turn calling ``fast`` (c1) and ``slow`` (c2), or with ``slow_first`` ``slow``
    (c1) and ``fast`` (c2): the later call finishes while the earlier one runs."""
    names = ("slow", "fast") if slow_first else ("fast", "slow")
    return [
        ark.ScriptedTurn(text=["Running ", "both."], tool_calls=[
            ark.ToolCall(id=f"c{i + 1}", name=name, arguments_json=json.dumps({"n": i + 1}), index=i)
            for i, name in enumerate(names)], chunk_delay=chunk_delay),
        ark.ScriptedTurn(text="Both finished."),
    ]


def ready(point: str) -> None:
    print(f"READY {point}", flush=True)


async def hang() -> None:
    await asyncio.Event().wait()  # until SIGKILL


async def main(kind: str, directory: str, session_id: str, point: str, idempotent: bool) -> None:
    store = open_store(kind, directory)

    async def on_slow(ctx: ark.ToolContext) -> None:
        if point in ("one_done_one_running", "later_done_earlier_running", "tool_started"):
            if point == "one_done_one_running" and kind in ("sqlite", "postgres"):
                # Kill only once the finished sibling's result is committed.
                while True:
                    op = await store.find_operation(session_id, f"{ctx.run_id}:c1")
                    if op is not None and op.completed:
                        break
                    await asyncio.sleep(0.01)
            if point == "later_done_earlier_running":
                # Kill once the later sibling (c2, fast) has finished and its result is
                # committed; a runtime that keeps it in memory is killed after 20 s.
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:
                    op = await store.find_operation(session_id, f"{ctx.run_id}:c2")
                    if op is not None and op.phase.rank >= ark.durable.OperationPhase.RAW_SAVED.rank:
                        break
                    await asyncio.sleep(0.01)
            ready(point)
            await hang()

    model = ark.ScriptedModel(script(chunk_delay=0.05 if point == "model_stream" else 0.0,
                                     slow_first=point == "later_done_earlier_running"))
    runtime = ark.AgentRuntime(model, tools=make_tools(directory, idempotent=idempotent, on_slow=on_slow),
                               storage=store, session_id=session_id)

    if point == "before_batch":
        @runtime.hooks.before_tool_call
        async def stop_in_planning(ctx):
            if ctx.call.id == "c2":
                ready(point)
                await hang()

    if point == "after_tool_hook":
        @runtime.hooks.after_tool_call
        async def stop_in_response_hook(ctx):
            if ctx.call.id == "c2":
                ready(point)
                await hang()

    if point == "after_model_hook":
        @runtime.hooks.after_model_call
        async def stop_in_model_response_hook(ctx):
            if ctx.turn == 1:
                ready(point)
                await hang()

    if point == "between_commits":
        @runtime.hooks.before_persist_state
        async def stop_between_commits(ctx):
            # The model call's completed operation is committed; its state save is not.
            if ctx.reason == "after_model_text":
                ready(point)
                await hang()

    if point == "model_stream":
        seen = []

        def on_chunk(event):
            if not seen:
                seen.append(event)
                ready(point)
                time.sleep(3600)  # the process stops mid-stream until SIGKILL

        runtime.bus.subscribe(ark.EventTypes.LLM_CHUNK, on_chunk)

    result = await runtime.run("Run both tools")
    print(f"UNEXPECTED {result.stop_reason} {result.error}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], len(sys.argv) > 5))
