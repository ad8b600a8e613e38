"""Tool values: the call a model makes, the result it gets, the definition it sees."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any, Iterable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .content import ContentPart
from .errors import ArkError, ErrorCode, ErrorLayer, invalid_argument
from .frozen import DeepFrozenModel, FrozenJSON, freeze
from .json_decode import MAX_JSON_DEPTH, JSONTooDeepError, decode_json, json_depth_exceeds

__all__ = ["ToolCall", "ToolDefinition", "ToolResult", "ToolRisk"]


class ToolRisk(StrEnum):
    """How much a tool can do. Dangerous tools wait for a human (seed 000 §8)."""

    SAFE = "safe"
    DANGEROUS = "dangerous"


class ToolCall(BaseModel):
    """A model's request to run one tool.

    ``arguments_json`` is the text the model sent; :attr:`arguments` parses it.

    Example:
        >>> call = ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')
        >>> call.arguments["b"], call.with_arguments({"a": 5, "b": 2}).id
        (2, 'c1')
    """

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments_json: str = "{}"
    index: int = Field(default=0, ge=0)

    @property
    def arguments(self) -> dict[str, Any]:
        """The parsed arguments, read-only (a :class:`~arknb.domain.frozen.FrozenDict`;
        rewrite a call with :meth:`with_arguments`).

        Raises:
            ArkError: ``tool_arguments_invalid`` if they are not a JSON object or are
                nested more than ``MAX_JSON_DEPTH`` (200) levels deep.
        """
        text = self.arguments_json.strip() or "{}"
        try:
            value = decode_json(text)
        except JSONTooDeepError:
            raise ArkError(ErrorLayer.TOOL, ErrorCode.TOOL_ARGUMENTS_INVALID,
                           f"arguments of tool call {self.id!r} ({self.name}) are nested more than "
                           f"{MAX_JSON_DEPTH} levels deep") from None
        except ValueError as exc:
            raise ArkError(ErrorLayer.TOOL, ErrorCode.TOOL_ARGUMENTS_INVALID,
                           f"arguments of tool call {self.id!r} ({self.name}) are not valid JSON: {exc}") from None
        if not isinstance(value, dict):
            raise ArkError(ErrorLayer.TOOL, ErrorCode.TOOL_ARGUMENTS_INVALID,
                           f"arguments of tool call {self.id!r} ({self.name}) must be a JSON object, "
                           f"got {type(value).__name__}")
        return freeze(value, _ARGUMENTS_ORIGIN)

    def with_arguments(self, arguments: dict[str, Any]) -> ToolCall:
        """A copy with new arguments and the same id, name and index.

        Raises:
            ArkError: ``invalid_argument`` if ``arguments`` is not a dict, cannot be
                written as JSON, or nests more than ``MAX_JSON_DEPTH`` levels deep.
        """
        if not isinstance(arguments, dict):
            raise invalid_argument(f"with_arguments: arguments must be a dict, got {type(arguments).__name__}")
        if json_depth_exceeds(arguments):
            raise invalid_argument(f"with_arguments: arguments nest more than {MAX_JSON_DEPTH} levels deep "
                                   "(or contain themselves)")
        try:
            text = json.dumps(arguments, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise invalid_argument(f"with_arguments: arguments must be JSON values: {exc}") from None
        return self.model_copy(update={"arguments_json": text})


_ARGUMENTS_ORIGIN = ("ToolCall.arguments is read-only (parsed from arguments_json): rewrite the call with "
                     "call.with_arguments({...}) and return ToolCallHookResult.proceed(new_call); "
                     ".thaw() gives a mutable copy")


class ToolResult(BaseModel):
    """What a tool returned. ``is_error`` tells the model the call failed; ``stop``
    asks the loop to end after this batch.

    Example:
        >>> ToolResult.from_text("3").text
        '3'
    """

    model_config = ConfigDict(frozen=True)

    contents: tuple[ContentPart, ...] = ()
    is_error: bool = False
    stop: bool = False
    error_code: str | None = None
    structured_content: dict[str, Any] | None = None
    """A JSON object the tool returned beside its text (an MCP tool's ``structuredContent``)."""

    @field_validator("contents", mode="before")
    @classmethod
    def _coerce(cls, value: Any) -> Any:
        if isinstance(value, str):
            return (ContentPart.from_text(value),)
        # A JSON array reaches a before-validator as a list; as a tuple it also passes
        # strict validation (saved states are read strictly, DESIGN §8).
        return tuple(value) if isinstance(value, list) else value

    @property
    def text(self) -> str:
        """The text parts, joined."""
        return "".join(p.text for p in self.contents if p.text is not None)

    @classmethod
    def from_text(cls, text: str, is_error: bool = False, *, stop: bool = False,
                  error_code: str | None = None) -> ToolResult:
        """A result holding one text part."""
        if not isinstance(text, str):
            raise invalid_argument(f"ToolResult.from_text: text must be a str, got {type(text).__name__}")
        return cls(contents=(ContentPart.from_text(text),), is_error=is_error, stop=stop,
                   error_code=error_code)

    @classmethod
    def from_error(cls, error: ArkError) -> ToolResult:
        """An error result carrying the error's code and message."""
        return cls(contents=(ContentPart.from_text(f"{error.code}: {error.message}"),),
                   is_error=True, error_code=error.code)

    @classmethod
    def from_parts(cls, parts: Iterable[ContentPart], is_error: bool = False) -> ToolResult:
        """A result from content parts (e.g. an image a tool produced)."""
        return cls(contents=tuple(parts), is_error=is_error)


_PARAMETERS_ORIGIN = ("ToolDefinition.parameters (a tool's JSON Schema) is read-only: build a changed definition "
                      "with definition.model_copy(update={'parameters': {...}}); .thaw() gives a mutable copy")


class ToolDefinition(DeepFrozenModel):
    """What the model is told about a tool: name, description, JSON Schema, risk.

    ``parameters`` is read-only all the way down (hooks see the definitions the
    runtime sends, not copies). ``read_only`` says the tool only looks (it changes
    nothing outside the agent), so a plan under review does not hold it back (DESIGN §14).
    """

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]{1,64}$")
    description: str = ""
    parameters: Annotated[dict[str, Any], FrozenJSON(_PARAMETERS_ORIGIN)] = Field(
        default_factory=lambda: freeze({"type": "object", "properties": {}}, _PARAMETERS_ORIGIN))
    risk: ToolRisk = ToolRisk.SAFE
    read_only: bool = False
