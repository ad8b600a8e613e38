"""Tool sources: tools that come from somewhere else than a Python function (DESIGN §15).

Seed 004's ToolManager serves "tool / MCP / skill / file / script" requests through one
pipeline. Here a source (an MCP server, say) only says where a call goes: every tool it
offers is a :class:`SourceTool`, one entry of the :class:`~arknb.tools.ToolRegistry` like a
``@tool`` function, so hooks, approvals, plan mode, loop detection, durable operations and
the widgets treat its calls like any other (STYLE §13).

A :class:`ToolSource` is passed in ``tools=[...]`` beside plain tools. The registry asks it
for its tools before each model call and before a batch runs (:meth:`ToolSource.tools`:
connect on first use, re-list after a change) and closes it with the runtime.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Awaitable, Callable, Mapping, Sequence

from arknb.domain import ArkError, ErrorCode, ToolDefinition, ToolResult, ToolRisk, invalid_argument
from arknb.domain.json_decode import JSONTooDeepError, decode_json

from .context import ToolContext
from .decorator import _NAME, Tool, failure_result

__all__ = ["SourceTool", "ToolSource"]

SourceCall = Callable[[dict[str, Any], ToolContext], Awaitable[ToolResult]]


class ToolSource:
    """Where a group of tools comes from (subclass it; an MCP server is one).

    Attributes:
        name: how the source is named to people (in errors, approval cards, events).
    """

    name: str = ""

    @property
    def label(self) -> str:
        """The source as people read it in errors and cards (``"MCP server 'git'"``)."""
        return self.name or type(self).__name__

    def current_tools(self) -> Sequence[Tool]:
        """The tools known now, without any I/O (empty before the source first connected)."""
        return ()

    async def tools(self) -> Sequence[Tool]:
        """The tools to offer now: connect on first use, list again after the source said its
        list changed. Return the same sequence object while nothing changed (the registry
        rebuilds its definitions only when it gets a new one).

        Raises:
            ArkError: the source cannot be reached (``tool_source_failed``).
        """
        return self.current_tools()

    async def aclose(self) -> None:
        """Let go of what the source holds (a process, a connection); it may be used again."""

    def secret_values(self) -> Sequence[str]:
        """Values given to the source that must never be saved or shown (tokens in env or headers)."""
        return ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class SourceTool(Tool):
    """A registry entry whose calls a :class:`ToolSource` answers.

    Its JSON Schema is the source's, verbatim (no re-typing through Python signatures); the
    arguments are parsed and checked to be a JSON object, and the source validates them.

    Example:
        >>> async def call(arguments, ctx):
        ...     return ToolResult.from_text(arguments["text"])
        >>> echo = SourceTool("echo", call, description="Echo text.",
        ...                   parameters={"type": "object", "properties": {"text": {"type": "string"}}})
        >>> echo.definition.parameters["properties"]["text"]["type"]
        'string'
    """

    def __init__(self, name: str, call: SourceCall, *, description: str = "",
                 parameters: Mapping[str, Any] | None = None, risk: ToolRisk | str = ToolRisk.SAFE,
                 read_only: bool = False, idempotent: bool = False, source: str | None = None,
                 source_detail: Mapping[str, Any] | None = None) -> None:
        """Build an entry.

        Args:
            name: the name the model calls it by.
            call: ``async (arguments: dict, ctx) -> ToolResult``; it may raise ``ArkError``
                (becomes an error result) and must let ``asyncio.CancelledError`` through.
            description: what the model is told.
            parameters: the JSON Schema of the arguments (an object schema).
            risk, read_only, idempotent: as for :func:`~arknb.tools.tool`.
            source: where calls go, for display.
            source_detail: JSON-ready facts shown to a person deciding a call.

        Raises:
            ArkError: ``invalid_argument`` for a bad name or schema.
        """
        if not isinstance(name, str) or not _NAME.match(name):
            raise invalid_argument(f"invalid tool name {name!r}: use 1-64 letters, digits, '_', '.' or '-'")
        if not callable(call):
            raise invalid_argument(f"SourceTool {name!r}: call must be an async function")
        schema = dict(parameters) if parameters is not None else {"type": "object", "properties": {}}
        if schema.get("type", "object") != "object":
            raise invalid_argument(f"SourceTool {name!r}: the argument schema must be an object schema")
        risk_value = ToolRisk(risk)
        self._fn = call
        self._name = name
        self._description = description or ""
        self._risk = risk_value
        self._read_only = bool(read_only)
        self._idempotent = bool(idempotent)
        self._context_param = None
        self._positional_only = ()
        self._renamed = ()
        self._is_async = True
        self._source = source
        self._source_detail = json.loads(json.dumps(source_detail)) if source_detail else None
        self._definition = ToolDefinition(name=name, description=self._description, parameters=schema,
                                          risk=risk_value, read_only=self._read_only)
        self._parameters = self._definition.parameters
        self.__name__ = name
        self.__doc__ = self._description

    @property
    def source(self) -> str | None:
        return self._source

    @property
    def source_detail(self) -> dict[str, Any] | None:
        return self._source_detail

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the source with keyword arguments (outside a run: a context of its own)."""
        if args:
            raise TypeError(f"{self._name}() takes keyword arguments only")
        return self._fn(dict(kwargs), ToolContext(session_id="", run_id=""))

    def __repr__(self) -> str:
        where = f", source={self._source!r}" if self._source else ""
        return f"SourceTool(name={self._name!r}, risk={self._risk.value!r}{where})"

    async def invoke(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        if not isinstance(arguments, Mapping):
            return self._not_an_object(arguments)
        return await self._run(dict(arguments), ctx)

    async def invoke_json(self, arguments_json: str, ctx: ToolContext) -> ToolResult:
        text = arguments_json.strip() if arguments_json else ""
        try:
            value = decode_json(text or "{}")
        except JSONTooDeepError:
            return ToolResult.from_text(f"invalid arguments for tool {self._name!r}: nested too deeply",
                                        is_error=True, error_code=ErrorCode.TOOL_ARGUMENTS_INVALID)
        except ValueError as exc:
            return ToolResult.from_text(f"invalid arguments for tool {self._name!r}: arguments are not valid JSON "
                                        f"({exc})", is_error=True, error_code=ErrorCode.TOOL_ARGUMENTS_INVALID)
        if not isinstance(value, dict):
            return self._not_an_object(value)
        return await self._run(value, ctx)

    async def _run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if ctx.cancel.cancelled:
            raise asyncio.CancelledError(ctx.cancel.reason)
        try:
            return await self._fn(arguments, ctx)
        except Exception as exc:
            where = f" ({self._source})" if self._source else ""
            return failure_result(exc, ctx, prefix=f"{self._name}{where} failed: ")

    def _not_an_object(self, value: Any) -> ToolResult:
        return ToolResult.from_text(f"invalid arguments for tool {self._name!r}: arguments must be a JSON object, "
                                    f"got {type(value).__name__}", is_error=True,
                                    error_code=ErrorCode.TOOL_ARGUMENTS_INVALID)
