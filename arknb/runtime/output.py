"""Typed answers (DESIGN §17): what a run's final answer must be, and how it is checked.

``AgentRuntime(..., output_type=T)`` or ``run(input, output_type=T)`` asks the model for
an answer of type ``T``: a pydantic model, a dataclass, a TypedDict, ``list[...]``, a
``Literal`` or ``str`` (anything pydantic's ``TypeAdapter`` validates). An
:class:`OutputSpec` holds what the runtime needs of ``T``: its JSON Schema (wrapped in an
object under ``"response"`` when ``T`` is not an object, since both ``response_format``
and tool arguments must be objects), and a validator that turns the model's JSON into
the typed value or into :class:`OutputErrors` naming each wrong field.

Example:
    >>> from pydantic import BaseModel
    >>> class City(BaseModel):
    ...     name: str
    ...     population: int
    >>> spec = OutputSpec.of(City)
    >>> spec.validate_json('{"name": "Oslo", "population": 709000}')
    City(name='Oslo', population=709000)
    >>> try:
    ...     spec.validate_json('{"name": "Oslo", "population": "many"}')
    ... except OutputErrors as errors:
    ...     print(errors.fields)
    ('population',)
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError
from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError
from pydantic_core import to_jsonable_python

from ..domain import OutputSchema, invalid_argument

__all__ = ["FINAL_RESULT_TOOL", "OutputErrors", "OutputMode", "OutputSpec"]

OutputMode = Literal["auto", "native", "tool"]
"""How a typed answer is asked for: ``"auto"`` (native JSON-schema output where the model
says it supports it, else the ``final_result`` tool), ``"native"`` or ``"tool"``."""

FINAL_RESULT_TOOL = "final_result"
"""The tool whose arguments are the answer, offered when native output is not used."""

_WRAP_KEY = "response"
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_\-]")
_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(.*?)\n?```\s*$", re.S)
_MAX_ERRORS = 10


class OutputErrors(Exception):
    """A model's answer that is not of the output type: the validation errors, per field.

    Not an :class:`~arknb.domain.ArkError`: it is what goes back to the model for another
    try; only when the tries are used up does the run fail with ``output_invalid``.

    Attributes:
        errors: ``({"loc": "a.b", "msg": ..., "type": ...}, ...)``, at most ten.
        fields: the distinct locations that failed (``"(answer)"`` for the whole answer).
    """

    def __init__(self, errors: tuple[dict[str, str], ...]) -> None:
        self.errors = errors
        self.fields = tuple(dict.fromkeys(e["loc"] for e in errors))
        super().__init__(self.summary())

    def summary(self) -> str:
        """One line per error: ``field: message``."""
        return "; ".join(f"{e['loc']}: {e['msg']}" for e in self.errors)


class OutputSpec:
    """The output type of a run, with its schema and validator (build it with :meth:`of`).

    Attributes:
        output_type: the type given.
        name: the schema's name (the type's name, sanitised), e.g. ``"City"``.
        json_schema: the schema the model is asked to follow (always an object).
        wrapped: True when the type is not an object and its value sits under ``"response"``.
        is_text: True for ``str``: the answer is the plain text, nothing to validate.
    """

    __slots__ = ("output_type", "name", "json_schema", "wrapped", "is_text", "_adapter", "_outer", "_schema")

    def __init__(self, output_type: Any, *, name: str | None = None) -> None:
        self.output_type = output_type
        self.is_text = output_type is str
        try:
            self._adapter = TypeAdapter(output_type)
            schema = self._adapter.json_schema()
        except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
            raise invalid_argument(f"output_type={output_type!r} cannot be validated by pydantic: {exc}. "
                                   "Use a pydantic model, dataclass, TypedDict, list[...], Literal or str") from None
        self.wrapped = schema.get("type") != "object"
        if self.wrapped:
            schema = {"type": "object", "properties": {_WRAP_KEY: schema}, "required": [_WRAP_KEY],
                      **({"$defs": schema.pop("$defs")} if "$defs" in schema else {})}
        self.json_schema = schema
        self._outer = TypeAdapter(dict[str, Any]) if self.wrapped else None
        raw = name or getattr(output_type, "__name__", None) or "Output"
        self.name = _NAME_CHARS.sub("_", str(raw))[:64] or "Output"
        self._schema: OutputSchema | None = None

    @classmethod
    def of(cls, output_type: Any) -> OutputSpec:
        """The spec of ``output_type`` (an :class:`OutputSpec` is returned as it is)."""
        if isinstance(output_type, OutputSpec):
            return output_type
        if output_type is None:
            raise invalid_argument("output_type=None: leave it out for a plain text answer")
        return cls(output_type)

    def schema(self) -> OutputSchema:
        """The schema as a domain value (what a native request carries)."""
        if self._schema is None:
            self._schema = OutputSchema(name=self.name, json_schema=self.json_schema)
        return self._schema

    def validate_json(self, text: str) -> Any:
        """The typed value of a JSON answer (a Markdown code fence around it is allowed).

        Raises:
            OutputErrors: the answer is not JSON, or not of the output type.
        """
        if self.is_text:
            return text
        match = _FENCE.match(text)
        if match is not None:
            text = match.group(1)
        try:
            if not self.wrapped:
                return self._adapter.validate_json(text)
            outer = json.loads(text)
        except ValidationError as exc:
            raise _errors(exc) from None
        except ValueError as exc:
            raise OutputErrors(({"loc": "(answer)", "msg": f"not valid JSON ({exc})", "type": "json_invalid"},)) \
                from None
        return self.validate_python(outer)

    def validate_python(self, value: Any) -> Any:
        """The typed value of decoded JSON (e.g. tool arguments); raises :class:`OutputErrors`."""
        if self.wrapped:
            if not isinstance(value, dict) or _WRAP_KEY not in value:
                # A bare value where {"response": value} was asked: taken if it is of the type.
                try:
                    return self._adapter.validate_python(value)
                except ValidationError:
                    raise OutputErrors(({"loc": _WRAP_KEY, "msg": f"missing: the answer goes under "
                                         f"{_WRAP_KEY!r}", "type": "missing"},)) from None
            value = value[_WRAP_KEY]
        try:
            return self._adapter.validate_python(value)
        except ValidationError as exc:
            raise _errors(exc) from None

    def to_json(self, value: Any) -> Any:
        """``value`` as JSON-ready data (for events, cassettes, a sub-agent's answer)."""
        return to_jsonable_python(value)

    def dump_json(self, value: Any) -> str:
        """``value`` as a JSON string."""
        return json.dumps(self.to_json(value), ensure_ascii=False)

    def __repr__(self) -> str:
        return f"OutputSpec({self.name!r})"


def _errors(exc: ValidationError) -> OutputErrors:
    found = []
    for error in exc.errors(include_url=False)[:_MAX_ERRORS]:
        loc = ".".join(str(part) for part in error.get("loc", ())) or "(answer)"
        found.append({"loc": loc, "msg": str(error.get("msg", "")), "type": str(error.get("type", ""))})
    return OutputErrors(tuple(found))
