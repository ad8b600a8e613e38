"""Streaming through a real loopback server: event transcripts and assembled responses."""

from __future__ import annotations

import json

import pytest

from arknb.domain import (
    AgentMessage, ArkError, ContentPart, FinishReason, ModelConfig, ModelRequest, ToolCall, ToolDefinition,
)
from arknb.providers.openai_compat import deepseek, local, openai, zhipu
from openai_sse_server import Reply, chunk, sse

USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18,
         "completion_tokens_details": {"reasoning_tokens": 3}, "prompt_tokens_details": {"cached_tokens": 2}}


def req(text: str = "hi", **config) -> ModelRequest:
    return ModelRequest(messages=(AgentMessage.user(text),), config=ModelConfig(**config))


async def collect(client, request=None, **kw):
    return [e async for e in client.stream(request or req(), **kw)]


def types(events):
    return [e.type for e in events]


async def test_text_stream_transcript(server, make_client):
    server.script(Reply([sse(chunk("Hel"), chunk("lo"), chunk(finish="stop"),
                             chunk(usage=USAGE, choices=False))]))
    events = await collect(make_client())
    assert types(events) == ["model_start", "text_delta", "text_delta", "usage", "model_complete"]
    assert events[0].model == "test-model"
    response = events[-1].response
    assert response.message.text == "Hello"
    assert response.finish_reason == FinishReason.STOP
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.reasoning_tokens,
            response.usage.cached_tokens) == (11, 7, 3, 2)
    assert response.model == "test-model"
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.body["stream"] is True and sent.body["stream_options"] == {"include_usage": True}
    assert sent.headers["authorization"] == "Bearer sk-test-key"
    assert sent.headers["accept"] == "text/event-stream"


async def test_generate_returns_the_complete_response(server, make_client):
    server.script(Reply([sse(chunk("a"), chunk("b", finish="stop"))]))
    response = await make_client().generate(req())
    assert response.message.text == "ab"


async def test_deepseek_reasoning_content(server, make_client):
    server.script(Reply([sse(chunk(reasoning="Think"), chunk(reasoning="ing."), chunk("Answer", finish="stop"),
                             chunk(usage={"prompt_tokens": 1, "completion_tokens": 2,
                                          "prompt_cache_hit_tokens": 1}, choices=False))]))
    client = make_client(deepseek().replace(base_url=server.base_url))
    events = await collect(client)
    assert types(events) == ["model_start", "reasoning_delta", "reasoning_delta", "text_delta", "usage",
                             "model_complete"]
    message = events[-1].response.message
    assert message.reasoning_text == "Thinking." and message.text == "Answer"
    assert events[-1].response.usage.cached_tokens == 1


async def test_reasoning_field_of_ollama_and_vllm(server, make_client):
    server.script(Reply([sse(chunk(reasoning="hmm", reasoning_field="reasoning"), chunk("ok", finish="stop"))]))
    message = (await make_client().generate(req())).message
    assert (message.reasoning_text, message.text) == ("hmm", "ok")


async def test_think_tags_split_across_chunks(server, make_client):
    pieces = ["<th", "ink>\nlet me ", "see</thi", "nk>\n\n", "The answer", " is 4."]
    server.script(Reply([sse(*[chunk(p) for p in pieces], chunk(finish="stop"))]))
    events = await collect(make_client(local(server.base_url)))
    message = events[-1].response.message
    assert message.reasoning_text == "\nlet me see"
    assert message.text == "The answer is 4."
    assert "".join(e.text for e in events if e.type == "reasoning_delta") == message.reasoning_text
    assert "".join(e.text for e in events if e.type == "text_delta") == message.text


async def test_tool_calls_assembled_by_index(server, make_client):
    deltas = [
        chunk(tool_calls=[{"index": 0, "id": "call_a", "type": "function",
                           "function": {"name": "add", "arguments": ""}}]),
        chunk(tool_calls=[{"index": 0, "function": {"arguments": '{"a": '}}]),
        chunk(tool_calls=[{"index": 1, "id": "call_b", "type": "function",
                           "function": {"name": "mul", "arguments": '{"x"'}}]),
        chunk(tool_calls=[{"index": 0, "function": {"arguments": '1, "b": 2}'}}]),
        chunk(tool_calls=[{"index": 1, "function": {"arguments": ': 3}'}}]),
        chunk(finish="tool_calls"),
    ]
    server.script(Reply([sse(*deltas)]))
    tool = ToolDefinition(name="add", parameters={"type": "object", "properties": {}})
    events = await collect(make_client(), ModelRequest(messages=(AgentMessage.user("go"),), tools=(tool,)))
    assert types(events).count("tool_call_delta") == 5
    first = events[1]
    assert (first.index, first.id, first.name) == (0, "call_a", "add")
    response = events[-1].response
    assert response.finish_reason == FinishReason.TOOL_CALLS
    assert response.message.tool_calls == (
        ToolCall(id="call_a", name="add", arguments_json='{"a": 1, "b": 2}', index=0),
        ToolCall(id="call_b", name="mul", arguments_json='{"x": 3}', index=1))
    assert response.message.tool_calls[0].arguments == {"a": 1, "b": 2}


