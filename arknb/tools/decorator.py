"""The :class:`Tool` wrapper and the :func:`tool` decorator."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import re
from typing import Any, Callable, Mapping, overload

from pydantic import ValidationError
from pydantic_core import to_jsonable_python

from arknb.domain import (
    ArkError, ContentPart, ErrorCode, ToolDefinition, ToolResult, ToolRisk, invalid_argument,
)

from ._docstring import parse_docstring
from ._schema import build_argument_spec
from arknb.domain.json_decode import MAX_JSON_DEPTH
from arknb.domain.threads import run_blocking
from .context import ToolContext

__all__ = ["Tool", "tool"]

_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
_MAX_INPUT_REPR = 80


class Tool:
    """A typed function the model can call.

    Built by :func:`tool`; holds the function, its JSON Schema and its risk. The
    argument validator is built once, here, never per call. A ``Tool`` stays callable
    like the function it wraps, so a notebook can test ``add(1, 2)`` directly (an
    async tool returns a coroutine, as the function does).

    Attributes:
        name: The name the model calls the tool by.
        description: What the model is told the tool does.
        parameters: The JSON Schema of the arguments (read-only).
        risk: ``ToolRisk.SAFE`` or ``ToolRisk.DANGEROUS`` (dangerous calls wait for approval).
        read_only: True when the tool only reads (changes nothing outside the agent); in
            plan review mode only such tools run before a plan is approved.
        definition: The :class:`~arknb.domain.ToolDefinition` given to the model.
        takes_context: True when the function declares a ``ToolContext`` parameter.
        fn: The original function.
    """

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None,
                 description: str | None = None, risk: ToolRisk | str = ToolRisk.SAFE,
                 read_only: bool = False, idempotent: bool = False) -> None:
        """Wrap ``fn``; prefer the :func:`tool` decorator.

        Args:
            fn: A typed sync or async function.
            name: The tool name; defaults to the function's ``__name__``.
            description: Overrides the docstring's first paragraph.
            risk: ``"safe"`` (default) or ``"dangerous"``.
            read_only: the tool only reads (default False).
            idempotent: running the tool twice with the same ``ctx.idempotency_key`` has
                the effect of running it once, so a durable runtime may run it again after
                a crash instead of asking a person (DESIGN §13); after three attempts in a
                row that a crash cut short, a person is asked all the same.

        Raises:
            ArkError: ``config/invalid_argument`` if the function cannot be a tool.
        """
        if not callable(fn):
            raise invalid_argument(f"tool() expects a function, got {type(fn).__name__}")
        risk_value = _parse_risk(risk)
        _check_read_only(read_only)
        tool_name = name if name is not None else getattr(fn, "__name__", None)
        if not isinstance(tool_name, str) or not _NAME.match(tool_name):
            raise invalid_argument(
                f"invalid tool name {tool_name!r}: use 1-64 letters, digits, '_', '.' or '-' "
                f"(pass name=... to @tool)")
        if description is not None and not isinstance(description, str):
            raise invalid_argument(f"tool description must be a str, got {type(description).__name__}")
        if not isinstance(idempotent, bool):
            raise invalid_argument(f"idempotent must be a bool, got {idempotent!r}")
        if inspect.isasyncgenfunction(fn) or inspect.isgeneratorfunction(fn):
            raise invalid_argument(f"tool {tool_name!r} is a generator; a tool must return a value")

        doc = parse_docstring(inspect.getdoc(fn))
        spec = build_argument_spec(fn, tool_name, doc.params)

        # Copy __name__/__doc__/__wrapped__ first so help() and inspect.signature()
        # show the function, and so nothing copied from fn.__dict__ can shadow ours.
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._name = tool_name
        self._description = doc.description if description is None else description
        self._risk = risk_value
        self._read_only = read_only
        self._idempotent = idempotent
        self._validator = spec.model.__pydantic_validator__
        self._renamed = spec.renamed
        self._context_param = spec.context_param
        self._positional_only = spec.positional_only
        self._is_async = inspect.iscoroutinefunction(fn) or \
            inspect.iscoroutinefunction(getattr(fn, "__call__", None))
        self._definition = ToolDefinition(name=tool_name, description=self._description,
                                          parameters=spec.schema, risk=risk_value, read_only=read_only)
        # One schema object shared by the tool and its definition.
        self._parameters = self._definition.parameters

    @property
    def name(self) -> str:
        """The name the model calls the tool by."""
        return self._name

    @property
    def description(self) -> str:
        """What the model is told the tool does."""
        return self._description

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON Schema of the model-facing arguments (read-only, shared with :attr:`definition`)."""
        return self._parameters

    @property
    def risk(self) -> ToolRisk:
        """The tool's risk level."""
        return self._risk

    @property
    def read_only(self) -> bool:
        """True when the tool only reads (it may run before a plan is approved)."""
        return self._read_only

    @property
    def idempotent(self) -> bool:
        """True if the tool declared that repeating a call with the same idempotency key is harmless."""
        return self._idempotent

    @property
    def definition(self) -> ToolDefinition:
        """The definition sent to the model (built once)."""
        return self._definition

    @property
    def takes_context(self) -> bool:
        """True when the function declares a ``ToolContext`` parameter."""
        return self._context_param is not None

    @property
    def source(self) -> str | None:
        """Where calls go, for display (None for a Python function; ``"MCP server 'git'"``
        for a tool a :class:`~arknb.tools.source.ToolSource` offers). The loop never reads it."""
        return None

    @property
    def source_detail(self) -> dict[str, Any] | None:
        """JSON-ready facts about the source shown to a person deciding a call (the server,
        the tool's own name, its annotations), or None."""
        return None

    @property
    def fn(self) -> Callable[..., Any]:
        """The original function."""
        return self._fn

    @property
    def is_async(self) -> bool:
        """True for an ``async def`` tool (sync tools run in a worker thread)."""
        return self._is_async

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the original function unchanged (no validation, no conversion)."""
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        extra = (", read_only=True" if self._read_only else "") + (", idempotent=True" if self._idempotent else "")
        return f"Tool(name={self._name!r}, risk={self._risk.value!r}{extra})"

    async def invoke(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        """Validate ``arguments`` and run the tool, turning every outcome into a result.

        Args:
            arguments: The parsed arguments (a JSON object as a dict).
            ctx: The call's context; injected if the tool declares a ``ToolContext`` parameter.

        Returns:
            The tool's result: ``tool_arguments_invalid`` if validation fails (the
            message names the fields), ``tool_failed`` if the tool raised, the error's
            own code if it raised an ``ArkError``.

        Raises:
            asyncio.CancelledError: If the task is cancelled or ``ctx.cancel`` is
                cancelled; cancellation is never turned into a result.
        """
        try:
            validated = self._validator.validate_python(arguments)
        except ValidationError as exc:
            return self._invalid_arguments(exc)
        return await self._run(validated, ctx)

    async def invoke_json(self, arguments_json: str, ctx: ToolContext) -> ToolResult:
        """Like :meth:`invoke`, but parse and validate the model's JSON text in one pass.

        Empty or blank text means no arguments. Bad JSON and a non-object both give
        a ``tool_arguments_invalid`` result.

        Args:
            arguments_json: ``ToolCall.arguments_json``.
            ctx: The call's context.

        Returns:
            The tool's result (see :meth:`invoke`).

        Raises:
            asyncio.CancelledError: As for :meth:`invoke`.
        """
        if not arguments_json or arguments_json.isspace():
            arguments_json = "{}"
        try:
            validated = self._validator.validate_json(arguments_json)
        except ValidationError as exc:
            return self._invalid_arguments(exc)
        return await self._run(validated, ctx)

    async def _run(self, validated: Any, ctx: ToolContext) -> ToolResult:
        if ctx.cancel.cancelled:
            raise asyncio.CancelledError(ctx.cancel.reason)
        kwargs = self._kwargs(validated, ctx)
        args = [kwargs.pop(n) for n in self._positional_only] if self._positional_only else ()
        try:
            if self._is_async:
                value = await self._fn(*args, **kwargs)
            else:
                # Blocking tool code must never stall the kernel's event loop.
                value = await run_blocking(self._fn, *args, **kwargs)
        except Exception as exc:
            return failure_result(exc, ctx)
        return _to_result(value)

    def _kwargs(self, validated: Any, ctx: ToolContext) -> dict[str, Any]:
        kwargs = dict(validated.__dict__)
        for field_name, param_name in self._renamed:
            kwargs[param_name] = kwargs.pop(field_name)
        if self._context_param is not None:
            kwargs[self._context_param] = ctx
        return kwargs

    def _invalid_arguments(self, exc: ValidationError) -> ToolResult:
        problems = []
        for error in exc.errors(include_url=False):
            loc = ".".join(str(part) for part in error["loc"])
            kind = error["type"]
            if kind == "json_invalid" and "recursion limit" in error["msg"]:
                # pydantic-core's JSON parser stops at MAX_JSON_DEPTH, as ToolCall.arguments does
                problems.append(f"arguments are nested more than {MAX_JSON_DEPTH} levels deep")
            elif kind == "json_invalid":
                problems.append(f"arguments are not valid JSON ({error['msg']})")
            elif kind == "recursion_loop":
                problems.append(f"{loc or 'arguments'}: nested too deeply (or contains itself)")
            elif not loc and kind in ("model_type", "dict_type"):
                problems.append(f"arguments must be a JSON object, got {_json_type(error['input'])}")
            elif kind in ("missing", "extra_forbidden"):
                problems.append(f"{loc}: {error['msg']}")
            else:
                problems.append(f"{loc or 'arguments'}: {error['msg']} (got {_short_repr(error['input'])})")
        text = f"invalid arguments for tool {self._name!r}: " + "; ".join(problems)
        return ToolResult.from_text(text, is_error=True, error_code=ErrorCode.TOOL_ARGUMENTS_INVALID)


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(*, name: str | None = None, description: str | None = None,
         risk: ToolRisk | str = ToolRisk.SAFE, read_only: bool = False,
         idempotent: bool = False) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(fn: Callable[..., Any] | None = None, /, *, name: str | None = None,
         description: str | None = None, risk: ToolRisk | str = ToolRisk.SAFE,
         read_only: bool = False, idempotent: bool = False) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function (sync or async) into a :class:`Tool`.

    The JSON Schema comes from the signature (via pydantic), the description from the
    docstring's first paragraph, and parameter descriptions from its ``Args:``
    section. A parameter annotated ``ToolContext`` is injected at call time and left
    out of the schema.

    Args:
        fn: The function, when used as a bare ``@tool``.
        name: The tool name; defaults to the function name.
        description: Overrides the docstring.
        risk: ``"safe"`` (default) or ``"dangerous"`` (calls wait for approval).
        read_only: declare that the tool only reads and changes nothing outside the agent
            (``@tool(read_only=True)``); in plan review mode such tools run before a plan
            is approved, so the model can investigate first (DESIGN §14).
        idempotent: the tool dedups on ``ctx.idempotency_key`` (or has no side
            effects), so after a crash a durable runtime runs an interrupted call
            again instead of asking a person. Not for a tool that stages work, asks a
            person with ``ctx.defer`` and carries the work out when run again: run
            again after a crash, it would take that run for the person's approval.

    Returns:
        A :class:`Tool`, or a decorator producing one when called with options.

    Raises:
        ArkError: ``config/invalid_argument`` for an unannotated parameter,
            ``*args``/``**kwargs``, an unknown ``risk`` or an invalid name.

    Example:
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> add(1, 2), add.definition.description
        (3, 'Add two integers.')
    """
    if fn is not None:
        if isinstance(fn, Tool):
            return fn
        return Tool(fn, name=name, description=description, risk=risk, read_only=read_only, idempotent=idempotent)
    risk_value = _parse_risk(risk)  # fail at the decorator line, before the def
    _check_read_only(read_only)
    if not isinstance(idempotent, bool):
        raise invalid_argument(f"idempotent must be a bool, got {idempotent!r}")

    def decorate(inner: Callable[..., Any]) -> Tool:
        target = inner.fn if isinstance(inner, Tool) else inner
        return Tool(target, name=name, description=description, risk=risk_value, read_only=read_only,
                    idempotent=idempotent)

    return decorate


