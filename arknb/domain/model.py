"""Model values: what is sent to an LLM and what comes back."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from .context import ContextChange
from .frozen import DeepFrozenModel, FrozenJSON
from .messages import AgentMessage
from .tools import ToolDefinition

__all__ = ["FinishReason", "ModelConfig", "ModelRequest", "ModelResponse", "OutputSchema", "Usage"]


class FinishReason(StrEnum):
    """Why the model stopped. Provider-specific reasons map onto these."""

    STOP = "stop"
    TOOL_CALLS = "tool_calls"
    LENGTH = "length"
    CONTENT_FILTER = "content_filter"
    ERROR = "error"
    UNKNOWN = "unknown"


class Usage(BaseModel):
    """Token counts of one model call (or a sum of several)."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    reasoning_tokens: int = Field(default=0, ge=0)
    cached_tokens: int = Field(default=0, ge=0)
    reported: bool = True
    """False when the server sent no usage: the counts are unknown, not zero (DESIGN §17).
    A sum is reported only if every part was."""

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(input_tokens=self.input_tokens + other.input_tokens,
                     output_tokens=self.output_tokens + other.output_tokens,
                     reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
                     cached_tokens=self.cached_tokens + other.cached_tokens,
                     reported=self.reported and other.reported)


_CONFIG_ORIGIN = ("ModelConfig.{} is read-only: build a changed config with "
                  "config.model_copy(update={{'{}': ...}}) and return the request that carries it "
                  "(ModelCallHookResult.proceed(request.model_copy(update={{'config': new_config}}))); "
                  ".thaw() gives a mutable copy")
_EXTENSIONS = FrozenJSON(_CONFIG_ORIGIN.format("extensions", "extensions"))


class ModelConfig(DeepFrozenModel):
    """Model name and sampling options. ``extensions`` holds provider-specific options
    (e.g. Zhipu ``thinking``); a provider refuses one it does not consume. Its dicts
    are read-only all the way down."""

    model: str = ""
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, gt=0)
    tool_choice: Annotated[str | dict[str, Any] | None, FrozenJSON(_CONFIG_ORIGIN.format(*["tool_choice"] * 2))] = None
    extensions: Annotated[dict[str, Any], _EXTENSIONS] = Field(default_factory=lambda: _EXTENSIONS.freeze({}))


_SCHEMA_ORIGIN = "OutputSchema.json_schema is read-only: build a new OutputSchema"


class OutputSchema(DeepFrozenModel):
    """The shape a typed answer must have, asked for natively (``response_format``
    json_schema) by a provider that supports it (DESIGN §17).

    Attributes:
        name: the schema's name (letters, digits, ``_`` and ``-``), e.g. ``"Weather"``.
        json_schema: the JSON Schema of the answer.
        strict: ask the server to follow the schema exactly (OpenAI ``strict``).
    """

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_\-]{1,64}$")
    json_schema: Annotated[dict[str, Any], FrozenJSON(_SCHEMA_ORIGIN)]
    strict: bool = False


class ModelRequest(BaseModel):
    """One call to the model: the messages, the tools it may call, the config, and the
    schema of a typed answer when the provider is asked for it natively.

    ``context_version`` and ``context_changes`` say how the messages differ from the
    session's raw history (see :mod:`arknb.domain.context`); the runtime sets them on
    the request it sends, after the hooks.
    """

    model_config = ConfigDict(frozen=True)

    messages: tuple[AgentMessage, ...]
    tools: tuple[ToolDefinition, ...] = ()
    config: ModelConfig = Field(default_factory=ModelConfig)
    context_version: int = 0
    context_changes: tuple[ContextChange, ...] = ()
    output: OutputSchema | None = None


class ModelResponse(BaseModel):
    """The model's complete answer to one request."""

    model_config = ConfigDict(frozen=True)

    message: AgentMessage
    finish_reason: FinishReason = FinishReason.STOP
    usage: Usage = Field(default_factory=Usage)
    model: str | None = None
