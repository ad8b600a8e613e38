"""Conversation messages between arknb's history and AG-UI (DESIGN §18).

A thread's history lives on the server (``threadId`` is the session id), so of the
messages a client sends only those after the last assistant message are new: the
trailing user messages (the new input) and tool messages (results of the client's own
tools). A client that sends the whole conversation or only the new message is read
the same way; the server skips a user message whose id the thread already ran (a client
retrying an input after a lost connection). ``MESSAGES_SNAPSHOT`` carries the history with ids ``m{index}``.
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import (
    AssistantMessage, FunctionCall, Message, ReasoningMessage, SystemMessage, TextPart, ToolCall as AguiToolCall,
    ToolMessage, UserMessage,
)

from arknb.domain import AgentMessage, ArkError, ErrorCode, ErrorLayer, Role, ToolResult

__all__ = ["new_messages", "snapshot", "to_result", "to_user_message"]


def snapshot(history: tuple[AgentMessage, ...]) -> list[Any]:
    """The history as AG-UI messages (reasoning as its own message before the answer)."""
    out: list[Any] = []
    for index, message in enumerate(history):
        mid = f"m{index}"
        if message.role is Role.SYSTEM:
            out.append(SystemMessage(id=mid, content=message.text))
        elif message.role is Role.USER:
            out.append(UserMessage(id=mid, content=message.text))
        elif message.role is Role.TOOL:
            out.append(ToolMessage(id=mid, tool_call_id=message.tool_call_id or "", content=message.text,
                                   error=message.text if message.is_error else None))
        else:
            if message.reasoning_text:
                out.append(ReasoningMessage(id=f"{mid}:reasoning", content=message.reasoning_text))
            calls = [AguiToolCall(id=c.id, function=FunctionCall(name=c.name, arguments=c.arguments_json or "{}"))
                     for c in message.tool_calls]
            out.append(AssistantMessage(id=mid, content=message.text or None, tool_calls=calls or None))
    return out


def new_messages(messages: list[Message]) -> list[Message]:
    """The messages after the last assistant (or system) message: what the client adds."""
    tail: list[Message] = []
    for message in reversed(messages):
        if message.role not in ("user", "tool"):
            break
        tail.append(message)
    tail.reverse()
    return tail


def _text(content: Any, what: str) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for part in content:
        if isinstance(part, TextPart):
            texts.append(part.text)
        else:
            raise ArkError(ErrorLayer.DECODE, ErrorCode.AGUI_INPUT_INVALID,
                           f"{what} holds a {getattr(part, 'type', type(part).__name__)!r} part; this server takes "
                           "text parts only (send the text, or describe the file)")
    return "".join(texts)


def to_user_message(message: UserMessage) -> AgentMessage:
    """An AG-UI user message as arknb's."""
    text = _text(message.content, f"user message {message.id!r}")
    if not text.strip():
        raise ArkError(ErrorLayer.DECODE, ErrorCode.AGUI_INPUT_INVALID, f"user message {message.id!r} is empty")
    return AgentMessage.user(text)


def to_result(message: ToolMessage) -> ToolResult:
    """A client tool's answer as the call's result (``error`` makes it an error result)."""
    text = _text(message.content, f"tool message {message.id!r}")
    if message.error:
        return ToolResult.from_text(f"{text}\n{message.error}" if text else message.error, is_error=True)
    return ToolResult.from_text(text)

