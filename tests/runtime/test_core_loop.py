"""The agent loop (DESIGN §7): transcripts, one active run, run_stream, hook actions, after_run."""

from __future__ import annotations

import asyncio

import pytest

import arknb as ark
from arknb import (
    AgentMessage, AgentRuntime, ArkError, BeforeRunHookResult, EventTypes, ModelCallHookResult, ModelResponse,
    ModelResponseHookResult, ScriptedModel, ScriptedTurn, StopReason, ToolCall, ToolResultHookResult,
    TurnCompletionHookResult,
)

from ._events_kit import of, record


@ark.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b




def add_turn(call_id: str = "c1", a: int = 1, b: int = 2) -> ScriptedTurn:
    return ScriptedTurn(text=["Let me ", "add."],
                        tool_calls=[ToolCall(id=call_id, name="add", arguments_json=f'{{"a": {a}, "b": {b}}}')])


def assert_sequence_increasing(events):
    sequences = [e.sequence for e in events]
    assert all(b > a for a, b in zip(sequences, sequences[1:])), sequences


async def test_tool_run_transcript():
    runtime = AgentRuntime(ScriptedModel([add_turn(), "It is 3."]), tools=[add], system_prompt="Be brief.")
    events = record(runtime)
    result = await runtime.run("What is 1 + 2?")
    assert (result.stop_reason, result.text, result.turns) == ("completed", "It is 3.", 2)
    transcript = [(e.type, e.payload.get("reason") or e.payload.get("text") or e.payload.get("action")
                   or e.payload.get("stop_reason")) for e in events]
    assert transcript == [
        ("agent.started", None),
        ("state.persisted", "after_user_input"),
        ("llm.before", None),
        ("llm.chunk", "Let me "),
        ("llm.chunk", "add."),
        ("llm.chunk", '{"a": 1, "b": 2}'),  # the call's arguments (kind tool_call), before the message completes
        ("llm.after", None),
        ("state.persisted", "after_model_text"),
        ("tool.before", None),
        ("tool.after", None),
        ("turn.completed", "accept"),
        ("state.persisted", "after_tool_batch"),
        ("llm.before", None),
        ("llm.chunk", "It is 3."),
        ("llm.after", None),
        ("state.persisted", "after_model_text"),
        ("turn.completed", "accept"),
        ("state.persisted", "terminal"),
        ("agent.success", "It is 3."),
    ]
    assert_sequence_increasing(events)
    assert {e.run_id for e in events} == {result.run_id}
    assert {e.session_id for e in events} == {runtime.session_id}
    assert len({e.event_id for e in events}) == len(events)
    started = events[0].payload
    assert started["input"][0]["contents"][0]["text"] == "What is 1 + 2?"
    after_tool = of(events, EventTypes.TOOL_AFTER)[0].payload
    assert (after_tool["call"]["id"], after_tool["result"]["text"], after_tool["result"]["is_error"]) == ("c1", "3", False)
    assert of(events, EventTypes.STATE_PERSISTED)[-1].payload["mandatory"] is True
    assert [m.role for m in runtime.history] == ["user", "assistant", "tool", "assistant"]
    assert runtime.history[2].tool_call_id == "c1"
    # The system prompt is sent on every call, not stored in history.
    first_request = runtime.model.requests[0]
    assert [m.role for m in first_request.messages] == ["system", "user"]
    assert [t.name for t in first_request.tools] == ["add"]


async def test_sequence_strictly_increases_across_runs_of_a_session():
    runtime = AgentRuntime(ScriptedModel(["one", "two"]))
    events = record(runtime)
    await runtime.run("first")
    await runtime.run("second")
    assert len({e.run_id for e in events}) == 2
    assert_sequence_increasing(events)


async def test_second_start_while_running_is_refused_with_run_already_active():
    runtime = AgentRuntime(ScriptedModel([ScriptedTurn(text=["a", "b"], chunk_delay=0.01)]))
    handle = runtime.start("first")
    assert runtime.is_running
    with pytest.raises(ArkError) as info:
        runtime.start("second")
    assert (info.value.code, info.value.layer) == ("run_already_active", "runtime")
    with pytest.raises(ArkError, match="run_already_active|still active"):
        await runtime.run("third")
    result = await handle
    assert result.stop_reason == "completed"
    assert not runtime.is_running and runtime.current_run is None
    assert len(runtime.model.requests) == 1


async def test_run_stream_yields_the_whole_transcript():
    runtime = AgentRuntime(ScriptedModel([add_turn(), "It is 3."]), tools=[add])
    recorded = record(runtime)
    streamed = [e async for e in runtime.run_stream("What is 1 + 2?")]
    assert streamed == recorded
    assert streamed[0].type == EventTypes.AGENT_STARTED and streamed[-1].type == EventTypes.AGENT_SUCCESS
    assert runtime.last_result.text == "It is 3."


