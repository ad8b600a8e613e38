"""Deeply nested JSON from a server is the provider's decode error, never a RecursionError
(issue 10 item 10)."""

from __future__ import annotations

import httpx
import pytest

import arknb as ark
from arknb.domain import AgentMessage, ArkError, ModelRequest
from arknb.providers.openai_compat.errors import error_from_status
from arknb.providers.openai_compat.sse import iter_chunks
from openai_sse_server import Reply, chunk, sse

# Deep enough for Python's json module to run out of stack, and just past arknb's limit.
DEPTHS = [100_000, 201 + 5]


def nested_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def req() -> ModelRequest:
    return ModelRequest(messages=(AgentMessage.user("hi"),))


async def failure(client) -> ArkError:
    with pytest.raises(ArkError) as info:
        async for _ in client.stream(req()):
            pass
    return info.value


@pytest.mark.parametrize("depth", DEPTHS)
async def test_deep_sse_data_is_a_decode_error(server, make_client, depth):
    deep = '{"choices": [{"index": 0, "delta": {"content": "x", "extra": ' + nested_json(depth) + "}}]}"
    server.script(Reply([sse(chunk("ok "), deep)]))
    error = await failure(make_client())
    assert (error.layer, error.code) == ("decode", "provider_decode_error")
    assert "nested more than 200 levels deep" in error.message


async def test_deep_tool_call_arguments_object_in_sse_is_a_decode_error(server, make_client):
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "t", "arguments": {"x": "__DEEP__"}}}
    body = sse(chunk(tool_calls=[call])).replace(b'"__DEEP__"', nested_json(50_000).encode())
    server.script(Reply([body]))
    error = await failure(make_client())
    assert (error.layer, error.code) == ("decode", "provider_decode_error")


async def test_a_deep_json_body_that_is_not_streamed_is_a_decode_error(server, make_client):
    server.script(Reply([b'{"choices": ' + nested_json(100_000).encode() + b"}"],
                        headers={"content-type": "application/json"}))
    error = await failure(make_client())
    assert (error.layer, error.code) == ("decode", "provider_decode_error")
    assert "nested more than 200 levels deep" in error.message


def test_a_deep_error_body_is_shown_as_text_with_the_status_code():
    error = error_from_status(500, ('{"error": ' + nested_json(100_000) + "}").encode(), provider="p")
    assert (error.layer, error.code, error.status_code) == ("provider", "provider_unavailable", 500)


async def test_iter_chunks_reads_ordinary_nesting_unchanged():
    value = {"a": [[[[{"b": 1}]]]]}
    import json

    body = f"data: {json.dumps(value)}\n\ndata: [DONE]\n\n".encode()
    response = httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})
    got = [c async for c in iter_chunks(response)]
    assert got[0] == value


async def test_a_run_on_a_server_sending_deep_json_fails_with_the_decode_error(server, make_client):
    deep = '{"choices": [{"index": 0, "delta": {"content": ' + nested_json(100_000) + "}}]}"
    server.script(Reply([sse(deep)]))
    runtime = ark.AgentRuntime(make_client(), session_id="deep")
    result = await runtime.run("hi")
    assert result.stop_reason == "failed"
    assert (result.error.layer, result.error.code) == ("decode", "provider_decode_error")
    assert runtime.state.last_error.code == "provider_decode_error"
