"""Streaming events: what an :class:`LLMClient` yields while the model answers (seed 003 §5.3).

A discriminated union on ``type``. ``model_complete`` always carries the full
:class:`ModelResponse`, so a consumer never has to reassemble deltas itself.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from .errors import ErrorInfo
from .model import ModelResponse, Usage

__all__ = [
    "ModelComplete", "ModelStart", "ReasoningDelta", "RetryNotice", "StreamError",
    "StreamingEvent", "StreamingEventAdapter", "TextDelta", "ToolCallDelta", "UsageUpdate",
]

_FROZEN = ConfigDict(frozen=True)


class ModelStart(BaseModel):
    """The model call began."""

    model_config = _FROZEN
    type: Literal["model_start"] = "model_start"
    model: str | None = None


class ReasoningDelta(BaseModel):
    """A piece of the model's reasoning (thinking), kept apart from the answer."""

    model_config = _FROZEN
    type: Literal["reasoning_delta"] = "reasoning_delta"
    text: str


class TextDelta(BaseModel):
    """A piece of the answer text."""

    model_config = _FROZEN
    type: Literal["text_delta"] = "text_delta"
    text: str


class ToolCallDelta(BaseModel):
    """A piece of a tool call; pieces with the same ``index`` belong together."""

    model_config = _FROZEN
    type: Literal["tool_call_delta"] = "tool_call_delta"
    index: int = 0
    id: str | None = None
    name: str | None = None
    arguments_delta: str = ""


class UsageUpdate(BaseModel):
    """Token usage reported by the server."""

    model_config = _FROZEN
    type: Literal["usage"] = "usage"
    usage: Usage


class RetryNotice(BaseModel):
    """The client is about to try the call again after ``delay`` seconds."""

    model_config = _FROZEN
    type: Literal["retry"] = "retry"
    attempt: int
    delay: float
    error: ErrorInfo
    reason: str | None = None
    """Why trying again is safe, in words (e.g. the stream was cut before anything was shown)."""


class ModelComplete(BaseModel):
    """The call finished; ``response`` is the whole answer."""

    model_config = _FROZEN
    type: Literal["model_complete"] = "model_complete"
    response: ModelResponse


class StreamError(BaseModel):
    """The call failed; no ``model_complete`` follows."""

    model_config = _FROZEN
    type: Literal["error"] = "error"
    error: ErrorInfo


StreamingEvent = Annotated[
    Union[ModelStart, ReasoningDelta, TextDelta, ToolCallDelta, UsageUpdate, RetryNotice,
          ModelComplete, StreamError],
    Field(discriminator="type"),
]

StreamingEventAdapter: TypeAdapter[StreamingEvent] = TypeAdapter(StreamingEvent)
"""Validates and serialises any :data:`StreamingEvent` (``validate_python``, ``dump_json``)."""
