"""Tool batches inside a run (DESIGN §6, §7): concurrency, order by index, id preservation, error results."""

from __future__ import annotations

import asyncio

import arknb as ark
from arknb import AgentRuntime, EventTypes, ScriptedModel, ScriptedTurn, ToolCall, ToolCallHookResult

from ._events_kit import of, record




def calls_turn(*calls: ToolCall) -> ScriptedTurn:
    return ScriptedTurn(text="working", tool_calls=list(calls))


async def test_tool_batch_runs_concurrently():
    @ark.tool
    async def fetch_a() -> str:
        """Slow fetch A."""
        await asyncio.sleep(0.2)
        return "A"

    @ark.tool
    async def fetch_b() -> str:
        """Slow fetch B."""
        await asyncio.sleep(0.2)
        return "B"

    runtime = AgentRuntime(ScriptedModel([
        calls_turn(ToolCall(id="a", name="fetch_a", index=0), ToolCall(id="b", name="fetch_b", index=1)),
        "done"]), tools=[fetch_a, fetch_b])
    events = record(runtime)
    result = await runtime.run("go")
    assert result.stop_reason == "completed"
    before, after = of(events, EventTypes.TOOL_BEFORE), of(events, EventTypes.TOOL_AFTER)
    assert len(before) == len(after) == 2
    assert len({e.payload["batch_id"] for e in before + after}) == 1
    span = max(e.timestamp for e in after) - min(e.timestamp for e in before)
    assert span < 0.35, f"two 0.2 s tools took {span:.3f} s: not concurrent"


async def test_results_are_ordered_by_call_index_not_completion_order():
    gate = asyncio.Event()

    @ark.tool
    async def slow() -> str:
        """Finishes only after fast has finished."""
        await gate.wait()
        return "slow result"

    @ark.tool
    async def fast() -> str:
        """Finishes first."""
        gate.set()
        return "fast result"

    runtime = AgentRuntime(ScriptedModel([
        calls_turn(ToolCall(id="s", name="slow", index=0), ToolCall(id="f", name="fast", index=1)), "done"]),
        tools=[slow, fast])
    events = record(runtime)
    await runtime.run("go")
    assert [e.payload["call"]["id"] for e in of(events, EventTypes.TOOL_AFTER)] == ["f", "s"]  # completion order
    tool_messages = [m for m in runtime.history if m.role == "tool"]
    assert [(m.tool_call_id, m.text) for m in tool_messages] == [("s", "slow result"), ("f", "fast result")]
    # The next model call sees the answers in call order, right after the assistant message.
    sent = runtime.model.requests[1].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool", "tool"]


async def test_rewritten_tool_call_keeps_original_id_end_to_end():
    @ark.tool
    def search(q: str) -> str:
        """Search."""
        return f"results for {q}"

    runtime = AgentRuntime(ScriptedModel([calls_turn(ToolCall(id="call_abc", name="search",
                                                              arguments_json='{"q": "weather"}')), "ok"]),
                           tools=[search])
    events = record(runtime)
    runtime.hooks.before_tool_call(
        lambda ctx: ToolCallHookResult.proceed(ToolCall(id="call_xyz", name="search",
                                                        arguments_json='{"q": "Beijing weather"}')),
        name="localise")
    await runtime.run("weather?")
    executed = of(events, EventTypes.TOOL_AFTER)[0].payload
    assert executed["call"]["id"] == "call_abc"
    assert executed["result"]["text"] == "results for Beijing weather"
    tool_message = next(m for m in runtime.history if m.role == "tool")
    assert tool_message.tool_call_id == "call_abc"
    assert runtime.history[1].tool_calls[0].id == "call_abc"