async def test_zhipu_whole_tool_call_in_one_delta_and_stop_reason(server, make_client):
    server.script(Reply([sse(chunk(tool_calls=[{"id": "call_z", "index": 0, "type": "function",
                                                "function": {"name": "weather", "arguments": {"city": "北京"}}}],
                                   finish="stop"))]))
    client = make_client(zhipu().replace(base_url=server.base_url))
    response = await client.generate(req())
    (call,) = response.message.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_z", "weather", {"city": "北京"})
    assert response.finish_reason == FinishReason.TOOL_CALLS


@pytest.mark.parametrize("raw, mapped", [("stop", FinishReason.STOP), ("length", FinishReason.LENGTH),
                                         ("content_filter", FinishReason.CONTENT_FILTER),
                                         ("sensitive", FinishReason.CONTENT_FILTER),
                                         ("something_new", FinishReason.UNKNOWN)])
async def test_finish_reasons(server, make_client, raw, mapped):
    server.script(Reply([sse(chunk("x", finish=raw))]))
    assert (await make_client().generate(req())).finish_reason == mapped


@pytest.mark.parametrize("raw", ["network_error", "insufficient_system_resource"])
async def test_interrupted_finish_reasons_fail_without_partial_text(server, make_client, raw):
    server.script(Reply([sse(chunk("partial "), chunk(finish=raw))]))
    events = []
    with pytest.raises(ArkError) as info:
        async for event in make_client().stream(req()):
            events.append(event)
    assert (info.value.layer, info.value.code, info.value.provider_code) == ("provider", "provider_interrupted", raw)
    assert "model_complete" not in types(events)
    assert len(server.requests) == 1   # output had started: never retried


async def test_stream_without_done_is_a_provider_error(server, make_client):
    server.script(Reply([sse(chunk("half a sentence"), done=False)]))
    events = []
    with pytest.raises(ArkError) as info:
        async for event in make_client().stream(req()):
            events.append(event)
    assert (info.value.layer, info.value.code) == ("provider", "provider_stream_incomplete")
    assert "half a sentence" not in str(info.value)
    assert types(events) == ["model_start", "text_delta"]
    assert len(server.requests) == 1


async def test_stream_without_done_before_output_is_retried(server, make_client, sleeps):
    server.script(Reply([b": keep-alive\n\n"]), Reply([sse(chunk("ok", finish="stop"))]))
    events = await collect(make_client())
    assert types(events) == ["model_start", "retry", "text_delta", "model_complete"]
    assert events[1].error.code == "provider_stream_incomplete"


async def test_error_object_mid_stream(server, make_client):
    error = {"error": {"message": "model overloaded", "type": "invalid_request_error", "code": "bad_thing"}}
    server.script(Reply([sse(chunk("Hi"), error, done=False)]))
    with pytest.raises(ArkError) as info:
        await collect(make_client())
    assert (info.value.layer, info.value.code, info.value.provider_code) == ("provider", "provider_stream_error",
                                                                            "bad_thing")
    assert "model overloaded" in info.value.message


async def test_event_error_field(server, make_client):
    server.script(Reply([b'event: error\ndata: {"message": "boom", "code": "E1"}\n\n']))
    with pytest.raises(ArkError) as info:
        await collect(make_client())
    assert (info.value.code, info.value.provider_code) == ("provider_stream_error", "E1")


async def test_non_sse_json_error_body(server, make_client):
    server.script(Reply.json(400, {"error": {"message": "bad model name", "type": "invalid_request_error",
                                             "code": "model_not_found"}}))
    with pytest.raises(ArkError) as info:
        await collect(make_client())
    err = info.value
    assert (err.layer, err.code, err.status_code, err.provider_code) == (
        "provider", "provider_bad_request", 400, "model_not_found")
    assert "bad model name" in err.message and err.retryability == "never"


