"""Messages: what the conversation history is made of (seed 003 §5.2)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .content import ContentPart
from .errors import invalid_argument
from .tools import ToolCall

__all__ = ["AgentMessage", "MessageOutput", "Role"]


class Role(StrEnum):
    """Who speaks."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


_ASSISTANT, _SYSTEM, _TOOL = Role.ASSISTANT, Role.SYSTEM, Role.TOOL


class MessageOutput(BaseModel):
    """The typed answer an assistant message gave, as the runtime validated it (DESIGN §17).

    Saved with the message so a restored chat shows the answer as its field table and a
    graph resumed after a crash finds the typed value, not just the raw text.

    Attributes:
        name: the output type's schema name, e.g. ``"City"``.
        json_text: the validated value as JSON text (defaults filled, values coerced).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    json_text: str

    def value(self) -> Any:
        """The validated value as JSON data (dicts, lists, numbers, strings)."""
        return json.loads(self.json_text)


def _parts(content: str | ContentPart | Iterable[str | ContentPart]) -> tuple[ContentPart, ...]:
    if isinstance(content, str):
        return (ContentPart.from_text(content),)
    if isinstance(content, ContentPart):
        return (content,)
    if not isinstance(content, Iterable):
        raise invalid_argument(f"message content must be a str, a ContentPart or a list of them, "
                               f"got {type(content).__name__}")
    parts = []
    for item in content:
        if not isinstance(item, (str, ContentPart)):
            raise invalid_argument(f"message content items must be str or ContentPart, got {type(item).__name__}")
        parts.append(ContentPart.from_text(item) if isinstance(item, str) else item)
    return tuple(parts)


class AgentMessage(BaseModel):
    """One message of the history.

    Invariants (seed 003 §5.2): a system message holds text only; a tool message
    needs ``tool_call_id``; only assistant messages carry ``tool_calls``; user, system
    and tool messages are never an empty list of parts.

    Example:
        >>> AgentMessage.user("What is 1 + 2?").text
        'What is 1 + 2?'
    """

    model_config = ConfigDict(frozen=True)

    role: Role
    contents: tuple[ContentPart, ...] = ()
    tool_call_id: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: tuple[ContentPart, ...] = ()
    is_error: bool = False
    # Two notes the runtime adds to an assistant answer (DESIGN §17), left out of the JSON
    # when unset, so a message without them reads and writes as before.
    output: MessageOutput | None = Field(default=None, exclude_if=lambda v: v is None)
    """The validated typed answer this message gave (None for any other message)."""
    truncated: bool = Field(default=False, exclude_if=lambda v: v is False)
    """True when the model's reply was cut at ``max_tokens`` (finish reason ``length``)."""

    @model_validator(mode="after")
    def _check_invariants(self) -> AgentMessage:
        # Runs for every message of a restored history: one branch per role, with the
        # checks in the order of the rules above (the first broken one is reported).
        role = self.role
        if role is _ASSISTANT:
            if self.tool_call_id is not None:
                raise ValueError("'tool_call_id' belongs on tool messages, not on assistant messages")
            return self
        if role is _TOOL:
            if not self.tool_call_id:
                raise ValueError("a tool message needs 'tool_call_id'")
        else:
            if role is _SYSTEM and any(not p.is_text for p in self.contents):
                raise ValueError("a system message may hold text parts only")
            if self.tool_call_id is not None:
                raise ValueError(f"'tool_call_id' belongs on tool messages, not on {role.value} messages")
        if self.tool_calls:
            raise ValueError(f"'tool_calls' belong on assistant messages, not on {role.value} messages")
        if not self.contents:
            raise ValueError(f"a {role.value} message needs at least one content part (no empty text arrays)")
        return self

    @property
    def text(self) -> str:
        """The message's text parts, joined."""
        return "".join(p.text for p in self.contents if p.text is not None)

    @property
    def reasoning_text(self) -> str:
        """The reasoning parts, joined."""
        return "".join(p.text for p in self.reasoning if p.text is not None)

    @classmethod
    def system(cls, text: str) -> AgentMessage:
        """A system message."""
        return cls(role=Role.SYSTEM, contents=_parts(text))

    @classmethod
    def user(cls, content: str | ContentPart | Iterable[str | ContentPart]) -> AgentMessage:
        """A user message from text or parts."""
        return cls(role=Role.USER, contents=_parts(content))

    @classmethod
    def assistant(cls, text: str = "", *, tool_calls: Iterable[ToolCall] = (),
                  reasoning: str = "") -> AgentMessage:
        """An assistant message; empty text gives no content part."""
        return cls(role=Role.ASSISTANT,
                   contents=(ContentPart.from_text(text),) if text else (),
                   tool_calls=tuple(tool_calls),
                   reasoning=(ContentPart.from_text(reasoning),) if reasoning else ())

    @classmethod
    def tool(cls, call_id: str, content: str | ContentPart | Iterable[str | ContentPart],
             is_error: bool = False) -> AgentMessage:
        """A tool result message answering the call ``call_id``."""
        parts = _parts(content)
        if not parts:
            parts = (ContentPart.from_text(""),)
        return cls(role=Role.TOOL, contents=parts, tool_call_id=call_id, is_error=is_error)
