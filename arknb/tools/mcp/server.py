"""``ark.MCPServer``: an MCP server as a tool source (DESIGN §15).

``AgentRuntime(model, tools=[add, ark.MCPServer.stdio("mcp-server-time")])`` gives the
model the server's tools with their JSON Schemas verbatim. Each tool is one
:class:`~arknb.tools.source.SourceTool` in the runtime's registry: hooks, approvals, plan
mode, loop detection, durable operations and redaction treat its calls like any other.
"""

from __future__ import annotations

import asyncio
import fnmatch
import logging
from typing import Any, Iterable, Mapping, Sequence

import mcp_types as types
from mcp.shared.exceptions import MCPError

from arknb.domain import ArkError, ErrorCode, ToolResult, ToolRisk, invalid_argument

from ..context import ToolContext
from ..decorator import _NAME, Tool
from ..source import SourceTool, ToolSource
from ._connection import Connection, ConnectionSpec
from ._results import convert_result, error_result

__all__ = ["MCPServer", "IDEMPOTENCY_META_KEY"]

IDEMPOTENCY_META_KEY = "arknb/idempotency_key"
"""The ``_meta`` key under which a call carries its idempotency key (DESIGN §15)."""

_log = logging.getLogger(__name__)
_CANCEL_GRACE = 2.0  # seconds a cancelled call may take to tell the server
_ANNOTATIONS = (("readOnlyHint", "read_only_hint"), ("destructiveHint", "destructive_hint"),
                ("idempotentHint", "idempotent_hint"), ("openWorldHint", "open_world_hint"))


