"""Bad input: every public entry point refuses wrong types and impossible values with an error naming the field."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from arknb import (
    AgentMessage, AgentRuntime, ArkError, ContentPart, EventBus, HookRegistry, LoopDetector, ScriptedModel,
    ScriptedTurn, ToolCall, ToolResult,
)


def model() -> ScriptedModel:
    return ScriptedModel(["hi"])


@pytest.mark.parametrize("kwargs, field", [
    ({"tools": 123}, "tools"),
    ({"tools": "add"}, "tools"),
    ({"tools": [5]}, "tool"),
    ({"hooks": 123}, "hooks"),
    ({"hooks": [5]}, "AgentHook"),
    ({"session_id": 5}, "session id"),
    ({"session_id": "../etc"}, "session id"),
    ({"system_prompt": 5}, "system_prompt"),
    ({"max_turns": 0}, "max_turns"),
    ({"max_turns": True}, "max_turns"),
    ({"max_turns": "3"}, "max_turns"),
    ({"max_model_retries": -1}, "max_model_retries"),
    ({"storage": "dir"}, "storage"),
    ({"config": {"model": "x"}}, "config"),
    ({"loop_detector": 3}, "loop_detector"),
    ({"event_bus": "bus"}, "event_bus"),
    ({"require_approval": "no"}, "require_approval"),
    ({"secrets": "sk-abcdefghijkl"}, "secrets"),
    ({"secrets": 5}, "secrets"),
    ({"secrets": ["long-enough-secret", 5]}, "secrets[1]"),
    ({"secrets": ["short"]}, "secrets[0]"),
    ({"clock": 5}, "clock"),
    ({"state": "x"}, "state"),
])
def test_agent_runtime_kwargs_bad_input_raises_invalid_argument_naming_the_field(kwargs, field):
    with pytest.raises(ArkError) as info:
        AgentRuntime(model(), **kwargs)
    assert info.value.code == "invalid_argument"
    assert field in info.value.message


@pytest.mark.parametrize("bad_model", [None, "gpt-4", object()])
def test_agent_runtime_model_must_be_an_llm_client(bad_model):
    with pytest.raises(ArkError) as info:
        AgentRuntime(bad_model)
    assert info.value.code == "invalid_argument" and "model" in info.value.message


@pytest.mark.parametrize("value, words", [
    (5, "input"), (None, "input"), ({"text": "hi"}, "input"), ("", "input"), ("   ", "input"),
    ([], "input"), ([5], "input"), ([AgentMessage.user("a"), "b"], "input"),
    ([AgentMessage.tool("c1", "x")], "tool messages"),
])
async def test_run_input_bad_input_raises_invalid_argument(value, words):
    runtime = AgentRuntime(model())
    with pytest.raises(ArkError) as info:
        await runtime.run(value)
    assert info.value.code == "invalid_argument" and words in info.value.message
    assert not runtime.is_running
    assert runtime.model.requests == []


async def test_run_accepts_the_documented_input_shapes():
    runtime = AgentRuntime(ScriptedModel(["1", "2", "3", "4"]))
    await runtime.run("text")
    await runtime.run(AgentMessage.user("message"))
    await runtime.run(["part one ", ContentPart.from_text("part two")])
    await runtime.run([AgentMessage.user("a"), AgentMessage.user("b")])
    assert [m.text for m in runtime.history if m.role == "user"] == ["text", "message", "part one part two", "a", "b"]


@pytest.mark.parametrize("args, kwargs, field", [
    ((1,), {}, "threshold"), (("3",), {}, "threshold"), ((True,), {}, "threshold"),
    ((3, 2), {}, "window"), ((3, "8"), {}, "window"),
    ((), {"on_detect": "warn"}, "on_detect"),
    ((), {"diagnose": "explain"}, "diagnose"),
    ((), {"enabled": "yes"}, "enabled"),
])
def test_loop_detector_bad_input_raises_invalid_argument_naming_the_field(args, kwargs, field):
    with pytest.raises(ArkError) as info:
        LoopDetector(*args, **kwargs)
    assert info.value.code == "invalid_argument" and field in info.value.message


def test_hooks_decorator_options_bad_input_raises_invalid_argument():
    hooks = AgentRuntime(model()).hooks
    assert isinstance(hooks, HookRegistry)
    for options, field in [({"name": 3}, "name"), ({"order": 1.5}, "order"), ({"fail_closed": "yes"}, "fail_closed"),
                           ({"timeout": 0}, "timeout")]:
        with pytest.raises(ArkError) as info:
            hooks.after_tool_call(**options)
        assert info.value.code == "invalid_argument" and field in info.value.message


def test_event_bus_subscribe_bad_input_raises_invalid_argument():
    with pytest.raises(ArkError, match="event_type"):
        EventBus().subscribe(None, print)
    with pytest.raises(ArkError, match="listener"):
        AgentRuntime(model()).bus.subscribe("llm.chunk", None)


async def test_controller_bad_input_raises_invalid_argument():
    controller = AgentRuntime(model()).controller
    with pytest.raises(ArkError) as info:
        await controller.deny("approval_1", reason=5)
    assert info.value.code == "invalid_argument" and "reason" in info.value.message
    for bad_id in (5, "", None):
        with pytest.raises(ArkError) as info:
            await controller.approve(bad_id)
        assert "approval_id" in info.value.message
    unknown = await controller.approve("approval_nope")
    assert (unknown.ok, unknown.error.code) == (False, "approval_not_found")


@pytest.mark.parametrize("turns", [5, None, "hello", ScriptedTurn(text="x"), [object()]])
def test_scripted_model_bad_turns_raise_invalid_argument(turns):
    with pytest.raises(ArkError) as info:
        ScriptedModel(turns)
    assert info.value.code == "invalid_argument" and "turn" in info.value.message


@pytest.mark.parametrize("kwargs, field", [
    ({"text": 5}, "text"), ({"chunk_delay": -1}, "chunk_delay"), ({"tool_calls": ["c1"]}, "tool_calls"),
    ({"finish_reason": "bored"}, "finish_reason"),
])
def test_scripted_turn_bad_values_raise_validation_error_naming_the_field(kwargs, field):
    with pytest.raises(ValidationError) as info:
        ScriptedTurn(**kwargs)
    assert field in str(info.value)


@pytest.mark.parametrize("build, field", [
    (lambda: AgentMessage.user(5), "content"),
    (lambda: AgentMessage.system(None), "content"),
    (lambda: AgentMessage.assistant(5), "text"),
    (lambda: ContentPart.from_text(5), "text"),
    (lambda: ToolResult.from_text(None), "text"),
    (lambda: ToolCall(id="c1", name="x").with_arguments("a=1"), "arguments"),
])
def test_domain_builders_bad_types_raise_invalid_argument_naming_the_field(build, field):
    with pytest.raises((ArkError, ValidationError)) as info:
        build()
    assert field in str(info.value)
