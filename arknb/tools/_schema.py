"""Turning a typed function signature into an argument model and a JSON Schema."""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from arknb.domain import invalid_argument

from .context import ToolContext

__all__ = ["ArgumentSpec", "build_argument_spec"]

# Keywords whose values are schemas (or maps/lists of schemas): the only places a
# "title" may be pydantic noise. Everything else ("default", "enum", "const",
# "examples", a property *named* title) is user data and is left alone.
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = ("items", "additionalProperties", "not", "contains")


@dataclass(frozen=True, slots=True)
class ArgumentSpec:
    """Everything :class:`~arknb.tools.Tool` needs to validate and pass arguments.

    Attributes:
        model: The pydantic model of the model-facing parameters (extra keys forbidden).
        schema: Its JSON Schema without pydantic's ``title`` noise.
        renamed: ``(field_name, parameter_name)`` pairs for parameters whose name
            could not be a pydantic field name (``json``, ``model_config``,
            ``_private``, ...); empty in the common case.
        context_param: The name of the injected ``ToolContext`` parameter, if any.
        positional_only: Names of positional-only parameters, in order.
    """

    model: type[BaseModel]
    schema: dict[str, Any]
    renamed: tuple[tuple[str, str], ...]
    context_param: str | None
    positional_only: tuple[str, ...]


def build_argument_spec(fn: Callable[..., Any], tool_name: str,
                        param_docs: dict[str, str]) -> ArgumentSpec:
    """Build the argument model and schema of ``fn``.

    Args:
        fn: The tool function.
        tool_name: Used in error messages and the model's class name.
        param_docs: Per-parameter descriptions (from the docstring).

    Returns:
        The argument spec.

    Raises:
        ArkError: ``config/invalid_argument`` for a parameter without an annotation,
            ``*args``/``**kwargs``, an unresolvable annotation, or a type pydantic
            cannot express as JSON Schema; the message names the parameter.
    """
    try:
        signature = inspect.signature(fn, eval_str=True)
    except (NameError, SyntaxError, TypeError) as exc:
        raise invalid_argument(
            f"cannot read the type annotations of tool {tool_name!r}: {exc}") from None
    except ValueError as exc:
        raise invalid_argument(f"cannot read the signature of tool {tool_name!r}: {exc}") from None

    fields: dict[str, Any] = {}
    renamed: list[tuple[str, str]] = []
    context_param: str | None = None
    positional_only: list[str] = []
    for position, param in enumerate(signature.parameters.values()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            star = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise invalid_argument(
                f"tool {tool_name!r} cannot take {star}{param.name}: a tool's parameters "
                f"must be named and typed so the model can be given a schema")
        if param.annotation is param.empty:
            raise invalid_argument(
                f"parameter {param.name!r} of tool {tool_name!r} has no type annotation; "
                f"annotate it (e.g. '{param.name}: str') so its JSON Schema can be built")
        if param.kind is param.POSITIONAL_ONLY:
            positional_only.append(param.name)
        if _is_context(param.annotation):
            if context_param is not None:
                raise invalid_argument(
                    f"tool {tool_name!r} declares two ToolContext parameters "
                    f"({context_param!r} and {param.name!r}); keep one")
            context_param = param.name
            continue
        field_name = param.name
        if _clashes_with_pydantic(param.name):
            field_name = f"arg{position}_"
            renamed.append((field_name, param.name))
        fields[field_name] = (param.annotation, _field_info(param, param_docs.get(param.name),
                                                            alias=field_name != param.name))

    try:
        model = create_model(  # type: ignore[call-overload]
            f"{_class_name(tool_name)}Arguments",
            __config__=ConfigDict(extra="forbid", populate_by_name=False),
            **fields,
        )
        schema = model.model_json_schema()
    except Exception as exc:  # pydantic raises several types here; all mean "bad annotation"
        raise invalid_argument(
            f"cannot build a JSON Schema for tool {tool_name!r}: {type(exc).__name__}: {exc}. "
            f"Use JSON-friendly annotations (str, int, float, bool, list, dict, Literal, "
            f"Enum, pydantic models)") from None
    _strip_titles(schema)
    # Keep "properties" even for no parameters: some providers require it.
    schema.setdefault("properties", {})
    return ArgumentSpec(model=model, schema=schema, renamed=tuple(renamed),
                        context_param=context_param, positional_only=tuple(positional_only))


def _is_context(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    # Annotated[ToolContext, ...] counts too.
    return typing.get_origin(annotation) is typing.Annotated and \
        typing.get_args(annotation)[0] is ToolContext


def _clashes_with_pydantic(name: str) -> bool:
    return name.startswith(("_", "model_")) or hasattr(BaseModel, name)


def _field_info(param: inspect.Parameter, doc: str | None, *, alias: bool) -> FieldInfo:
    default = ... if param.default is param.empty else param.default
    kwargs: dict[str, Any] = {}
    if doc and not _annotated_description(param.annotation):
        kwargs["description"] = doc
    if alias:
        kwargs["alias"] = param.name
    return Field(default, **kwargs)


def _annotated_description(annotation: Any) -> bool:
    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return any(isinstance(meta, FieldInfo) and meta.description
               for meta in typing.get_args(annotation)[1:])


def _class_name(tool_name: str) -> str:
    parts = [p for p in tool_name.replace(".", "_").replace("-", "_").split("_") if p]
    return "".join(p[:1].upper() + p[1:] for p in parts) or "Tool"


def _strip_titles(node: dict[str, Any]) -> None:
    title = node.get("title")
    if isinstance(title, str):
        del node["title"]
    for key in _SCHEMA_MAPS:
        children = node.get(key)
        if isinstance(children, dict):
            for child in children.values():
                if isinstance(child, dict):
                    _strip_titles(child)
    for key in _SCHEMA_LISTS:
        children = node.get(key)
        if isinstance(children, list):
            for child in children:
                if isinstance(child, dict):
                    _strip_titles(child)
    for key in _SCHEMA_VALUES:
        child = node.get(key)
        if isinstance(child, dict):
            _strip_titles(child)
