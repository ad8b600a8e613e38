"""One live connection to an MCP server: the session, held open by a task of its own.

The SDK's transports and ``ClientSession`` are anyio context managers: they must be entered
and left in one task. So a connection runs an *owner* task that enters them, initialises,
reports ready and waits to be told to close; calls are made from the run's own tasks
through the session (the SDK's dispatcher correlates them). A stdio server's process is
recorded when it is spawned, so a failure can name its exit code and the last lines of its
stderr, a dead server is noticed before the next call, and the process can be ended when
the interpreter exits.

Protocol era: the handshake era (``initialize``, protocol 2025-11-25): elicitation is a
server request, tool-list changes are ``notifications/tools/list_changed`` and a cancelled
call sends ``notifications/cancelled`` (the SDK's courtesy cancel, on stdio and HTTP alike).
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import os
import signal
import tempfile
import weakref
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import mcp.client.stdio as _stdio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from arknb.domain import ArkError, ErrorCode, ErrorLayer

__all__ = ["Connection", "ConnectionSpec"]

_STDERR_TAIL_LINES = 12
_STDERR_TAIL_CHARS = 2000

# The process a stdio transport spawns, caught as it is spawned (the SDK does not expose it).
_spawned: contextvars.ContextVar[list | None] = contextvars.ContextVar("arknb_mcp_spawned", default=None)
_live_pids: set[int] = set()


def _install_spawn_capture() -> None:
    original = _stdio._create_platform_compatible_process
    if getattr(original, "__arknb_capture__", False):
        return

    async def capture(*args: Any, **kwargs: Any) -> Any:
        process = await original(*args, **kwargs)
        sink = _spawned.get()
        if sink is not None:
            sink.append(process)
        return process

    capture.__arknb_capture__ = True  # type: ignore[attr-defined]
    _stdio._create_platform_compatible_process = capture


_install_spawn_capture()


@atexit.register
def _end_servers_at_exit() -> None:
    # A server still running when the interpreter ends (a kernel shut down without aclose):
    # its stdin closes with us, and a server that ignores that is ended here (its own group).
    for pid in tuple(_live_pids):
        try:
            os.killpg(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError, OSError):
            pass


ElicitFn = Callable[[types.ElicitRequestParams], Awaitable[types.ElicitResult | types.ErrorData]]
SampleFn = Callable[[types.CreateMessageRequestParams], Awaitable[Any]]


@dataclass(slots=True)
class ConnectionSpec:
    """How to reach the server (stdio command or HTTP URL) and what to do on its requests."""

    label: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] | None = field(default=None, repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = field(default=None, repr=False)
    connect_timeout: float = 30.0
    on_list_changed: Callable[[], None] | None = None
    on_elicit: ElicitFn | None = None
    on_sample: SampleFn | None = None


class Connection:
    """An open session with one server; :meth:`open` starts it, :meth:`close` ends it."""

    def __init__(self, spec: ConnectionSpec) -> None:
        self.spec = spec
        self.session: ClientSession | None = None
        self.process: Any = None
        self._owner: asyncio.Task | None = None
        self._stop: asyncio.Event | None = None
        self._errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") \
            if spec.command is not None else None
        self._failure: BaseException | None = None
        self._finalizer = weakref.finalize(self, _close_file, self._errlog)

    @property
    def alive(self) -> bool:
        """True while the session is open and (for stdio) its process runs."""
        if self.session is None or self._owner is None or self._owner.done():
            return False
        return self.process is None or self.process.returncode is None

    async def open(self) -> ClientSession:
        """Start the transport and initialise within the connect timeout.

        Raises:
            ArkError: ``tool_source_failed`` naming the command or URL and, for a process
                that exited, its exit code and the last lines of its stderr.
        """
        loop = asyncio.get_running_loop()
        ready: asyncio.Future = loop.create_future()
        self._stop = asyncio.Event()
        self._owner = loop.create_task(self._own(ready, self._stop), name=f"arknb-mcp {self.spec.label}")
        try:
            self.session = await asyncio.wait_for(asyncio.shield(ready), self.spec.connect_timeout)
        except asyncio.TimeoutError:
            await self.close()
            raise self._error(f"did not answer initialize within {self.spec.connect_timeout:g} s "
                              "(connect_timeout=)") from None
        except asyncio.CancelledError:
            await self.close()
            raise
        except Exception as exc:
            await self.close()
            raise self._error(f"could not start: {_describe(exc)}") from None
        return self.session

    async def close(self) -> None:
        """End the session and the server process (idempotent)."""
        owner, self._owner = self._owner, None
        self.session = None
        if owner is None:
            return
        if self._stop is not None:
            self._stop.set()
        if not owner.done():
            try:
                await asyncio.wait_for(asyncio.shield(owner), 8.0)
            except (asyncio.TimeoutError, Exception):
                owner.cancel()
        if not owner.done():
            try:
                await owner
            except BaseException:
                pass
        self._forget_process()

    async def wait_exit(self, seconds: float) -> None:
        """Give a stdio server that is exiting up to ``seconds`` to report its exit code."""
        process = self.process
        if process is not None and process.returncode is None:
            try:
                await asyncio.wait_for(asyncio.shield(process.wait()), seconds)
            except (asyncio.TimeoutError, Exception):
                pass

    def exit_code(self) -> int | None:
        """The stdio server's exit code, or None while it runs (or for HTTP)."""
        return None if self.process is None else self.process.returncode

    def stderr_tail(self) -> str:
        """The last lines the stdio server wrote to stderr ('' for none)."""
        log = self._errlog
        if log is None or log.closed:
            return ""
        try:
            log.flush()
            size = log.seek(0, os.SEEK_END)
            log.seek(max(0, size - 8 * _STDERR_TAIL_CHARS))
            text = log.read()
        except (OSError, ValueError):
            return ""
        lines = [line for line in text.splitlines() if line.strip()][-_STDERR_TAIL_LINES:]
        return "\n".join(lines)[-_STDERR_TAIL_CHARS:]

    def describe_death(self) -> str:
        """Why the server is gone: exit code and stderr tail (for error results)."""
        code = self.exit_code()
        parts = [f"exit code {code}" if code is not None else "connection closed"]
        tail = self.stderr_tail()
        if tail:
            parts.append(f"last stderr lines:\n{tail}")
        return "; ".join(parts)

    def _error(self, what: str) -> ArkError:
        where = (f"command {' '.join([self.spec.command or '', *self.spec.args]).strip()!r}"
                 if self.spec.command is not None else f"URL {self.spec.url!r}")
        details = [f"MCP server {self.spec.label!r} ({where}) {what}"]
        code = self.exit_code()
        if code is not None:
            details.append(f"exit code {code}")
        tail = self.stderr_tail()
        if tail:
            details.append(f"last stderr lines:\n{tail}")
        details.append("check the command, its arguments and environment (or the URL), or raise connect_timeout=")
        return ArkError(ErrorLayer.TRANSPORT, ErrorCode.TOOL_SOURCE_FAILED, "; ".join(details))

    async def _own(self, ready: asyncio.Future, stop: asyncio.Event) -> None:
        spawned: list = []
        token = _spawned.set(spawned)
        try:
            async with self._transport() as streams:
                if spawned:
                    self.process = spawned[0]
                    _live_pids.add(self.process.pid)
                read, write = streams[0], streams[1]
                async with ClientSession(read, write, **self._callbacks()) as session:
                    await session.initialize()
                    if not ready.done():
                        ready.set_result(session)
                    await stop.wait()
        except BaseException as exc:
            if spawned and self.process is None:
                self.process = spawned[0]
            if self.process is not None:
                # Give a process that is exiting a moment to report its code.
                try:
                    await asyncio.wait_for(asyncio.shield(self.process.wait()), 1.0)
                except BaseException:
                    pass
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else ConnectionError(repr(exc)))
            if isinstance(exc, Exception):
                self._failure = exc
                return
            raise
        finally:
            _spawned.reset(token)
            self._forget_process()

    def _forget_process(self) -> None:
        if self.process is not None:
            _live_pids.discard(self.process.pid)

    def _transport(self) -> Any:
        spec = self.spec
        if spec.command is not None:
            params = StdioServerParameters(command=spec.command, args=list(spec.args), env=spec.env, cwd=spec.cwd)
            return stdio_client(params, errlog=self._errlog)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        client = httpx2.AsyncClient(headers=spec.headers or {}, timeout=httpx2.Timeout(30.0, read=300.0))
        return _HTTPTransport(client, spec.url or "")

    def _callbacks(self) -> dict[str, Any]:
        spec = self.spec
        callbacks: dict[str, Any] = {"message_handler": self._on_message}
        if spec.on_elicit is not None:
            on_elicit = spec.on_elicit

            async def elicit(context: Any, params: types.ElicitRequestParams) -> Any:
                return await on_elicit(params)

            callbacks["elicitation_callback"] = elicit
        if spec.on_sample is not None:
            on_sample = spec.on_sample

            async def sample(context: Any, params: types.CreateMessageRequestParams) -> Any:
                return await on_sample(params)

            callbacks["sampling_callback"] = sample
        return callbacks

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification) and self.spec.on_list_changed is not None:
            self.spec.on_list_changed()


class _HTTPTransport:
    """``streamable_http_client`` with an HTTP client the connection owns (headers set once)."""

    def __init__(self, client: Any, url: str) -> None:
        self._client = client
        self._url = url
        self._inner: Any = None

    async def __aenter__(self) -> Any:
        from mcp.client.streamable_http import streamable_http_client

        await self._client.__aenter__()
        self._inner = streamable_http_client(self._url, http_client=self._client)
        try:
            return await self._inner.__aenter__()
        except BaseException:
            await self._client.__aexit__(None, None, None)
            raise

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self._inner.__aexit__(*exc)
        finally:
            await self._client.__aexit__(None, None, None)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions]
        if inner:
            return _describe(inner[0])
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _close_file(handle: Any) -> None:
    if handle is not None:
        try:
            handle.close()
        except OSError:
            pass
