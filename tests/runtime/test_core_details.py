"""Smaller guarantees of the loop: answer order, error-code table, diagnostics for ignored actions."""

from __future__ import annotations

import pytest

import arknb as ark
from arknb.domain.errors import ErrorCode


@ark.tool
async def echo(text: str) -> str:
    """Echo the text."""
    return text


async def test_tool_answers_follow_call_index_even_when_model_lists_calls_out_of_order() -> None:
    calls = [ark.ToolCall(id="second", name="echo", arguments_json='{"text": "b"}', index=1),
             ark.ToolCall(id="first", name="echo", arguments_json='{"text": "a"}', index=0)]
    runtime = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(tool_calls=calls), "done"]), tools=[echo])
    result = await runtime.run("go")
    assert result.stop_reason == "completed"
    answers = [m.tool_call_id for m in runtime.history if m.role == "tool"]
    assert answers == ["first", "second"]


async def test_hold_on_the_final_flush_is_reported_and_the_text_kept() -> None:
    runtime = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(text=["abc", "def"])]))
    diagnostics: list[dict] = []
    runtime.bus.subscribe(ark.EventTypes.HOOK_DIAGNOSTIC, lambda e: diagnostics.append(dict(e.payload)))

    @runtime.hooks.on_model_chunk
    def always_hold(ctx):
        return ark.ModelChunkHookResult.hold("wait for more")

    result = await runtime.run("go")
    assert result.text == "abcdef"
    assert [d["hook"] for d in diagnostics] == ["always_hold"]
    assert "final" in diagnostics[0]["message"]


@pytest.mark.parametrize("slot", ["after_run", "after_persist_state"])
def test_fail_closed_on_an_observer_slot_is_refused(slot: str) -> None:
    runtime = ark.AgentRuntime(ark.ScriptedModel([]))
    decorator = getattr(runtime.hooks, slot)
    with pytest.raises(ark.ArkError) as info:
        decorator(fail_closed=True)(lambda ctx: None)
    assert info.value.code == "invalid_argument" and "fail_closed" in info.value.message


def test_every_code_the_runtime_raises_is_in_the_error_table() -> None:
    import arknb.domain.errors as errors
    table = errors.__doc__
    missing = [code.value for code in ErrorCode if code.value not in table]
    assert missing == []


@ark.tool(risk="dangerous")
async def wipe(path: str) -> str:
    """Wipe a path."""
    raise AssertionError("a cancelled approval must never run the tool")


async def test_cancel_while_awaiting_approval_ends_the_paused_run_cancelled() -> None:
    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="w", name="wipe",
                                                                          arguments_json='{"path": "/"}')])])
    runtime = ark.AgentRuntime(model, tools=[wipe])
    types: list[str] = []
    runtime.bus.subscribe(ark.EventTypes.ANY, lambda e: types.append(e.type))
    paused = await runtime.run("wipe it")
    assert paused.stop_reason == "awaiting_approval"
    assert runtime.cancel() is True
    result = await runtime.current_run
    assert result.stop_reason == "cancelled"
    assert runtime.controller.list_pending_approvals() == []
    assert runtime.state.is_running is False and runtime.state.pending_approval is None
    answer = [m for m in runtime.history if m.role == "tool"]
    assert [m.tool_call_id for m in answer] == ["w"] and answer[0].is_error
    assert types[-2:] == [ark.EventTypes.STATE_PERSISTED, ark.EventTypes.AGENT_CANCELLED]
    assert runtime.cancel() is False  # nothing left to cancel
    with pytest.raises(ark.ArkError) as info:
        await runtime.resume()
    assert info.value.code == "nothing_to_resume"
