"""Domain ↔ Chat Completions wire format (seed 003 §7.1).

Requests: :func:`build_body` maps a :class:`ModelRequest` to the JSON body. Responses:
:func:`map_finish_reason` and :func:`map_usage` read the pieces of a chunk; the
chunk-by-chunk assembly lives in ``assembler.py``.
"""

from __future__ import annotations

from typing import Any

from ...domain import (
    AgentMessage, ArkError, ErrorCode, ErrorLayer, FinishReason, ModelRequest, Role, Usage,
)
from .media import user_content
from .profiles import ProviderProfile

__all__ = ["INTERRUPTED_FINISH_REASONS", "build_body", "map_finish_reason", "map_usage"]

_FINISH = {
    "stop": FinishReason.STOP,
    "end_turn": FinishReason.STOP,
    "eos": FinishReason.STOP,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "length": FinishReason.LENGTH,
    "max_tokens": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
    "sensitive": FinishReason.CONTENT_FILTER,            # Zhipu
    "network_error": FinishReason.ERROR,                 # Zhipu
    "insufficient_system_resource": FinishReason.ERROR,  # DeepSeek
}

INTERRUPTED_FINISH_REASONS = frozenset({"network_error", "insufficient_system_resource", "error"})
"""Finish reasons that mean the server broke off: the answer is incomplete, so the
call fails with ``provider_interrupted`` rather than completing with partial text."""

_TOOL_CHOICES = frozenset({"auto", "none", "required"})


def map_finish_reason(value: Any) -> FinishReason | None:
    """The domain finish reason for a wire value (``None`` if absent)."""
    if value is None:
        return None
    return _FINISH.get(str(value), FinishReason.UNKNOWN)


def map_usage(usage: dict[str, Any]) -> Usage:
    """``Usage`` from an OpenAI-style usage object (DeepSeek and Zhipu extras included)."""
    details_in = usage.get("prompt_tokens_details") or {}
    details_out = usage.get("completion_tokens_details") or {}
    cached = details_in.get("cached_tokens") or usage.get("prompt_cache_hit_tokens") or 0
    return Usage.model_construct(
        input_tokens=int(usage.get("prompt_tokens") or 0),
        output_tokens=int(usage.get("completion_tokens") or 0),
        reasoning_tokens=int(details_out.get("reasoning_tokens") or 0),
        cached_tokens=int(cached))


def _message(message: AgentMessage, profile: ProviderProfile) -> dict[str, Any]:
    role = message.role
    if role is Role.USER:
        return {"role": "user", "content": user_content(message, profile)}
    if role is Role.SYSTEM:
        return {"role": "system", "content": message.text}
    if role is Role.TOOL:
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.text}
    wire: dict[str, Any] = {"role": "assistant", "content": message.text or None}
    if message.tool_calls:
        wire["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json}}
            for c in message.tool_calls]
    if profile.send_reasoning and message.reasoning:
        wire["reasoning_content"] = message.reasoning_text
    if wire["content"] is None and "tool_calls" not in wire:
        wire["content"] = ""
    return wire


def build_body(request: ModelRequest, profile: ProviderProfile, model: str) -> dict[str, Any]:
    """The ``/chat/completions`` body for ``request`` (always streamed).

    Raises ``ArkError(config)`` before anything is sent for an extension the profile
    does not consume or content it cannot carry.
    """
    config = request.config
    extra = profile.extension_body(config.extensions)  # first: config errors before anything else
    if not model:
        raise ArkError(ErrorLayer.CONFIG, "model_missing",
                       "no model name: pass model= to the client or set ModelConfig.model")
    body: dict[str, Any] = {"model": model,
                            "messages": [_message(m, profile) for m in request.messages],
                            "stream": True}
    if profile.stream_usage:
        body["stream_options"] = {"include_usage": True}
    if config.temperature is not None:
        body["temperature"] = config.temperature
    if config.max_tokens is not None:
        body[profile.max_tokens_field] = config.max_tokens
    if request.tools:
        body["tools"] = [{"type": "function",
                          "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
                         for t in request.tools]
        choice = config.tool_choice
        if isinstance(choice, str) and choice not in _TOOL_CHOICES:
            choice = {"type": "function", "function": {"name": choice}}
        if choice is not None:
            body["tool_choice"] = choice
    if request.output is not None:
        if not profile.capabilities.json_schema_output:
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.OUTPUT_SCHEMA_UNSUPPORTED,
                           f"profile {profile.provider_id!r} does not declare JSON-schema output "
                           "(Capabilities.json_schema_output); let the runtime offer a final_result tool "
                           "(output_mode='tool') or use a profile that supports it")
        if "response_format" in config.extensions:
            raise ArkError(ErrorLayer.CONFIG, "extension_not_supported",
                           "ModelConfig.extensions['response_format'] and a typed answer (output_type=) both set "
                           "the response format; keep one of them")
        schema = request.output
        body["response_format"] = {"type": "json_schema", "json_schema": {
            "name": schema.name, "schema": schema.json_schema, "strict": schema.strict}}
    for key, value in extra.items():
        if key in body and key != "max_completion_tokens":
            raise ArkError(ErrorLayer.CONFIG, "extension_not_supported",
                           f"extension {key!r} would overwrite a field arknb sets itself")
        body[key] = value
    return body
