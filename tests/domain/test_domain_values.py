"""Domain values (DESIGN §3): frozen, JSON round-trip, invariants, error codes and layers, cancellation."""

from __future__ import annotations

import asyncio
import pickle

import pytest
from pydantic import ValidationError

from arknb import (
    AgentMessage, ArkError, CancellationToken, ContentPart, ErrorLayer, FinishReason, ModelComplete, ModelConfig,
    ModelRequest, ModelResponse, Retryability, Role, StopReason, ToolCall, ToolDefinition, ToolResult, ToolRisk, Usage,
)
from arknb.domain import ErrorCode, ErrorInfo, StreamingEventAdapter

CALL = ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}', index=0)

VALUES = [
    AgentMessage.system("Be brief."),
    AgentMessage.user(["look at ", ContentPart.image_url("https://example.org/cat.png")]),
    AgentMessage.user(ContentPart.image_base64("aGk=", "image/png")),
    AgentMessage.user(ContentPart.document(url="https://example.org/a.pdf", name="a.pdf")),
    AgentMessage.assistant("Let me add.", tool_calls=[CALL], reasoning="need a tool"),
    AgentMessage.tool("c1", "3"),
    AgentMessage.tool("c1", "boom", is_error=True),
    CALL,
    ToolResult.from_text("done", stop=True),
    ToolResult.from_parts([ContentPart.from_text("a"), ContentPart.image_url("https://example.org/x.png")]),
    ToolDefinition(name="add", description="Add.", parameters={"type": "object", "properties": {"a": {"type": "integer"}}},
                   risk="dangerous"),
    ModelConfig(model="m", temperature=0.2, max_tokens=10, extensions={"thinking": {"type": "enabled"}}),
    ModelRequest(messages=(AgentMessage.user("hi"),), tools=(ToolDefinition(name="add"),)),
    ModelResponse(message=AgentMessage.assistant("hi"), finish_reason="length",
                  usage=Usage(input_tokens=3, output_tokens=4)),
    ErrorInfo(layer="provider", code="provider_rate_limited", message="slow down", retryability="safe",
              status_code=429),
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_domain_values_round_trip_through_json(value):
    again = type(value).model_validate_json(value.model_dump_json())
    assert again == value


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_domain_values_are_frozen(value):
    field = next(iter(type(value).model_fields))
    with pytest.raises(ValidationError):
        setattr(value, field, getattr(value, field))


@pytest.mark.parametrize("event", [
    {"type": "model_start", "model": "m"},
    {"type": "reasoning_delta", "text": "hmm"},
    {"type": "text_delta", "text": "Hi"},
    {"type": "tool_call_delta", "index": 1, "id": "c1", "name": "add", "arguments_delta": '{"a":'},
    {"type": "usage", "usage": {"input_tokens": 1, "output_tokens": 2}},
    {"type": "retry", "attempt": 1, "delay": 0.5, "error": {"layer": "transport", "code": "timeout", "message": "t"}},
    {"type": "model_complete", "response": {"message": {"role": "assistant", "contents": [{"text": "Hi"}]}}},
    {"type": "error", "error": {"layer": "provider", "code": "provider_server_error", "message": "500"}},
], ids=lambda e: e["type"])
def test_streaming_event_union_round_trips_on_its_type_discriminator(event):
    parsed = StreamingEventAdapter.validate_python(event)
    assert parsed.type == event["type"]
    assert StreamingEventAdapter.validate_json(StreamingEventAdapter.dump_json(parsed)) == parsed


def test_unknown_streaming_event_type_is_refused():
    with pytest.raises(ValidationError, match="type"):
        StreamingEventAdapter.validate_python({"type": "telepathy"})


def test_model_complete_carries_the_whole_response():
    response = ModelResponse(message=AgentMessage.assistant("all of it", tool_calls=[CALL]),
                             finish_reason=FinishReason.TOOL_CALLS)
    assert ModelComplete(response=response).response.message.tool_calls[0].id == "c1"


# --- invariants (seed 003 §5.2) -------------------------------------------------------

def test_system_message_is_text_only():
    with pytest.raises(ValidationError, match="system message may hold text parts only"):
        AgentMessage(role="system", contents=(ContentPart.image_url("https://example.org/x.png"),))


def test_tool_message_needs_tool_call_id():
    with pytest.raises(ValidationError, match="tool_call_id"):
        AgentMessage(role="tool", contents=(ContentPart.from_text("3"),))
    with pytest.raises(ValidationError, match="tool_call_id"):
        AgentMessage(role="user", contents=(ContentPart.from_text("x"),), tool_call_id="c1")


@pytest.mark.parametrize("role", ["system", "user", "tool"])
def test_no_empty_text_arrays(role):
    with pytest.raises(ValidationError, match="at least one content part"):
        AgentMessage(role=role, contents=(), tool_call_id="c1" if role == "tool" else None)


def test_only_assistant_messages_carry_tool_calls_and_assistant_may_be_empty_with_calls():
    with pytest.raises(ValidationError, match="tool_calls"):
        AgentMessage(role="user", contents=(ContentPart.from_text("x"),), tool_calls=(CALL,))
    assert AgentMessage.assistant("", tool_calls=[CALL]).contents == ()


@pytest.mark.parametrize("part", [
    {"kind": "text"}, {"kind": "text", "text": "x", "url": "https://e.org"}, {"kind": "image"},
    {"kind": "image", "url": "https://e.org/x.png", "data": "aGk="}, {"kind": "image", "data": "aGk="},
])
def test_content_part_payload_invariants(part):
    with pytest.raises(ValidationError):
        ContentPart(**part)


def test_tool_call_arguments_parse_and_with_arguments_keeps_the_id():
    assert CALL.arguments == {"a": 1, "b": 2}
    rewritten = CALL.with_arguments({"a": 5, "b": 2})
    assert (rewritten.id, rewritten.name, rewritten.index, rewritten.arguments) == ("c1", "add", 0, {"a": 5, "b": 2})
    for bad in ('{"a": 1', "[1, 2]"):
        with pytest.raises(ArkError) as info:
            CALL.model_copy(update={"arguments_json": bad}).arguments
        assert (info.value.code, info.value.layer) == ("tool_arguments_invalid", "tool")
    with pytest.raises(ValidationError, match="id"):
        ToolCall(id="", name="add")


def test_text_properties_join_parts_and_constructors_from_text():
    message = AgentMessage.user(["a", "b", ContentPart.image_url("https://e.org/x.png"), "c"])
    assert message.text == "abc"
    assert ToolResult.from_text("3").text == "3"
    assert ToolResult(contents="coerced").text == "coerced"
    assert ContentPart.from_text("x").is_text


def test_tool_definition_name_and_risk_are_validated():
    with pytest.raises(ValidationError, match="name"):
        ToolDefinition(name="has space")
    with pytest.raises(ValidationError, match="risk"):
        ToolDefinition(name="ok", risk="medium")


def test_model_values_reject_impossible_numbers():
    with pytest.raises(ValidationError, match="temperature"):
        ModelConfig(temperature=5)
    with pytest.raises(ValidationError, match="max_tokens"):
        ModelConfig(max_tokens=0)
    with pytest.raises(ValidationError, match="input_tokens"):
        Usage(input_tokens=-1)
    assert (Usage(input_tokens=1, output_tokens=2) + Usage(input_tokens=3)).total_tokens == 6


# --- enums and errors -----------------------------------------------------------------

def test_enums_are_str_enums_with_lower_case_values():
    assert Role.ASSISTANT == "assistant" and ToolRisk.DANGEROUS == "dangerous"
    assert StopReason.COMPLETED == "completed" and ErrorLayer.SECURITY == "security"
    assert [s.value for s in StopReason] == ["completed", "stopped", "max_turns", "loop_detected", "cancelled",
                                             "aborted", "failed", "awaiting_approval", "suspended"]
    assert {r.value for r in Retryability} == {"never", "safe", "conditional"}


def test_error_codes_exist_with_their_layers():
    expected = {
        "hook_abort": "security", "tool_denied": "security", "awaiting_approval": "security",
        "pending_approval_blocks_input": "security", "loop_detected": "runtime", "cancelled": "cancelled",
        "state_save_failed": "storage", "approval_host_missing": "runtime", "request_handler_missing": "config",
        "request_handler_duplicate": "config", "tool_not_found": "tool", "tool_arguments_invalid": "tool",
        "run_already_active": "runtime", "not_resumable": "storage",
    }
    for code in expected:
        assert ErrorCode(code) == code
    assert "approval_already_decided" not in {c.value for c in ErrorCode}
    err = ArkError("security", "hook_abort", "blocked")
    assert err.layer == "security" and isinstance(err, Exception)
    assert not err.retryable and ArkError("transport", "timeout", "t", "safe").retryable
    assert str(err) == "[security/hook_abort] blocked"


def test_ark_error_round_trips_through_info_dict_and_pickle():
    err = ArkError("provider", "provider_rate_limited", "slow down", "safe", status_code=429, provider_code="rl")
    again = ErrorInfo.model_validate(err.to_dict()).to_error()
    assert (again.layer, again.code, again.message, again.retryability, again.status_code, again.provider_code) == (
        "provider", "provider_rate_limited", "slow down", "safe", 429, "rl")
    unpickled = pickle.loads(pickle.dumps(err))
    assert unpickled.to_dict() == err.to_dict()
    with pytest.raises(ValueError):
        ArkError("nowhere", "x", "y")


# --- cancellation -----------------------------------------------------------------------

async def test_cancellation_token_is_one_way_and_wakes_waiters():
    token = CancellationToken()
    calls: list[str] = []
    token.on_cancel(lambda: calls.append("cb"))
    token.on_cancel(lambda: 1 / 0)  # a failing callback must not stop the others
    token.on_cancel(lambda: calls.append("cb2"))
    waiter = asyncio.ensure_future(token.wait())
    await asyncio.sleep(0)
    assert not waiter.done()
    token.raise_if_cancelled()
    token.cancel("user pressed Stop")
    token.cancel("again")
    await waiter
    assert token.cancelled and token.reason == "user pressed Stop"
    assert calls == ["cb", "cb2"]
    with pytest.raises(ArkError) as info:
        token.raise_if_cancelled()
    assert (info.value.layer, info.value.code) == ("cancelled", "cancelled")
    late: list[str] = []
    token.on_cancel(lambda: late.append("now"))
    assert late == ["now"]
    await token.wait()
