"""Child process of the per-hook progress tests (tests/durable/test_hook_progress.py).

Runs one agent turn with two tool calls (``c1``, ``c2``) and three hooks in one slot
(``<slot>_1`` .. ``<slot>_3``). Every hook call appends ``<hook> <target>`` to
``<dir>/hooks.log`` (fsynced before the hook goes on; the target is the call id, or
``turn<n>`` for the model slots), and every tool execution ``<tool> <call id>`` to
``<dir>/effects.log``. The second hook, on its chosen target (``c2``, or turn 1), prints
``READY`` and blocks until the parent kills the process with SIGKILL.

The first hook leaves a mark the restore must keep although it never runs again: it
rewrites the request (a system note), the response (a prefix), the call (its
arguments) or the result (a prefix, plus an injected message); with ``deny`` it denies
``c1`` instead (before_tool_call).

Usage: python _hook_child.py <sqlite|postgres> <dir> <session_id> <slot> [deny]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import arknb as ark

SLOTS = ("before_model_call", "after_model_call", "before_tool_call", "after_tool_call")


def open_store(kind: str, directory: str | Path):
    if kind == "sqlite":
        return ark.SQLiteStore(Path(directory) / "arknb.sqlite3")
    return ark.PostgresStore((Path(directory) / "dsn").read_text())


def _append(path: Path, line: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def make_tools(directory: str | Path):
    @ark.tool
    def work(n: int, ctx: ark.ToolContext) -> str:
        """Do some work."""
        _append(Path(directory) / "effects.log", f"work {ctx.call_id}")
        return f"work {n} done"

    return [work]


def script() -> list:
    return [
        ark.ScriptedTurn(text="Working.", tool_calls=[
            ark.ToolCall(id="c1", name="work", arguments_json=json.dumps({"n": 1}), index=0),
            ark.ToolCall(id="c2", name="work", arguments_json=json.dumps({"n": 2}), index=1)]),
        ark.ScriptedTurn(text="All done."),
    ]


def install(runtime: ark.AgentRuntime, directory: str | Path, slot: str, *, kill: bool, deny: bool = False) -> None:
    """Register the three hooks of ``slot``; with ``kill`` the second one stops the process."""
    log = Path(directory) / "hooks.log"

    def target(ctx) -> str:
        call = getattr(ctx, "call", None)
        return call.id if call is not None else f"turn{ctx.turn}"

    async def stop_here() -> None:
        print("READY", flush=True)
        await asyncio.Event().wait()  # until SIGKILL

    def first(ctx):
        _append(log, f"{slot}_1 {target(ctx)}")
        if slot == "before_model_call":
            request = ctx.request
            return ark.ModelCallHookResult.proceed(request.model_copy(update={
                "messages": (*request.messages, ark.AgentMessage.user(f"note from {slot}_1"))}))
        if slot == "after_model_call":
            message = ctx.response.message
            rewritten = ark.AgentMessage.assistant(f"[{slot}_1] {message.text}", tool_calls=message.tool_calls)
            return ark.ModelResponseHookResult.proceed(ctx.response.model_copy(update={"message": rewritten}))
        if slot == "before_tool_call":
            if deny and ctx.call.id == "c1":
                return ark.ToolCallHookResult.deny(ark.ToolResult.from_text("c1 refused by policy", is_error=True),
                                                   "policy")
            return ark.ToolCallHookResult.proceed(ctx.call.with_arguments({"n": ctx.call.arguments["n"] * 10}))
        return ark.ToolResultHookResult.proceed(ark.ToolResult.from_text(f"[{slot}_1] {ctx.result.text}"),
                                                [ark.AgentMessage.user(f"injected for {ctx.call.id}")])

    async def second(ctx):
        _append(log, f"{slot}_2 {target(ctx)}")
        if kill and target(ctx) in ("c2", "turn1"):
            await stop_here()
        return None

    def third(ctx):
        _append(log, f"{slot}_3 {target(ctx)}")
        return None

    register = getattr(runtime.hooks, slot)
    register(first, name=f"{slot}_1")
    register(second, name=f"{slot}_2")
    register(third, name=f"{slot}_3")


async def main(kind: str, directory: str, session_id: str, slot: str, deny: bool) -> None:
    store = open_store(kind, directory)
    runtime = ark.AgentRuntime(ark.ScriptedModel(script()), tools=make_tools(directory), storage=store,
                               session_id=session_id)
    install(runtime, directory, slot, kill=True, deny=deny)
    result = await runtime.run("Do the work")
    print(f"UNEXPECTED {result.stop_reason} {result.error}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], "deny" in sys.argv[5:]))
