"""Honest edges (DESIGN §17, issue 24 item 2), against the loopback SSE server: a cut answer
is marked truncated, missing usage is unknown, a long Retry-After is named, a stream cut
before anything was shown is retried, OPENAI_BASE_URL is honoured, and typed answers go
out as response_format json_schema."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

import arknb as ark
from arknb import ArkError, EventTypes, ModelConfig, ModelRequest, AgentMessage
from arknb.providers.openai_compat import OpenAICompatibleClient, RetryPolicy, deepseek, local, openai
from openai_sse_server import Reply, chunk, sse


def req(text: str = "hi") -> ModelRequest:
    return ModelRequest(messages=(AgentMessage.user(text),))


async def collect(client, request=None):
    events = []
    async for event in client.stream(request or req()):
        events.append(event)
    return events


def record(runtime):
    events = []
    runtime.bus.subscribe("*", events.append)
    return events


# -- finish_reason "length" -> truncated -----------------------------------------------------

async def test_an_answer_cut_at_max_tokens_completes_marked_truncated(server, make_client):
    server.script(Reply([sse(chunk("The capital of France is the city of"), chunk(finish="length"),
                             chunk(usage={"prompt_tokens": 9, "completion_tokens": 8}, choices=False))]))
    runtime = ark.AgentRuntime(make_client(), config=ModelConfig(max_tokens=8))
    events = record(runtime)
    result = await runtime.run("Capital of France?")
    assert result.stop_reason == "completed" and result.truncated is True
    assert result.text == "The capital of France is the city of"
    truncated = [e for e in events if e.type == EventTypes.LLM_TRUNCATED]
    assert len(truncated) == 1
    assert dict(truncated[0].payload) == {"turn": 1, "finish_reason": "length", "max_tokens": 8, "output_tokens": 8}
    success = next(e for e in events if e.type == EventTypes.AGENT_SUCCESS)
    assert success.payload["truncated"] is True
    assert server.requests[0].body["max_tokens"] == 8


async def test_a_whole_answer_is_not_truncated(server, make_client):
    server.script(Reply([sse(chunk("Paris."), chunk(finish="stop"))]))
    runtime = ark.AgentRuntime(make_client())
    events = record(runtime)
    result = await runtime.run("Capital of France?")
    assert result.truncated is False and "truncated" not in result.to_dict()
    assert not [e for e in events if e.type == EventTypes.LLM_TRUNCATED]


async def test_a_truncated_tool_turn_then_a_whole_answer_is_not_marked(server, make_client):
    @ark.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    server.script(
        Reply([sse(chunk(tool_calls=[{"index": 0, "id": "c1", "type": "function",
                                      "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]),
                   chunk(finish="length"))]),
        Reply([sse(chunk("3"), chunk(finish="stop"))]))
    runtime = ark.AgentRuntime(make_client(), tools=[add])
    events = record(runtime)
    result = await runtime.run("1+2?")
    assert result.text == "3" and result.truncated is False
    assert len([e for e in events if e.type == EventTypes.LLM_TRUNCATED]) == 1  # the cut turn was still said


async def test_a_reply_cut_inside_a_tool_call_runs_nothing_and_ends_truncated_saying_so(server, make_client):
    ran: list[dict] = []

    @ark.tool
    def add(a: int, b: int) -> int:
        """Add."""
        ran.append({"a": a, "b": b})
        return a + b

    @ark.tool(risk="dangerous")
    def wipe(path: str) -> str:
        """Wipe a folder."""
        ran.append({"path": path})
        return "wiped"

    # The first call is whole, the second is cut at max_tokens (what llama-server sends).
    server.script(Reply([sse(
        chunk(tool_calls=[{"index": 0, "id": "c1", "type": "function",
                           "function": {"name": "add", "arguments": '{"a": 17, "b": 25}'}}]),
        chunk(tool_calls=[{"index": 1, "id": "c2", "type": "function",
                           "function": {"name": "wipe", "arguments": '{\n "path": "/ho'}}]),
        chunk(finish="length"), chunk(usage={"prompt_tokens": 9, "completion_tokens": 16}, choices=False))]))
    runtime = ark.AgentRuntime(make_client(), tools=[add, wipe], config=ModelConfig(max_tokens=16))
    events = record(runtime)
    result = await runtime.run("Add, then wipe.")
    assert ran == [] and len(server.requests) == 1  # nothing ran, nothing was sent back to the model
    assert result.stop_reason == "completed" and result.truncated is True
    assert result.error.code == "tool_call_truncated"
    assert "'wipe' (c2)" in result.error.message and "max_tokens=16" in result.error.message
    assert "Raise ModelConfig.max_tokens" in result.error.message
    assert runtime.state.pending_approval is None  # a cut call is never put before a person
    answers = {m.tool_call_id: m for m in runtime.state.history if m.role == "tool"}
    assert answers["c2"].is_error and "incomplete JSON" in answers["c2"].text
    assert answers["c1"].is_error and answers["c1"].text == "not executed: the reply was cut at max_tokens"
    cut = [m for m in runtime.state.history if m.role == "assistant"][-1]
    assert cut.truncated is True  # saved marked, as a cut text answer is
    kinds = [e.type for e in events]
    assert EventTypes.LLM_TRUNCATED in kinds and EventTypes.TOOL_BEFORE not in kinds
    assert EventTypes.APPROVAL_REQUIRED not in kinds
    refused = {e.payload["call"]["id"]: e.payload["reason"] for e in events if e.type == EventTypes.TOOL_DENIED}
    assert refused["c1"] == "not executed: the reply was cut at max_tokens" and "incomplete JSON" in refused["c2"]
    success = next(e for e in events if e.type == EventTypes.AGENT_SUCCESS)
    assert success.payload["truncated"] is True and success.payload["error"]["code"] == "tool_call_truncated"
    server.script(Reply([sse(chunk("ok"), chunk(finish="stop"))]))
    assert (await runtime.run("Just add.")).text == "ok"  # the session goes on: every call has its answer


# -- usage the server did not send --------------------------------------------------------------

async def test_no_usage_from_the_server_is_unknown_not_zero(server, make_client):
    server.script(Reply([sse(chunk("Hi"), chunk(finish="stop"))]))
    runtime = ark.AgentRuntime(make_client())
    result = await runtime.run("hi")
    assert result.usage.reported is False
    assert runtime.state.usages[-1].reported is False and runtime.state.total_usage.reported is False


async def test_usage_the_server_sent_is_reported(server, make_client):
    server.script(Reply([sse(chunk("Hi"), chunk(finish="stop"),
                             chunk(usage={"prompt_tokens": 3, "completion_tokens": 1}, choices=False))]))
    result = await ark.AgentRuntime(make_client()).run("hi")
    assert result.usage.reported is True and (result.usage.input_tokens, result.usage.output_tokens) == (3, 1)


def test_a_sum_is_reported_only_if_every_part_was():
    assert (ark.Usage(input_tokens=1) + ark.Usage(reported=False)).reported is False
    assert (ark.Usage(input_tokens=1) + ark.Usage(output_tokens=2)).reported is True


# -- a Retry-After longer than the policy allows ------------------------------------------------

async def test_a_429_asking_for_a_long_wait_fails_naming_the_wait(server, make_client, sleeps):
    server.script(Reply.json(429, {"error": {"message": "slow down"}}, headers={"retry-after": "120"}))
    with pytest.raises(ArkError) as caught:
        await collect(make_client(retry=RetryPolicy(max_retry_after=60, sleep=sleeps)))
    error = caught.value
    assert error.code == "provider_rate_limited" and error.status_code == 429
    assert "asked to wait 120s" in error.message and "max_retry_after=60s" in error.message
    assert sleeps.delays == [] and len(server.requests) == 1


async def test_a_wait_longer_than_the_time_left_fails_naming_the_wait(server, make_client, sleeps):
    from arknb.providers.openai_compat import Timeouts

    server.script(Reply.json(429, {"error": {"message": "slow down"}}, headers={"retry-after": "45"}))
    with pytest.raises(ArkError) as caught:
        await collect(make_client(timeout=Timeouts(total=30.0)))
    assert "asked to wait 45s" in caught.value.message and "Timeouts.total" in caught.value.message
    assert sleeps.delays == []


# -- a stream cut before anything was shown ---------------------------------------------------

async def test_a_stream_cut_mid_tool_call_before_any_text_is_retried_saying_why(server, make_client, sleeps):
    partial = sse(chunk(tool_calls=[{"index": 0, "id": "c1", "type": "function",
                                     "function": {"name": "add", "arguments": '{"a": 1, '}}]), done=False)
    whole = sse(chunk(tool_calls=[{"index": 0, "id": "c2", "type": "function",
                                   "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]),
                chunk(finish="tool_calls"))
    server.script(Reply([partial]), Reply([whole]))
    events = await collect(make_client())
    kinds = [e.type for e in events]
    assert kinds == ["model_start", "tool_call_delta", "retry", "tool_call_delta", "model_complete"]
    retry = events[2]
    assert retry.error.code == "provider_stream_incomplete"
    assert retry.reason == "the stream was cut before any text was shown and before a tool call completed"
    calls = events[-1].response.message.tool_calls
    assert [(c.id, c.arguments) for c in calls] == [("c2", {"a": 1, "b": 2})]  # only the whole call counts


async def test_the_runtime_retry_event_carries_the_reason(server, make_client, sleeps):
    partial = sse(chunk(tool_calls=[{"index": 0, "id": "c1", "type": "function",
                                     "function": {"name": "add", "arguments": "{"}}]), done=False)
    server.script(Reply([partial]), Reply([sse(chunk("done"), chunk(finish="stop"))]))
    runtime = ark.AgentRuntime(make_client())
    events = record(runtime)
    result = await runtime.run("go")
    assert result.text == "done"
    retry = next(e for e in events if e.type == EventTypes.LLM_RETRY)
    assert "before any text was shown" in retry.payload["reason"]


async def test_a_stream_cut_after_text_was_shown_is_never_retried(server, make_client, sleeps):
    server.script(Reply([sse(chunk("Half an ans"), done=False)]), Reply([sse(chunk("x"), chunk(finish="stop"))]))
    with pytest.raises(ArkError) as caught:
        await collect(make_client())
    assert caught.value.code == "provider_stream_incomplete" and len(server.requests) == 1


# -- OPENAI_BASE_URL and the provider's name in errors ----------------------------------------

def test_openai_profile_honours_openai_base_url(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "https://gateway.example.com/openai/v1/")
    profile = openai()
    assert profile.chat_url == "https://gateway.example.com/openai/v1/chat/completions"
    assert profile.provider_id == "openai@gateway.example.com"
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert openai().chat_url == "https://api.openai.com/v1/chat/completions" and openai().provider_id == "openai"
    assert openai("https://other.example.org/v1").provider_id == "openai@other.example.org"  # an explicit URL wins


async def test_an_error_through_openai_base_url_names_the_openai_profile(server, monkeypatch, sleeps):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.script(Reply.json(429, {"error": {"message": "slow down"}}, headers={"retry-after": "3600"}))
    async with OpenAICompatibleClient(openai(), api_key="sk-proxy-test", model="gpt-4o-mini",
                                      retry=RetryPolicy(sleep=sleeps)) as client:
        with pytest.raises(ArkError) as caught:
            await collect(client)
    assert caught.value.message.startswith("openai@127.0.0.1 returned HTTP 429")
    assert "local" not in caught.value.message
    assert server.requests[0].headers["authorization"] == "Bearer sk-proxy-test"


# -- typed answers on the wire ------------------------------------------------------------------

class Capital(BaseModel):
    country: str
    city: str


async def test_a_typed_answer_goes_out_as_response_format_json_schema(server, make_client):
    answer = '{"country": "France", "city": "Paris"}'
    server.script(Reply([sse(chunk(answer[:10]), chunk(answer[10:]), chunk(finish="stop"))]))
    runtime = ark.AgentRuntime(make_client(), output_type=Capital)
    result = await runtime.run("Capital of France?")
    assert result.output == Capital(country="France", city="Paris") and result.text == answer
    body = server.requests[0].body
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "Capital", "schema": Capital.model_json_schema(), "strict": False}}
    assert "tools" not in body


async def test_a_profile_without_json_schema_output_gets_the_final_result_tool(server):
    server.script(Reply([sse(chunk(tool_calls=[{"index": 0, "id": "f1", "type": "function", "function": {
        "name": "final_result", "arguments": '{"country": "France", "city": "Paris"}'}}]), chunk(finish="tool_calls"))]))
    profile = deepseek().replace(base_url=server.base_url)
    assert profile.capabilities.json_schema_output is False
    async with OpenAICompatibleClient(profile, api_key="sk-x", model="deepseek-chat") as client:
        result = await ark.AgentRuntime(client, output_type=Capital).run("Capital of France?")
    assert result.output == Capital(country="France", city="Paris")
    body = server.requests[0].body
    assert "response_format" not in body and body["tools"][0]["function"]["name"] == "final_result"


def test_native_output_to_a_profile_without_it_is_refused_before_any_request():
    from arknb.providers.openai_compat.wire import build_body

    request = ModelRequest(messages=(AgentMessage.user("x"),),
                           output=ark.OutputSchema(name="Capital", json_schema=Capital.model_json_schema()))
    with pytest.raises(ArkError) as caught:
        build_body(request, deepseek(), "deepseek-chat")
    assert caught.value.code == "output_schema_unsupported" and "deepseek" in caught.value.message
    with pytest.raises(ArkError, match="response_format"):
        build_body(request.model_copy(update={"config": ModelConfig(extensions={"response_format": {}})}),
                   local(), "m")


def test_profiles_declare_json_schema_output():
    assert openai().capabilities.json_schema_output and local().capabilities.json_schema_output
    assert not deepseek().capabilities.json_schema_output