async def test_run_stream_closed_early_cancels_the_run():
    runtime = AgentRuntime(ScriptedModel([ScriptedTurn(text=["a", "b", "c"], chunk_delay=0.05)]))
    stream = runtime.run_stream("hi")
    async for event in stream:
        if event.type == EventTypes.LLM_CHUNK:
            break
    await stream.aclose()
    assert not runtime.is_running
    assert runtime.last_result.stop_reason == StopReason.CANCELLED


# --- hook actions end to end ---------------------------------------------------------

async def test_before_run_rewrites_the_input():
    runtime = AgentRuntime(ScriptedModel(["ok"]))
    events = record(runtime)
    runtime.hooks.before_run(lambda ctx: BeforeRunHookResult.proceed([AgentMessage.user(ctx.input[0].text.upper())]),
                             name="shout")
    await runtime.run("quiet please")
    assert runtime.history[0].text == "QUIET PLEASE"
    assert runtime.model.requests[0].messages[-1].text == "QUIET PLEASE"
    decision = of(events, EventTypes.HOOK_DECISION)[0].payload
    assert (decision["slot"], decision["hook"], decision["action"]) == ("before_run", "shout", "rewrite")


async def test_before_run_abort_ends_aborted_without_calling_the_model():
    runtime = AgentRuntime(ScriptedModel(["never"]))
    events = record(runtime)
    runtime.hooks.before_run(lambda ctx: BeforeRunHookResult.abort("off topic"), name="topic_guard")
    result = await runtime.run("hi")
    assert result.stop_reason == "aborted"
    assert (result.error.code, result.error.layer) == ("hook_abort", "security")
    assert runtime.model.requests == []
    assert [e.type for e in events] == ["agent.started", "hook.decision", "state.persisted", "agent.aborted"]
    assert events[-1].payload["hook"] == "topic_guard"


async def test_before_model_call_respond_skips_the_model():
    runtime = AgentRuntime(ScriptedModel([]))
    events = record(runtime)
    canned = ModelResponse(message=AgentMessage.assistant("cached answer"))
    runtime.hooks.before_model_call(lambda ctx: ModelCallHookResult.respond(canned, "cache hit"), name="cache")
    result = await runtime.run("hi")
    assert (result.stop_reason, result.text) == ("completed", "cached answer")
    assert runtime.model.requests == []
    assert of(events, EventTypes.LLM_BEFORE)[0].payload["responded_by_hook"] is True


async def test_after_model_call_retry_is_bounded():
    runtime = AgentRuntime(ScriptedModel(["bad 1", "bad 2", "good"]), max_model_retries=2)
    calls: list[str] = []

    def picky(ctx):
        calls.append(ctx.response.message.text)
        return ModelResponseHookResult.retry("not good") if ctx.response.message.text != "good" else None

    runtime.hooks.after_model_call(picky)
    result = await runtime.run("hi")
    assert (result.stop_reason, result.text) == ("completed", "good")
    assert calls == ["bad 1", "bad 2", "good"]
    assert [m.text for m in runtime.history] == ["hi", "good"]  # retried answers never enter history

    endless = AgentRuntime(ScriptedModel(["x", "y", "z", "w"]), max_model_retries=1)
    endless.hooks.after_model_call(lambda ctx: ModelResponseHookResult.retry("never happy"), name="never_happy")
    failed = await endless.run("hi")
    assert failed.stop_reason == "failed"
    assert failed.error.code == "model_retries_exhausted" and "never_happy" in failed.error.message
    assert len(endless.model.requests) == 2


async def test_after_tool_call_stop_ends_the_run_stopped_with_paired_history():
    runtime = AgentRuntime(ScriptedModel([add_turn(), "never"]), tools=[add])
    runtime.hooks.after_tool_call(lambda ctx: ToolResultHookResult.stop(reason="one call is enough"), name="once")
    result = await runtime.run("hi")
    assert result.stop_reason == "stopped"
    assert len(runtime.model.requests) == 1
    assert [m.role for m in runtime.history] == ["user", "assistant", "tool"]


async def test_on_turn_completion_continue_run_adds_messages_and_runs_another_turn():
    runtime = AgentRuntime(ScriptedModel(["draft", "final"]))
    runtime.hooks.on_turn_completion(
        lambda ctx: TurnCompletionHookResult.continue_run([AgentMessage.user("improve it")]) if ctx.turn == 1 else None,
        name="reviewer")
    result = await runtime.run("write")
    assert (result.stop_reason, result.text, result.turns) == ("completed", "final", 2)
    assert [m.text for m in runtime.history] == ["write", "draft", "improve it", "final"]


