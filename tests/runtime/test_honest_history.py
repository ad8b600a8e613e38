"""Honest history (issue 10 item 7): every call's answer says what really became of it.

After an ``after_tool_call`` abort the calls that ran keep their real results; a call
cancelled while it ran is recorded as cancelled while running, one that never started as
not executed; cancelling a paused run answers each frozen call with what is known of it.
Each on the in-memory path (no store, MemoryStateStorage) and on SQLiteStore (operations).
"""

from __future__ import annotations

import asyncio
import json

import pytest

import arknb as ark


@pytest.fixture(params=["none", "memory", "sqlite"])
def storage(request, tmp_path):
    if request.param == "none":
        return None
    if request.param == "memory":
        return ark.MemoryStateStorage()
    return ark.SQLiteStore(tmp_path / "arknb.sqlite3")


def two_calls(*names: str) -> ark.ScriptedTurn:
    return ark.ScriptedTurn(text="Working.", tool_calls=[
        ark.ToolCall(id=f"c{i}", name=name, arguments_json=json.dumps({"n": i}), index=i - 1)
        for i, name in enumerate(names, start=1)])


def answers(runtime: ark.AgentRuntime) -> dict[str, ark.AgentMessage]:
    return {m.tool_call_id: m for m in runtime.history if m.role == "tool"}


async def close(runtime: ark.AgentRuntime, storage) -> None:
    await runtime.aclose()
    if storage is not None and hasattr(storage, "aclose"):
        await storage.aclose()


async def test_after_an_after_tool_call_abort_the_calls_that_ran_keep_their_real_results(storage):
    ran = []

    @ark.tool
    async def first(n: int) -> str:
        """Finish."""
        ran.append("first")
        return f"first {n} done"

    @ark.tool
    async def second(n: int) -> str:
        """Finish too."""
        ran.append("second")
        return f"second {n} done"

    runtime = ark.AgentRuntime(ark.ScriptedModel([two_calls("first", "second"), "unused"]),
                               tools=[first, second], storage=storage, session_id="honest-abort")
    seen = []

    @runtime.hooks.after_tool_call
    def stop_at_first(ctx):
        seen.append(ctx.call.id)
        if ctx.call.id == "c1":
            return ark.ToolResultHookResult.abort("the first result looks wrong")

    result = await runtime.run("go")
    assert result.stop_reason == "aborted"
    assert sorted(ran) == ["first", "second"]
    got = answers(runtime)
    # Both calls ran: both keep the result their tool returned, none is "not executed".
    assert got["c1"].text == "first 1 done" and got["c2"].text == "second 2 done"
    assert not any("not executed" in m.text for m in got.values())
    # After the abort the later answer's hooks are skipped: the run ends.
    assert seen == ["c1"]
    if storage is not None:
        restored = ark.AgentRuntime(ark.ScriptedModel([]), tools=[first, second], storage=storage,
                                    session_id="honest-abort")
        await runtime.aclose()
        await restored.load()
        assert {k: m.text for k, m in answers(restored).items()} == {"c1": "first 1 done", "c2": "second 2 done"}
        await close(restored, storage)
    else:
        await runtime.aclose()


async def test_a_call_cancelled_while_running_is_recorded_as_cancelled_while_running(storage):
    started = asyncio.Event()

    @ark.tool
    async def quick(n: int) -> str:
        """Finish at once."""
        return f"quick {n} done"

    @ark.tool
    async def endless(n: int, ctx: ark.ToolContext) -> str:
        """Never finish by itself."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    runtime = ark.AgentRuntime(ark.ScriptedModel([two_calls("quick", "endless")]), tools=[quick, endless],
                               storage=storage, session_id="honest-cancel")
    handle = runtime.start("go")
    await asyncio.wait_for(started.wait(), 30)
    assert runtime.cancel()
    result = await asyncio.wait_for(handle.wait(), 30)
    assert result.stop_reason == "cancelled"
    got = answers(runtime)
    assert got["c1"].text == "quick 1 done" and not got["c1"].is_error
    assert got["c2"].is_error and got["c2"].text.startswith("cancelled while running")
    assert "not executed" not in got["c2"].text
    if isinstance(storage, ark.SQLiteStore):
        # Its operation says so too: ended by the cancel while it ran, its attempt closed as
        # such, and what became of it unknown (its effect may have happened).
        [op] = [op for op in await storage.list_operations("honest-cancel") if op.purpose_key.endswith(":c2")]
        assert op.completed and op.status == "indeterminate" and op.error.code == "cancelled"
        assert "while it ran" in op.error.message and op.attempts[-1].outcome == "cancelled"
    await close(runtime, storage)


async def test_cancelling_a_paused_run_keeps_denials_and_says_not_executed_only_of_calls_never_started(storage):
    @ark.tool(risk="dangerous")
    async def deploy(n: int) -> str:
        """Deploy."""
        return "deployed"

    @ark.tool
    async def forbidden(n: int) -> str:
        """Never allowed."""
        return "ran"

    runtime = ark.AgentRuntime(ark.ScriptedModel([two_calls("deploy", "forbidden")]), tools=[deploy, forbidden],
                               storage=storage, session_id="honest-paused")

    @runtime.hooks.before_tool_call
    def policy(ctx):
        if ctx.call.name == "forbidden":
            return ark.ToolCallHookResult.deny(ark.ToolResult.from_text("forbidden by policy", is_error=True))

    result = await runtime.run("go")
    assert result.stop_reason == "awaiting_approval"
    assert runtime.cancel()
    final = await asyncio.wait_for(runtime.current_run.wait(), 30)
    assert final.stop_reason == "cancelled"
    got = answers(runtime)
    assert got["c2"].text == "forbidden by policy"
    assert got["c1"].text.startswith("not executed") and got["c1"].is_error
    await close(runtime, storage)