class MCPServer(ToolSource):
    """An MCP server whose tools the model may call; build it with :meth:`stdio` or :meth:`http`.

    It connects on first use (or ``await server.connect()``), lists its tools (again after
    the server announces ``tools/list_changed``, before the next model call), and closes
    with the runtime. A stdio server that died is started again on the next call.

    Annotations are untrusted hints and the overrides win: ``readOnlyHint`` makes a tool
    read-only and safe; otherwise a tool is dangerous (it waits for approval) unless its
    ``destructiveHint`` is false or ``risk=`` says otherwise; ``idempotentHint`` makes it
    idempotent (re-run after a crash with the same idempotency key, sent in the request's
    ``_meta`` as ``arknb/idempotency_key``).

    Example:
        >>> server = MCPServer.stdio("mcp-server-time", name="time")      # doctest: +SKIP
        >>> runtime = AgentRuntime(model, tools=[server])                 # doctest: +SKIP
    """

    def __init__(self, spec: ConnectionSpec, *, include: Iterable[str] | None = None,
                 exclude: Iterable[str] | None = None, prefix: str | None = None,
                 risk: Mapping[str, ToolRisk | str] | None = None, read_only: Mapping[str, bool] | None = None,
                 idempotent: Mapping[str, bool] | None = None, timeout: float | None = 60.0,
                 max_result_chars: int = 100_000, allow_sampling: bool = False) -> None:
        """Prefer :meth:`stdio` or :meth:`http`."""
        self.name = spec.label
        self._spec = spec
        self._include = _patterns("include", include)
        self._exclude = _patterns("exclude", exclude)
        if prefix is not None and (not isinstance(prefix, str) or not prefix):
            raise invalid_argument(f"prefix must be a non-empty string or None, got {prefix!r}")
        self._prefix = prefix
        self._risk = {k: _risk(k, v) for k, v in _mapping("risk", risk).items()}
        self._read_only = {k: _flag("read_only", k, v) for k, v in _mapping("read_only", read_only).items()}
        self._idempotent = {k: _flag("idempotent", k, v) for k, v in _mapping("idempotent", idempotent).items()}
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            raise invalid_argument(f"timeout must be seconds > 0 or None, got {timeout!r}")
        self._timeout = None if timeout is None else float(timeout)
        if isinstance(max_result_chars, bool) or not isinstance(max_result_chars, int) or max_result_chars < 1:
            raise invalid_argument(f"max_result_chars must be an int >= 1, got {max_result_chars!r}")
        self._max_chars = max_result_chars
        if not isinstance(allow_sampling, bool):
            raise invalid_argument(f"allow_sampling must be a bool, got {allow_sampling!r}")
        self.allow_sampling = allow_sampling
        spec.on_list_changed = self._mark_stale
        spec.on_sample = self._sample if allow_sampling else self._decline_sampling
        spec.on_elicit = self._on_elicit
        self._running: list[_Running] = []  # calls in flight (an elicitation asks through the latest)
        self._connection: Connection | None = None
        self._lock: asyncio.Lock | None = None
        self._tools: tuple[Tool, ...] = ()
        self._listed = False
        self._stale = False
        self.skipped: tuple[str, ...] = ()
        """Tools the server listed that could not be offered (an invalid name), with why."""

    # -- construction -----------------------------------------------------------------

    @classmethod
    def stdio(cls, command: str, args: Sequence[str] = (), *, env: Mapping[str, str] | None = None,
              cwd: str | None = None, name: str | None = None, connect_timeout: float = 30.0,
              **options: Any) -> MCPServer:
        """A server started as a subprocess speaking MCP over stdin/stdout.

        Args:
            command: the executable (``"mcp-server-time"``, ``sys.executable``, ...).
            args: its arguments.
            env: extra environment variables (secrets of the runtime: redacted, never saved).
            cwd: its working directory.
            name: how it is named in errors and cards (default: the command's base name).
            connect_timeout: seconds to start and answer ``initialize``.
            **options: ``include``, ``exclude``, ``prefix``, ``risk``, ``read_only``,
                ``idempotent``, ``timeout`` (per call), ``max_result_chars``, ``allow_sampling``.
        """
        if not isinstance(command, str) or not command:
            raise invalid_argument(f"MCPServer.stdio: command must be a non-empty string, got {command!r}")
        if isinstance(args, str):
            raise invalid_argument("MCPServer.stdio: args must be a list of strings, not one string")
        args = tuple(args)
        if not all(isinstance(a, str) for a in args):
            raise invalid_argument("MCPServer.stdio: every argument must be a string")
        label = name or command.replace("\\", "/").rsplit("/", 1)[-1]
        spec = ConnectionSpec(label=label, command=command, args=args, env=_strings("env", env), cwd=cwd,
                              connect_timeout=_seconds("connect_timeout", connect_timeout))
        return cls(spec, **options)

    @classmethod
    def http(cls, url: str, *, headers: Mapping[str, str] | None = None, name: str | None = None,
             connect_timeout: float = 30.0, **options: Any) -> MCPServer:
        """A server reached over Streamable HTTP at ``url``.

        Args:
            url: the MCP endpoint (``http://127.0.0.1:8000/mcp``).
            headers: HTTP headers sent with every request (secrets of the runtime).
            name: how it is named (default: the URL's host).
            connect_timeout, options: as for :meth:`stdio`.
        """
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise invalid_argument(f"MCPServer.http: url must start with http:// or https://, got {url!r}")
        label = name or url.split("://", 1)[1].split("/", 1)[0]
        spec = ConnectionSpec(label=label, url=url, headers=_strings("headers", headers),
                              connect_timeout=_seconds("connect_timeout", connect_timeout))
        return cls(spec, **options)

    # -- the ToolSource protocol --------------------------------------------------------

    @property
    def label(self) -> str:
        return f"MCP server {self.name!r}"

    def current_tools(self) -> Sequence[Tool]:
        return self._tools

    async def tools(self) -> Sequence[Tool]:
        if self._listed and not self._stale:
            return self._tools
        async with self._get_lock():
            if not self._listed or self._stale:
                connection = await self._connected()
                self._stale = False
                await self._list(connection)
        return self._tools

    async def connect(self) -> MCPServer:
        """Start the server and list its tools now (instead of on first use)."""
        await self.tools()
        return self

    async def aclose(self) -> None:
        """Stop the server (or close the HTTP session); it starts again when used."""
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

    def secret_values(self) -> Sequence[str]:
        values = [*(self._spec.env or {}).values(), *(self._spec.headers or {}).values()]
        return tuple(v for v in values if v)

    @property
    def connected(self) -> bool:
        """True while a session with the server is open."""
        return self._connection is not None and self._connection.alive

    @property
    def process_id(self) -> int | None:
        """The stdio server's process id while it runs (None for HTTP)."""
        connection = self._connection
        process = connection.process if connection is not None else None
        return None if process is None or process.returncode is not None else process.pid

    def __repr__(self) -> str:
        where = f"command={self._spec.command!r}" if self._spec.command is not None else f"url={self._spec.url!r}"
        # Never env= or headers= values: they are secrets.
        return f"MCPServer(name={self.name!r}, {where}, tools={[t.name for t in self._tools]!r})"

    # -- internals ------------------------------------------------------------------------

    def _get_lock(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    def _mark_stale(self) -> None:
        self._stale = True

    async def _connected(self) -> Connection:
        connection = self._connection
        if connection is not None and connection.alive:
            return connection
        if connection is not None:
            await connection.close()  # a dead server: start it again
        connection = Connection(self._spec)
        await connection.open()
        self._connection = connection
        return connection

    async def _list(self, connection: Connection) -> None:
        session = connection.session
        assert session is not None
        listed: list[types.Tool] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            try:
                page = await session.list_tools(params=params)
            except MCPError as exc:
                raise ArkError("transport", ErrorCode.TOOL_SOURCE_FAILED,
                               f"MCP server {self.name!r} failed to list its tools: {exc}") from None
            listed.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        names = {t.name for t in listed}
        prefixed = {self._public_name(n) for n in names}
        for option, overrides in (("risk", self._risk), ("read_only", self._read_only),
                                  ("idempotent", self._idempotent)):
            unknown = [k for k in overrides if k not in names and k not in prefixed]
            if unknown:
                raise invalid_argument(f"MCPServer {self.name!r}: {option}= names tools the server does not have: "
                                       f"{unknown}; its tools are {sorted(names)}")
        built: list[Tool] = []
        skipped: list[str] = []
        for remote in listed:
            if not self._wanted(remote.name):
                continue
            public = self._public_name(remote.name)
            if not _NAME.match(public):
                skipped.append(f"{remote.name!r}: not a valid tool name (1-64 letters, digits, '_', '.', '-')")
                continue
            try:
                built.append(self._entry(remote, public))
            except ArkError as exc:
                skipped.append(f"{remote.name!r}: {exc.message}")
        for why in skipped:
            _log.warning("MCP server %r: tool %s; it is not offered", self.name, why)
        self.skipped = tuple(skipped)
        self._tools = tuple(built)
        self._listed = True

    def _public_name(self, remote: str) -> str:
        return f"{self._prefix}_{remote}" if self._prefix else remote

    def _wanted(self, remote: str) -> bool:
        if self._include is not None and not any(fnmatch.fnmatchcase(remote, p) for p in self._include):
            return False
        return not (self._exclude and any(fnmatch.fnmatchcase(remote, p) for p in self._exclude))

    def _override(self, table: Mapping[str, Any], remote: str, public: str) -> Any:
        if public in table:
            return table[public]
        return table.get(remote)

    def _entry(self, remote: types.Tool, public: str) -> Tool:
        hints = remote.annotations
        given = {wire: getattr(hints, attr) for wire, attr in _ANNOTATIONS
                 if hints is not None and getattr(hints, attr) is not None}
        read_only = self._override(self._read_only, remote.name, public)
        if read_only is None:
            read_only = given.get("readOnlyHint") is True
        risk = self._override(self._risk, remote.name, public)
        if risk is None:
            # The spec's default for destructiveHint is true: only a read-only tool or one
            # that says destructiveHint=false runs without approval (DESIGN §15).
            risk = ToolRisk.SAFE if read_only or given.get("destructiveHint") is False else ToolRisk.DANGEROUS
        idempotent = self._override(self._idempotent, remote.name, public)
        if idempotent is None:
            idempotent = given.get("idempotentHint") is True
        overrides = {option: value for option, value in (
            ("risk", self._override(self._risk, remote.name, public)),
            ("read_only", self._override(self._read_only, remote.name, public)),
            ("idempotent", self._override(self._idempotent, remote.name, public))) if value is not None}
        detail = {"source": "mcp", "server": self.name, "tool": remote.name, "annotations": given,
                  "overrides": {k: (v.value if isinstance(v, ToolRisk) else v) for k, v in overrides.items()}}
        return SourceTool(public, self._caller(remote.name), description=remote.description or "",
                          parameters=remote.input_schema, risk=risk, read_only=read_only, idempotent=idempotent,
                          source=f"MCP server {self.name!r}", source_detail=detail)

    def _caller(self, remote: str) -> Any:
        async def call(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
            return await self._call(remote, arguments, ctx)

        return call

    async def _call(self, remote: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        connection = self._connection
        try:
            if connection is None or not connection.alive:  # first use, or a server that died: start it
                async with self._get_lock():
                    connection = await self._connected()
        except ArkError as exc:
            return error_result(self.name, remote, exc.message, exc.code)
        session = connection.session
        if session is None:
            return error_result(self.name, remote, "the server is not connected")

        async def progress(value: float, total: float | None, message: str | None) -> None:
            ctx.report_progress(value, total, message)

        meta = {IDEMPOTENCY_META_KEY: ctx.idempotency_key} if ctx.idempotency_key else None
        # The call runs in a task of its own that is cancelled exactly once: the SDK then sends
        # the server notifications/cancelled from a shielded write, which a second native
        # cancel of the run's task (the batch and the run both cancel) would cut short.
        # The time limit is kept here, not by the SDK's read timeout: it waits while a person
        # answers a question the server asked during the call (an elicitation).
        inner = asyncio.ensure_future(session.call_tool(remote, arguments, progress_callback=progress, meta=meta))
        running = _Running(ctx, remote)
        self._running.append(running)
        try:
            result = await self._within_time(inner, running)
        except _TimedOut:
            return error_result(self.name, remote, f"no answer within {self._timeout:g} s (timeout=); the "
                                "server was sent a cancellation", ErrorCode.TOOL_TIMEOUT.value)
        except asyncio.CancelledError:
            inner.cancel()
            try:
                await asyncio.wait({inner}, timeout=_CANCEL_GRACE)
            except asyncio.CancelledError:
                pass
            if inner.done() and not inner.cancelled():
                inner.exception()  # retrieved: the call is abandoned either way
            raise
        except MCPError as exc:
            if exc.error.code == types.REQUEST_TIMEOUT:
                return error_result(self.name, remote, f"no answer within {self._timeout:g} s (timeout=); the "
                                    "server was sent a cancellation", ErrorCode.TOOL_TIMEOUT.value)
            if exc.error.code == types.CONNECTION_CLOSED or not connection.alive:
                return await self._died(connection, remote)
            return error_result(self.name, remote, f"protocol error {exc.error.code}: {exc.error.message}")
        except Exception as exc:  # a malformed answer, a transport failure
            if not connection.alive:
                return await self._died(connection, remote)
            return error_result(self.name, remote, f"protocol error: {type(exc).__name__}: {exc}")
        finally:
            if running in self._running:
                self._running.remove(running)
        return convert_result(result, server=self.name, tool=remote, max_chars=self._max_chars)

    async def _within_time(self, inner: asyncio.Future, running: _Running) -> Any:
        if self._timeout is None:
            return await asyncio.shield(inner)
        loop = asyncio.get_running_loop()
        timer: list[asyncio.TimerHandle] = []

        def expire() -> None:
            if inner.done():
                return
            if running.asking:  # a person is answering the server: the clock starts again after
                timer[0] = loop.call_later(self._timeout, expire)
                return
            running.timed_out = True
            inner.cancel()  # the SDK sends notifications/cancelled (see _call)

        timer.append(loop.call_later(self._timeout, expire))
        try:
            return await asyncio.shield(inner)
        except asyncio.CancelledError:
            if running.timed_out and inner.cancelled():
                raise _TimedOut from None
            raise
        finally:
            timer[0].cancel()

    async def _died(self, connection: Connection, remote: str) -> ToolResult:
        await connection.wait_exit(2.0)
        if self._connection is connection:
            self._connection = None
        await connection.close()
        self._stale = True  # list again once it is started again
        return error_result(self.name, remote, f"the server stopped during the call ({connection.describe_death()}); "
                            "it is started again on the next call")

    async def _on_elicit(self, params: Any) -> Any:
        # The handshake era's elicitation is a server request during a call: the call that
        # is running (the latest, when several run at once) asks its person (DESIGN §15).
        if not self._running or getattr(params, "mode", "form") != "form":
            return types.ElicitResult(action="decline")
        running = self._running[-1]
        ctx, remote = running.ctx, running.remote
        schema = params.requested_schema
        if hasattr(schema, "model_dump"):
            schema = schema.model_dump(mode="json", by_alias=True, exclude_none=True)
        running.asking += 1
        try:
            answer = await ctx.elicit(params.message, dict(schema), {"server": self.name, "tool": remote})
        finally:
            running.asking -= 1
        action = answer.get("action", "cancel")
        return types.ElicitResult(action=action, content=answer.get("content") if action == "accept" else None)

    async def _sample(self, params: types.CreateMessageRequestParams) -> Any:
        # allow_sampling=True: the running call asks the runtime's model (DESIGN §15), text only.
        if not self._running or getattr(params, "tools", None):
            return await self._decline_sampling(params)
        running = self._running[-1]
        ctx, remote = running.ctx, running.remote
        messages = []
        for message in params.messages:
            blocks = message.content if isinstance(message.content, list) else [message.content]
            text = "".join(getattr(b, "text", "") or "" for b in blocks)
            messages.append((str(message.role), text))
        try:
            text = await ctx.sample(messages, system=params.system_prompt, max_tokens=params.max_tokens,
                                    detail={"server": self.name, "tool": remote})
        except ArkError as exc:
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"sampling failed: {exc.message}")
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=text),
                                         model="arknb-runtime-model", stop_reason="endTurn")

    async def _decline_sampling(self, params: types.CreateMessageRequestParams) -> Any:
        return types.ErrorData(code=types.INVALID_REQUEST,
                               message="sampling declined: this arknb runtime does not let MCP servers use its model "
                                       "(MCPServer(..., allow_sampling=True) to allow it)")


