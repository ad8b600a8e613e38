"""ScriptedModel (DESIGN §0, §9): the deterministic offline model."""

from __future__ import annotations

import asyncio

import pytest

from arknb import (
    AgentMessage, ArkError, CancellationToken, LLMClient, ModelRequest, ScriptedModel, ScriptedTurn, ToolCall, Usage,
)

REQUEST = ModelRequest(messages=(AgentMessage.user("hi"),))


async def events_of(model: ScriptedModel, request: ModelRequest = REQUEST, cancel=None) -> list:
    return [e async for e in model.stream(request, cancel=cancel)]


async def test_scripted_turn_streams_reasoning_then_text_then_tool_calls_usage_and_complete():
    call = ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')
    model = ScriptedModel([ScriptedTurn(text=["Let me ", "add."], reasoning=["think"], tool_calls=[call],
                                        usage=Usage(input_tokens=5, output_tokens=3))])
    assert isinstance(model, LLMClient)
    events = await events_of(model)
    assert [e.type for e in events] == ["model_start", "reasoning_delta", "text_delta", "text_delta",
                                        "tool_call_delta", "usage", "model_complete"]
    assert [e.text for e in events if e.type == "text_delta"] == ["Let me ", "add."]
    delta = events[4]
    assert (delta.id, delta.name, delta.arguments_delta) == ("c1", "add", '{"a": 1, "b": 2}')
    response = events[-1].response
    assert (response.message.text, response.message.reasoning_text) == ("Let me add.", "think")
    assert response.message.tool_calls == (call,)
    assert (response.finish_reason, response.usage.output_tokens) == ("tool_calls", 3)


async def test_plain_strings_are_text_only_turns_and_requests_are_recorded():
    model = ScriptedModel(["one", ScriptedTurn(text="two")])
    first = await events_of(model, REQUEST)
    second_request = ModelRequest(messages=(AgentMessage.user("again"),))
    second = await events_of(model, second_request)
    assert first[-1].response.message.text == "one" and first[-1].response.finish_reason == "stop"
    assert second[-1].response.message.text == "two"
    assert model.requests == [REQUEST, second_request]
    assert model.remaining == 0


async def test_same_script_gives_the_same_events_every_time():
    def script():
        return ScriptedModel([ScriptedTurn(text=["a", "b"], reasoning="r", usage=Usage(output_tokens=2)), "c"])

    a, b = script(), script()
    assert [await events_of(a), await events_of(a)] == [await events_of(b), await events_of(b)]


async def test_exhausted_script_raises_a_clear_error():
    model = ScriptedModel(["only one"])
    await events_of(model)
    with pytest.raises(ArkError) as info:
        await events_of(model)
    assert (info.value.code, info.value.layer) == ("script_exhausted", "config")
    assert "1 turn(s)" in info.value.message and "model call 2" in info.value.message
    with pytest.raises(ArkError, match="no turn left"):
        await model.generate(REQUEST)


async def test_generate_returns_the_complete_response():
    model = ScriptedModel([ScriptedTurn(text=["x", "y"])])
    response = await model.generate(REQUEST)
    assert response.message.text == "xy"
    assert model.requests == [REQUEST]


async def test_error_turn_raises_after_its_chunks():
    boom = ArkError("provider", "provider_server_error", "500 from upstream")
    model = ScriptedModel([ScriptedTurn(text=["partial"], error=boom)])
    seen = []
    with pytest.raises(ArkError) as info:
        async for event in model.stream(REQUEST):
            seen.append(event.type)
    assert info.value is boom
    assert seen == ["model_start", "text_delta"]


async def test_closing_a_stream_early_is_counted():
    model = ScriptedModel([ScriptedTurn(text=["a", "b", "c"]), "d"])
    stream = model.stream(REQUEST)
    async for event in stream:
        if event.type == "text_delta":
            break
    await stream.aclose()
    assert model.closed_streams == 1
    await events_of(model)
    assert model.closed_streams == 1  # a finished stream is not counted


async def test_cancel_token_stops_the_stream_with_cancelled():
    token = CancellationToken()
    model = ScriptedModel([ScriptedTurn(text=["a", "b", "c"], chunk_delay=0.01)])
    seen = []
    with pytest.raises(ArkError) as info:
        async for event in model.stream(REQUEST, cancel=token):
            seen.append(event.type)
            if event.type == "text_delta":
                token.cancel("stop")
    assert info.value.code == "cancelled"
    assert seen == ["model_start", "text_delta"]
    assert model.closed_streams == 1


async def test_chunk_delay_is_applied_between_chunks():
    model = ScriptedModel([ScriptedTurn(text=["a", "b"], chunk_delay=0.05)])
    loop = asyncio.get_running_loop()
    stamps = []
    async for event in model.stream(REQUEST):
        stamps.append((event.type, loop.time()))
    text_stamps = [t for kind, t in stamps if kind == "text_delta"]
    assert text_stamps[1] - stamps[0][1] >= 0.09  # two delays before the second chunk