async def test_unknown_tool_gives_tool_not_found_result_and_the_run_continues():
    @ark.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    runtime = AgentRuntime(ScriptedModel([calls_turn(ToolCall(id="c1", name="multiply", arguments_json="{}")),
                                          "sorry"]), tools=[add])
    events = record(runtime)
    result = await runtime.run("2*3?")
    assert result.stop_reason == "completed"
    payload = of(events, EventTypes.TOOL_AFTER)[0].payload["result"]
    assert (payload["is_error"], payload["error_code"]) == (True, "tool_not_found")
    assert "multiply" in payload["text"] and "add" in payload["text"]
    assert of(events, EventTypes.APPROVAL_REQUIRED) == []  # seed 000 §10.1: unknown tools never wait for approval
    tool_message = next(m for m in runtime.history if m.role == "tool")
    assert tool_message.is_error and tool_message.tool_call_id == "c1"


async def test_bad_json_arguments_give_tool_arguments_invalid_result():
    ran: list = []

    @ark.tool
    def add(a: int, b: int) -> int:
        """Add."""
        ran.append((a, b))
        return a + b

    runtime = AgentRuntime(ScriptedModel([
        calls_turn(ToolCall(id="bad_json", name="add", arguments_json='{"a": 1, "b":', index=0),
                   ToolCall(id="bad_type", name="add", arguments_json='{"a": "one", "b": 2}', index=1)),
        "oops"]), tools=[add])
    events = record(runtime)
    result = await runtime.run("add")
    assert result.stop_reason == "completed"
    results = {e.payload["call"]["id"]: e.payload["result"] for e in of(events, EventTypes.TOOL_AFTER)}
    assert results["bad_json"]["error_code"] == "tool_arguments_invalid" and results["bad_json"]["is_error"]
    assert results["bad_type"]["error_code"] == "tool_arguments_invalid"
    assert ran == []  # validated before execution


async def test_raising_tool_gives_an_error_result_not_a_failed_run():
    @ark.tool
    def explode() -> str:
        """Always fails."""
        raise ValueError("disk full")

    runtime = AgentRuntime(ScriptedModel([calls_turn(ToolCall(id="c1", name="explode")), "handled"]),
                           tools=[explode])
    events = record(runtime)
    result = await runtime.run("go")
    assert result.stop_reason == "completed"
    payload = of(events, EventTypes.TOOL_AFTER)[0].payload["result"]
    assert payload["is_error"] and "disk full" in payload["text"]


async def test_denied_call_gets_its_synthetic_result_and_tool_denied_event():
    @ark.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    runtime = AgentRuntime(ScriptedModel([calls_turn(ToolCall(id="c1", name="add", arguments_json='{"a": -1, "b": 2}')),
                                          "ok"]), tools=[add])
    events = record(runtime)

    @runtime.hooks.before_tool_call
    def no_negatives(ctx):
        if ctx.call.arguments.get("a", 0) < 0:
            return ToolCallHookResult.deny(ark.ToolResult.from_text("negative input refused", is_error=True), "policy")
        return None

    await runtime.run("add")
    assert of(events, EventTypes.TOOL_BEFORE) == []
    denied = of(events, EventTypes.TOOL_DENIED)[0].payload
    assert (denied["call"]["id"], denied["hook"], denied["reason"]) == ("c1", "no_negatives", "policy")
    assert (denied["result"]["text"], denied["result"]["error_code"]) == ("negative input refused", "tool_denied")
    tool_message = next(m for m in runtime.history if m.role == "tool")
    assert (tool_message.tool_call_id, tool_message.text, tool_message.is_error) == ("c1", "negative input refused", True)


async def test_injected_messages_follow_the_tool_answers_in_history():
    @ark.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    runtime = AgentRuntime(ScriptedModel([calls_turn(ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}', index=0),
                                                     ToolCall(id="c2", name="add", arguments_json='{"a": 3, "b": 4}', index=1)),
                                          "ok"]), tools=[add])
    runtime.hooks.after_tool_call(
        lambda ctx: ark.ToolResultHookResult.proceed(None, [ark.AgentMessage.user(f"audit {ctx.call.id}")]),
        name="audit")
    await runtime.run("add")
    assert [(m.role, m.text) for m in runtime.history[1:]] == [
        ("assistant", "working"), ("tool", "3"), ("tool", "7"), ("user", "audit c1"), ("user", "audit c2"),
        ("assistant", "ok")]