class _Running:
    """A call in flight: its context, the server's tool name, and whether a person is being asked."""

    __slots__ = ("ctx", "remote", "asking", "timed_out")

    def __init__(self, ctx: ToolContext, remote: str) -> None:
        self.ctx = ctx
        self.remote = remote
        self.asking = 0
        self.timed_out = False


class _TimedOut(Exception):
    """A call got no answer within the server's ``timeout``."""


def _patterns(option: str, value: Iterable[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = (value,)
    items = tuple(value)
    if not all(isinstance(v, str) and v for v in items):
        raise invalid_argument(f"{option}= must be tool names or globs (strings), got {items!r}")
    return items


def _mapping(option: str, value: Mapping[str, Any] | None) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise invalid_argument(f"{option}= must map tool names to values, got {type(value).__name__}")
    return dict(value)


def _risk(name: str, value: Any) -> ToolRisk:
    try:
        return ToolRisk(value)
    except ValueError:
        raise invalid_argument(f"risk[{name!r}] must be 'safe' or 'dangerous', got {value!r}") from None


def _flag(option: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise invalid_argument(f"{option}[{name!r}] must be True or False, got {value!r}")
    return value


def _strings(option: str, value: Mapping[str, str] | None) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise invalid_argument(f"{option}= must map strings to strings")
    return dict(value)


def _seconds(option: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise invalid_argument(f"{option} must be seconds > 0, got {value!r}")
    return float(value)