def _parse_risk(risk: ToolRisk | str) -> ToolRisk:
    try:
        return ToolRisk(risk)
    except ValueError:
        allowed = ", ".join(repr(r.value) for r in ToolRisk)
        raise invalid_argument(f"invalid tool risk {risk!r}: expected one of {allowed}") from None


def _check_read_only(read_only: Any) -> None:
    if not isinstance(read_only, bool):
        raise invalid_argument(f"read_only must be True or False, got {read_only!r}")


def failure_result(exc: Exception, ctx: ToolContext, prefix: str = "") -> ToolResult:
    """What a tool call that raised ``exc`` answers: an ``ArkError`` as its own error result,
    any other exception as ``tool_failed`` with its type and text only (DESIGN §6: no
    traceback, it may hold secrets), ``prefix`` before it; a cancelled call raises instead."""
    if ctx.cancel.cancelled:
        raise asyncio.CancelledError(ctx.cancel.reason) from exc
    if isinstance(exc, ArkError):
        return ToolResult.from_error(exc)
    message = str(exc)
    text = f"{prefix}{type(exc).__name__}" + (f": {message}" if message else "")
    return ToolResult.from_text(text, is_error=True, error_code=ErrorCode.TOOL_FAILED)


def _to_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return _text_result(value)
    if value is None or type(value) in (int, bool):
        return _text_result(json.dumps(value))
    # Unknown types (numpy scalars, DataFrames...) degrade to str rather than fail a
    # call whose side effects already happened.
    try:
        return _text_result(json.dumps(to_jsonable_python(value, fallback=str), ensure_ascii=False))
    except (ValueError, TypeError, RecursionError) as exc:  # too deep, a cycle, a key JSON cannot hold
        return ToolResult.from_text(
            f"the tool ran, but its return value ({type(value).__name__}) cannot be written as JSON: {exc}; "
            "return a string or a ToolResult instead", is_error=True, error_code=ErrorCode.TOOL_FAILED)


def _text_result(text: str) -> ToolResult:
    # Equal to ToolResult.from_text(text), about three times faster: validated
    # construction runs in pydantic-core while from_text's model_construct runs in Python.
    return ToolResult(contents=(ContentPart(text=text),))


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "null"
    return type(value).__name__


def _short_repr(value: Any) -> str:
    try:
        text = repr(value)
    except RecursionError:
        return "a value nested too deeply to show"
    return text if len(text) <= _MAX_INPUT_REPR else text[:_MAX_INPUT_REPR - 3] + "..."
