"""The set of tools a runtime offers, and the code that runs a batch of calls."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Iterable, Iterator, Sequence

from arknb.domain import ArkError, CancellationToken, ErrorCode, ErrorLayer, ToolCall, ToolDefinition, ToolResult, ToolRisk
from arknb.domain import invalid_argument

from .context import ToolContext
from .decorator import Tool, tool
from .source import ToolSource

__all__ = ["ToolRegistry"]

_log = logging.getLogger(__name__)


class ToolRegistry:
    """Tools by name, and the executor for the calls a model makes.

    Execution never raises for anything a tool or the model did wrong: an unknown
    tool, bad JSON, a schema failure or a raising tool all become error
    :class:`~arknb.domain.ToolResult` values the model can read (DESIGN §6). Only
    ``asyncio.CancelledError`` escapes.

    Example:
        >>> from arknb.tools import ToolRegistry, tool
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> registry = ToolRegistry([add])
        >>> registry.names(), "add" in registry
        (('add',), True)
    """

    def __init__(self, tools: Iterable[Tool | ToolSource | Callable[..., Any]] = ()) -> None:
        """Create a registry.

        Args:
            tools: Tools, plain typed functions (wrapped with :func:`tool`) or tool sources
                (:class:`~arknb.tools.source.ToolSource`, e.g. ``ark.MCPServer``), whose
                tools join the registry when the source is listed (:meth:`refresh`).

        Raises:
            ArkError: ``config/invalid_argument`` for two tools with one name;
                ``config/tool_name_conflict`` when a source already listed offers a name
                that is taken.
        """
        self._tools: dict[str, Tool] = {}
        self._definitions: tuple[ToolDefinition, ...] | None = None
        self._sources: list[ToolSource] = []
        self._listed: dict[int, Sequence[Tool]] = {}  # id(source) -> the tools last taken from it
        self._borrowed: frozenset[int] = frozenset()  # ids of sources another registry closes (shared_copy)
        if isinstance(tools, ToolRegistry):
            self._sources = list(tools._sources)
            self._listed = dict(tools._listed)
        for item in tools:
            if isinstance(item, ToolSource):
                self.add_source(item)
            else:
                self.register(item)

    # -- sources ------------------------------------------------------------------------

    def add_source(self, source: ToolSource) -> None:
        """Add a tool source; its tools join at the next :meth:`refresh` (at once if it is connected)."""
        if any(s is source for s in self._sources):
            return
        self._sources.append(source)
        known = source.current_tools()
        if known:
            self._take(source, known)

    @property
    def sources(self) -> tuple[ToolSource, ...]:
        """The tool sources, in the order they were given."""
        return tuple(self._sources)

    async def refresh(self) -> bool:
        """Ask every source for its tools (connecting those not connected yet); True if any changed.

        Cheap when nothing changed: a source returns the same sequence and nothing is rebuilt.

        Raises:
            ArkError: a source cannot be reached (``tool_source_failed``), or offers a
                tool whose name is taken (``tool_name_conflict``).
        """
        changed = False
        for source in self._sources:
            listed = await source.tools()
            if self._listed.get(id(source)) is not listed:
                self._take(source, listed)
                changed = True
        return changed

    def shared_copy(self) -> ToolRegistry:
        """A copy using this registry's sources without owning them: closing the copy's
        sources leaves them open (a sub-agent cloned from its parent shares the parent's
        MCP connections; the parent closes them)."""
        copy = ToolRegistry(self)
        copy._borrowed = frozenset(map(id, self._sources)) | self._borrowed
        return copy

    async def aclose_sources(self) -> None:
        """Close every source this registry owns (each failure is logged; the others still close)."""
        for source in self._sources:
            if id(source) in self._borrowed:
                continue
            try:
                await source.aclose()
            except Exception:
                _log.exception("closing tool source %r failed", source)

    def _take(self, source: ToolSource, listed: Sequence[Tool]) -> None:
        previous = self._listed.get(id(source), ())
        for old in previous:
            if self._tools.get(old.name) is old:
                del self._tools[old.name]
        for item in listed:
            taken = self._tools.get(item.name)
            if taken is not None and taken is not item:
                for old in listed:  # leave the registry as it was before this listing
                    if self._tools.get(old.name) is old:
                        del self._tools[old.name]
                for old in previous:
                    self._tools.setdefault(old.name, old)
                owner = taken.source or "the runtime's tools= (a Python function)"
                raise ArkError(ErrorLayer.CONFIG, ErrorCode.TOOL_NAME_CONFLICT,
                               f"tool name conflict: {source.label} offers a tool named {item.name!r}, "
                               f"but {owner} already has one; pass prefix='...' to the server (or exclude=) "
                               "so the names differ")
            self._tools[item.name] = item
        self._listed[id(source)] = listed
        self._definitions = None

    def register(self, tool_or_function: Tool | Callable[..., Any], *, replace: bool = False) -> Tool:
        """Add a tool.

        Args:
            tool_or_function: A :class:`Tool`, or a typed function to wrap with :func:`tool`.
            replace: Replace a tool already registered under the same name (useful
                when a notebook cell defining the tool is run again).

        Returns:
            The registered :class:`Tool`.

        Raises:
            ArkError: ``config/invalid_argument`` if the name is taken and ``replace``
                is false, or if the function cannot be a tool.
        """
        if isinstance(tool_or_function, ToolSource):
            raise invalid_argument("register() takes a tool; add a tool source with add_source()")
        item = tool_or_function if isinstance(tool_or_function, Tool) else tool(tool_or_function)
        if not replace and item.name in self._tools:
            raise invalid_argument(
                f"a tool named {item.name!r} is already registered; pass replace=True to replace it")
        self._tools[item.name] = item
        self._definitions = None
        return item

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or ``None``."""
        return self._tools.get(name)

    def __contains__(self, item: object) -> bool:
        if isinstance(item, Tool):
            return self._tools.get(item.name) is item
        return item in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(tuple(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({list(self._tools)!r})"

    def names(self) -> tuple[str, ...]:
        """Tool names in registration order."""
        return tuple(self._tools)

    def definitions(self) -> tuple[ToolDefinition, ...]:
        """The definitions sent to the model, in registration order (cached until the next register)."""
        if self._definitions is None:
            self._definitions = tuple(t.definition for t in self._tools.values())
        return self._definitions

    def risk_of(self, name: str) -> ToolRisk | None:
        """The risk of the tool called ``name``, or ``None`` if there is no such tool."""
        found = self._tools.get(name)
        return None if found is None else found.risk

    def is_idempotent(self, name: str) -> bool:
        """True if the tool called ``name`` was declared ``@tool(idempotent=True)``."""
        found = self._tools.get(name)
        return found is not None and found.idempotent

    async def execute(self, call: ToolCall, ctx: ToolContext) -> ToolResult:
        """Run one call and return its result; never raises except ``asyncio.CancelledError``.

        Args:
            call: The model's call (arguments as JSON text).
            ctx: The call's context.

        Returns:
            The tool's result, or an error result: ``tool_not_found`` (the message
            lists the available tools), ``tool_arguments_invalid``, ``tool_failed``
            or the code of an ``ArkError`` the tool raised.

        Raises:
            asyncio.CancelledError: If the task or ``ctx.cancel`` is cancelled.
        """
        found = self._tools.get(call.name)
        if found is None:
            available = ", ".join(self._tools) or "none"
            return ToolResult.from_text(
                f"unknown tool {call.name!r}; available tools: {available}",
                is_error=True, error_code=ErrorCode.TOOL_NOT_FOUND)
        try:
            return await found.invoke_json(call.arguments_json, ctx)
        except Exception as exc:  # a bug of ours must still reach the model as a result
            _log.exception("tool %r failed outside the tool function", call.name)
            return ToolResult.from_text(f"{type(exc).__name__}: {exc}", is_error=True,
                                        error_code=ErrorCode.TOOL_FAILED)

    async def execute_batch(
        self,
        calls: Sequence[ToolCall],
        make_context: Callable[[ToolCall], ToolContext],
        on_result: Callable[[ToolCall, ToolResult], None] | None = None,
    ) -> list[ToolResult]:
        """Run the calls of one batch concurrently.

        Args:
            calls: The calls to run.
            make_context: Builds each call's context (called once per call, before
                any call starts).
            on_result: Observer called as each call finishes, in completion order;
                its exceptions are logged and ignored, never lose a result.

        Returns:
            One result per call, ordered by ``call.index`` then position in
            ``calls`` (never by completion order). When ``calls`` is already in
            index order, ``results[i]`` belongs to ``calls[i]``.

        Raises:
            asyncio.CancelledError: If the awaiting task is cancelled, or a
                context's cancellation token fires: every running call is then
                cancelled and awaited before this returns, so no task leaks.
        """
        if not calls:
            return []
        calls = tuple(calls)
        contexts = [make_context(call) for call in calls]
        results: list[ToolResult | None] = [None] * len(calls)

        async def run_one(position: int) -> None:
            call = calls[position]
            result = await self.execute(call, contexts[position])
            results[position] = result
            if on_result is not None:
                try:
                    on_result(call, result)
                except Exception:  # an observer can never change or block the batch
                    _log.exception("on_result observer failed for tool call %r", call.id)

        tasks: list[asyncio.Task[None]] = []

        def cancel_children() -> None:
            for task in tasks:
                task.cancel()

        removers: list[Callable[[], None]] = []
        try:
            async with asyncio.TaskGroup() as group:
                for position in range(len(calls)):
                    tasks.append(group.create_task(run_one(position)))
                for token in _distinct_tokens(contexts):
                    removers.append(token.on_cancel(cancel_children))
            cancelled = any(task.cancelled() for task in tasks)
        finally:
            # A token outlives the batch (one per run): leave no callback behind on it.
            for remove in removers:
                remove()
            tasks.clear()
        if cancelled:
            raise asyncio.CancelledError("tool batch cancelled by its cancellation token")
        order = sorted(range(len(calls)), key=lambda i: (calls[i].index, i))
        return [results[i] for i in order]  # type: ignore[misc]


def _distinct_tokens(contexts: Iterable[ToolContext]) -> list[CancellationToken]:
    seen: dict[int, CancellationToken] = {}
    for ctx in contexts:
        seen.setdefault(id(ctx.cancel), ctx.cancel)
    return list(seen.values())