async def test_json_completion_when_server_ignores_stream(server, make_client):
    body = {"id": "x", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls",
                         "message": {"role": "assistant", "content": "Calling.",
                                     "tool_calls": [{"id": "c1", "type": "function",
                                                     "function": {"name": "f", "arguments": "{}"}},
                                                    {"id": "c2", "type": "function",
                                                     "function": {"name": "g", "arguments": '{"k": 1}'}}]}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4}}
    server.script(Reply.json(200, body))
    response = await make_client().generate(req())
    assert response.message.text == "Calling."
    assert [(c.id, c.name, c.index) for c in response.message.tool_calls] == [("c1", "f", 0), ("c2", "g", 1)]
    assert response.usage.output_tokens == 4


async def test_unexpected_content_type(server, make_client):
    server.script(Reply([b"<html>proxy login</html>"], headers={"content-type": "text/html"}))
    with pytest.raises(ArkError) as info:
        await collect(make_client())
    assert info.value.code == "provider_bad_response"


async def test_request_mapping(server, make_client):
    server.script(Reply([sse(chunk("ok", finish="stop"))]))
    call = ToolCall(id="c1", name="add", arguments_json='{"a": 1}')
    messages = (
        AgentMessage.system("Be brief."),
        AgentMessage.user(["Look: ", ContentPart.image_url("https://example.org/cat.png"),
                           ContentPart.image_base64("AAAA", "image/jpeg")]),
        AgentMessage.assistant("Adding.", tool_calls=[call], reasoning="secret thoughts"),
        AgentMessage.tool("c1", "2"),
        AgentMessage.assistant(tool_calls=[call]),
    )
    tools = (ToolDefinition(name="add", description="Add.", parameters={"type": "object",
                                                                        "properties": {"a": {"type": "integer"}}}),)
    config = ModelConfig(model="gpt-x", temperature=0.2, max_tokens=50, tool_choice="add",
                         extensions={"reasoning_effort": "low", "seed": 7})
    await make_client(openai(server.base_url)).generate(ModelRequest(messages=messages, tools=tools, config=config))
    body = server.requests[0].body
    assert body["model"] == "gpt-x" and body["temperature"] == 0.2 and body["max_completion_tokens"] == 50
    assert body["reasoning_effort"] == "low" and body["seed"] == 7
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "Look: "},
        {"type": "image_url", "image_url": {"url": "https://example.org/cat.png"}},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAAA"}}]
    assert body["messages"][2] == {"role": "assistant", "content": "Adding.", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}]}
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "c1", "content": "2"}
    assert body["messages"][4]["content"] is None
    assert body["tools"] == [{"type": "function", "function": {
        "name": "add", "description": "Add.", "parameters": {"type": "object",
                                                             "properties": {"a": {"type": "integer"}}}}}]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "add"}}


async def test_zhipu_extensions_go_into_the_body(server, make_client):
    server.script(Reply([sse(chunk("ok", finish="stop"))]))
    client = make_client(zhipu().replace(base_url=server.base_url), model="glm-4.6")
    await client.generate(req(extensions={"thinking": True, "tool_stream": True}))
    body = server.requests[0].body
    assert body["thinking"] == {"type": "enabled"} and body["tool_stream"] is True


async def test_images_refused_by_a_profile_without_them(server, make_client):
    client = make_client(deepseek().replace(base_url=server.base_url))
    request = ModelRequest(messages=(AgentMessage.user(["see", ContentPart.image_url("https://x.org/a.png")]),))
    with pytest.raises(ArkError) as info:
        await collect(client, request)
    assert (info.value.layer, info.value.code) == ("config", "unsupported_content")
    assert server.requests == []


async def test_connection_reused_across_calls(server, make_client):
    server.script(Reply([sse(chunk("a", finish="stop"))]), Reply([sse(chunk("b", finish="stop"))]))
    client = make_client()
    assert (await client.generate(req())).message.text == "a"
    assert (await client.generate(req())).message.text == "b"
    assert not server.requests[0].disconnected.is_set()


def test_events_serialise(server):
    from arknb.domain import StreamingEventAdapter, TextDelta
    event = TextDelta.model_construct(text="x")
    assert json.loads(StreamingEventAdapter.dump_json(event)) == {"type": "text_delta", "text": "x"}