async def test_max_turns_ends_the_run_with_max_turns():
    turns = [add_turn(f"c{i}", i, i) for i in range(5)]
    runtime = AgentRuntime(ScriptedModel(turns), tools=[add], max_turns=2)
    events = record(runtime)
    result = await runtime.run("loop")
    assert (result.stop_reason, result.turns) == ("max_turns", 2)
    assert result.error.code == "max_turns"
    assert events[-1].type == EventTypes.AGENT_ERROR
    assert len(runtime.model.requests) == 2


async def test_script_exhaustion_fails_the_run_with_a_clear_error():
    runtime = AgentRuntime(ScriptedModel([add_turn()]), tools=[add])
    events = record(runtime)
    result = await runtime.run("hi")
    assert result.stop_reason == "failed"
    assert (result.error.code, result.error.layer) == ("script_exhausted", "config")
    assert "no turn left" in result.error.message and "1 turn" in result.error.message
    assert events[-1].type == EventTypes.AGENT_ERROR
    assert events[-1].payload["error"]["code"] == "script_exhausted"
    assert not runtime.is_running and runtime.state.is_running is False


# --- after_run ---------------------------------------------------------------------------

def _complete():
    return AgentRuntime(ScriptedModel(["done"])), None


def _fail():
    return AgentRuntime(ScriptedModel([])), None


def _abort():
    runtime = AgentRuntime(ScriptedModel(["x"]))
    runtime.hooks.before_model_call(lambda ctx: ModelCallHookResult.abort("no"), name="stopper")
    return runtime, None


def _cancel():
    return AgentRuntime(ScriptedModel([ScriptedTurn(text=["a", "b", "c"], chunk_delay=0.05)])), "cancel"


@pytest.mark.parametrize("make, expected", [(_complete, "completed"), (_fail, "failed"), (_abort, "aborted"),
                                            (_cancel, "cancelled")], ids=["completed", "failed", "aborted", "cancelled"])
async def test_after_run_runs_exactly_once_per_run(make, expected):
    runtime, action = make()
    seen: list = []
    runtime.hooks.after_run(lambda ctx: seen.append(ctx.result.stop_reason), name="audit")
    if action == "cancel":
        chunk = asyncio.Event()
        runtime.bus.subscribe(EventTypes.LLM_CHUNK, lambda e: chunk.set())
        handle = runtime.start("hi")
        await chunk.wait()
        runtime.cancel()
        runtime.cancel()  # twice: still one terminal outcome
        result = await handle
    else:
        result = await runtime.run("hi")
    assert result.stop_reason == expected
    assert seen == [expected]


async def test_after_run_exception_becomes_diagnostic_and_keeps_stop_reason():
    runtime = AgentRuntime(ScriptedModel(["done"]))
    events = record(runtime)

    @runtime.hooks.after_run
    def broken_metrics(ctx):
        raise RuntimeError("metrics backend down")

    result = await runtime.run("hi")
    assert result.stop_reason == "completed" and result.error is None
    assert [e.type for e in events][-2:] == [EventTypes.AGENT_SUCCESS, EventTypes.HOOK_DIAGNOSTIC]
    diagnostic = events[-1].payload
    assert (diagnostic["slot"], diagnostic["hook"], diagnostic["kind"]) == ("after_run", "broken_metrics", "exception")
    assert events[-1].run_id == result.run_id
    assert runtime.state.last_stop_reason == "completed"


async def test_fail_closed_hook_failure_aborts_the_run_with_hook_abort():
    runtime = AgentRuntime(ScriptedModel([add_turn(), "never"]), tools=[add])
    events = record(runtime)

    @runtime.hooks.before_tool_call(fail_closed=True)
    def security_scan(ctx):
        raise ConnectionError("scanner unreachable")

    result = await runtime.run("hi")
    assert result.stop_reason == "aborted"
    assert (result.error.code, result.error.layer) == ("hook_abort", "security")
    assert of(events, EventTypes.TOOL_BEFORE) == []
    kinds = [(e.type, e.payload.get("hook")) for e in events if e.type.startswith("hook.")]
    assert kinds == [("hook.diagnostic", "security_scan"), ("hook.decision", "security_scan")]
    assert [m.role for m in runtime.history][-1] == "tool"  # the unanswered call was answered


async def test_fail_open_hook_failure_lets_the_run_complete_with_a_diagnostic():
    runtime = AgentRuntime(ScriptedModel([add_turn(), "It is 3."]), tools=[add])
    events = record(runtime)
    runtime.hooks.before_tool_call(lambda ctx: 1 / 0, name="buggy")
    result = await runtime.run("hi")
    assert result.stop_reason == "completed"
    diagnostic = of(events, EventTypes.HOOK_DIAGNOSTIC)[0].payload
    assert (diagnostic["hook"], diagnostic["kind"]) == ("buggy", "exception")
    assert "ZeroDivisionError" in diagnostic["message"]
