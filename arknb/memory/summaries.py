"""Writing a summary: with the user's ``summarize(messages)`` or the runtime's own model."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

from ..domain import AgentMessage, ArkError, ErrorCode, ErrorLayer, ModelConfig, ModelRequest, Role

__all__ = ["SUMMARY_INSTRUCTIONS", "SUMMARY_PURPOSE", "render_transcript", "write_summary"]

SUMMARY_INSTRUCTIONS = (
    "You summarise part of a conversation between a user and an AI assistant that uses tools, so the "
    "assistant can continue the work without the original messages. Keep: the user's goals and "
    "constraints, decisions made, facts learned (names, numbers, paths, identifiers, errors), what each "
    "tool call did and found, and what remains to be done. Leave out greetings and repetition. Write "
    "plain prose or short bullet points, in the conversation's language, and nothing else.")


def render_transcript(messages: Sequence[AgentMessage]) -> str:
    """The messages as plain text for a summarising model (tool calls and results included)."""
    lines: list[str] = []
    for message in messages:
        role = message.role
        text = message.text
        if role is Role.TOOL:
            lines.append(f"tool result ({message.tool_call_id}): {text}")
            continue
        if text:
            lines.append(f"{role.value}: {text}")
        for call in message.tool_calls:
            lines.append(f"{role.value} called {call.name}({call.arguments_json}) [id {call.id}]")
    return "\n".join(lines)


SUMMARY_PURPOSE = "context_summary"
"""The ``purpose`` of the runtime-model calls that write summaries (in their ``llm.*`` events)."""


async def write_summary(messages: Sequence[AgentMessage], *, summarize: Callable[..., Any] | None,
                        call_model: Callable[..., Any], config: ModelConfig | None) -> tuple[str, str]:
    """A summary of ``messages``; returns ``(text, source)`` with source ``"summarize"`` or ``"model"``.

    Without ``summarize`` the runtime's own model writes it through ``call_model``
    (``ExtensionScope.call_model``: announced as ``llm.*`` with purpose
    ``context_summary`` and counted in the run's usage).

    Raises:
        ArkError: ``context_summary_failed`` (runtime) when the function or the model
            raises or gives no text (an ``ArkError`` from the model keeps its code in the
            message); ``cancelled`` passes through.
    """
    if summarize is not None:
        value = await _attempt(lambda: summarize(list(messages)), "summarize() raised")
        return _checked(value, "summarize()"), "summarize"
    request = ModelRequest(messages=(AgentMessage.system(SUMMARY_INSTRUCTIONS),
                                     AgentMessage.user(render_transcript(messages))),
                           tools=(), config=config or ModelConfig())
    response = await _attempt(lambda: call_model(request, purpose=SUMMARY_PURPOSE),
                              "the model could not write the summary")
    return _checked(response.message.text, "the model"), "model"


async def _attempt(call: Callable[[], Any], what: str) -> Any:
    """``call()``, awaited if it returns an awaitable; its failure as ``context_summary_failed``
    (a cancellation passes through)."""
    try:
        value = call()
        if inspect.isawaitable(value):
            value = await value
        return value
    except ArkError as exc:
        if exc.code == ErrorCode.CANCELLED:
            raise
        raise _failed(f"{what}: {exc}") from exc
    except Exception as exc:
        raise _failed(f"{what}: {type(exc).__name__}: {exc}") from exc


def _checked(value: Any, who: str) -> str:
    if not isinstance(value, str):
        raise _failed(f"{who} must return the summary as a str, got {type(value).__name__}")
    if not value.strip():
        raise _failed(f"{who} returned an empty summary")
    return value.strip()


def _failed(detail: str) -> ArkError:
    return ArkError(ErrorLayer.RUNTIME, ErrorCode.CONTEXT_SUMMARY_FAILED,
                    f"context compression could not summarise older messages: {detail}. The model call was not "
                    "made; fix the summarizer (ContextCompressor(summarize=...)) or raise max_tokens")
