"""Deeply nested tool arguments are ``tool_arguments_invalid`` to the model, never a raw
RecursionError out of the run (issue 10 item 10)."""

from __future__ import annotations

import pytest

import arknb as ark
from arknb.runtime.loop_detector import tool_signature
from arknb.tools import ToolContext

LIMIT = 200


def nested_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


@ark.tool
def take(x: list) -> str:
    """Take a list."""
    return "took it"


@ark.tool
def deep_out() -> dict:
    """Return something nested far too deeply for JSON."""
    return {"v": nested(5_000)}


@pytest.mark.parametrize("depth", [LIMIT + 5, 5_000, 100_000])
async def test_deep_arguments_reach_the_model_as_tool_arguments_invalid(depth):
    args = '{"x": ' + nested_json(depth) + "}"
    runtime = ark.AgentRuntime(ark.ScriptedModel([
        ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="c1", name="take", arguments_json=args)]), "done"]),
        tools=[take])
    seen_by_hook: list[str] = []

    @runtime.hooks.before_tool_call
    def inspect_args(ctx):
        try:
            ctx.call.arguments
        except ark.ArkError as exc:
            seen_by_hook.append(exc.code)

    after = []
    runtime.bus.subscribe(ark.EventTypes.TOOL_AFTER, after.append)
    result = await runtime.run("go")

    assert result.stop_reason == "completed" and result.text == "done"
    (tool_message,) = [m for m in runtime.history if m.role == "tool"]
    assert tool_message.is_error
    assert tool_message.text == "invalid arguments for tool 'take': arguments are nested more than 200 levels deep"
    assert after[0].payload["result"]["error_code"] == "tool_arguments_invalid"
    assert seen_by_hook == ["tool_arguments_invalid"]


def test_tool_call_arguments_nested_too_deeply_raise_tool_arguments_invalid():
    for depth in (LIMIT, LIMIT + 1, 100_000):
        call = ark.ToolCall(id="c1", name="take", arguments_json='{"x": ' + nested_json(depth - 1) + "}")
        if depth <= LIMIT:
            assert call.arguments["x"] == nested(depth - 1)
            continue
        with pytest.raises(ark.ArkError) as info:
            call.arguments
        assert (info.value.layer, info.value.code) == ("tool", "tool_arguments_invalid")
        assert "nested more than 200 levels deep" in info.value.message


def test_the_loop_detector_signs_deep_arguments_by_their_text():
    text = '{"x": ' + nested_json(100_000) + "}"
    assert tool_signature(ark.ToolCall(id="c1", name="take", arguments_json=text)) == f"take:{text}"


async def test_a_tool_called_from_python_with_deep_arguments_runs_without_recursion_error():
    # A list of Any is not walked by validation: the tool gets the value as it is.
    result = await take.invoke({"x": nested(100_000)}, ToolContext(session_id="s", run_id="r"))
    assert (result.text, result.is_error) == ("took it", False)


async def test_a_return_value_too_deep_for_json_is_a_clear_tool_failure():
    runtime = ark.AgentRuntime(ark.ScriptedModel([
        ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="c1", name="deep_out")]), "done"]), tools=[deep_out])
    result = await runtime.run("go")
    assert result.stop_reason == "completed"
    (tool_message,) = [m for m in runtime.history if m.role == "tool"]
    assert tool_message.is_error
    assert tool_message.text.startswith("the tool ran, but its return value (dict) cannot be written as JSON")
