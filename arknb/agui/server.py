"""The AG-UI server: an ASGI app that runs a notebook's agent for a web page (DESIGN §18).

``POST /`` takes a ``RunAgentInput`` and answers a stream of AG-UI events (server-sent
events encoded with the official ``ag_ui.encoder.EventEncoder``); ``GET /`` serves a
small chat page (no CDN) that talks to it. ``threadId`` is the session id: the app asks
``runtime_factory(thread_id)`` (sync or async) for the thread's runtime once and keeps
it, so a durable store makes threads survive a restart of the server. How runtime
events become AG-UI events is the table in :mod:`arknb.agui.events`; interrupts and
resume are :mod:`arknb.agui.interrupts`; client-declared tools are
:mod:`arknb.agui.client_tools`; checking an input against its thread and acting on it is
:mod:`arknb.agui._inputs`.

What a request does, in order: read the input (a malformed one is HTTP 422 naming the
problem); open the stream (``RUN_STARTED``; ``MESSAGES_SNAPSHOT`` on a thread with
history); check the request against the thread (a resume that names an unknown
interrupt, a resume with nothing pending, a new message while an interrupt is open, a
run already in progress: ``RUN_ERROR`` with the ``ArkError`` code, and nothing runs);
then decide the resume entries through the controller (each decision is saved before
the run continues), hand the client's tool results to their calls, or start the run on
the new messages; stream the run; end with exactly one ``RUN_FINISHED`` or
``RUN_ERROR``. A client that disconnects cancels the run.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import socket
from importlib import resources
from typing import Any, AsyncIterator, Awaitable, Callable

from ag_ui.core import (
    MessagesSnapshotEvent, PROTOCOL_VERSION, RunAgentInput, RunErrorEvent, RunStartedEvent,
)
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from arknb.domain import ArkError, ErrorCode, ErrorLayer
from arknb.runtime import AgentRuntime, RunHandle

from ._inputs import act, check, terminal
from .input_log import input_log
from .events import EventMapper, now_ms
from .messages import snapshot

__all__ = ["AguiApp", "AguiServer", "app", "serve"]

RuntimeFactory = Callable[[str], "AgentRuntime | Awaitable[AgentRuntime]"]


class AguiApp:
    """The ASGI app of :func:`app` (mount it anywhere an ASGI app goes)."""

    def __init__(self, runtime_factory: RuntimeFactory, *, page: bool = True,
                 cors_origins: tuple[str, ...] | list[str] = ()) -> None:
        if not callable(runtime_factory):
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                           f"runtime_factory must be a callable thread_id -> AgentRuntime, got "
                           f"{type(runtime_factory).__name__}")
        self._factory = runtime_factory
        self._threads: dict[str, AgentRuntime] = {}
        self._locks: dict[str, asyncio.Lock] = collections.defaultdict(asyncio.Lock)
        self._encoder = EventEncoder()
        routes = [Route("/", self._post, methods=["POST"])]
        if page:
            routes.append(Route("/", self._page, methods=["GET"]))
        middleware = []
        if cors_origins:  # a page served from another origin (a front-end dev server) may call it
            from starlette.middleware import Middleware
            from starlette.middleware.cors import CORSMiddleware

            middleware.append(Middleware(CORSMiddleware, allow_origins=list(cors_origins),
                                         allow_methods=["GET", "POST"], allow_headers=["content-type", "accept"]))
        self._asgi = Starlette(routes=routes, middleware=middleware)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self._asgi(scope, receive, send)

    @property
    def threads(self) -> dict[str, AgentRuntime]:
        """The threads this app has served, by id (a copy)."""
        return dict(self._threads)

    # -- HTTP ----------------------------------------------------------------------

    async def _page(self, request: Request) -> Response:
        page = resources.files("arknb.agui").joinpath("static/chat.html").read_text(encoding="utf-8")
        return HTMLResponse(page)

    async def _post(self, request: Request) -> Response:
        body = await request.body()
        try:
            run_input = RunAgentInput.model_validate_json(body)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}"
                                 for e in exc.errors(include_url=False)[:8])
            return JSONResponse({"error": {"code": ErrorCode.AGUI_INPUT_INVALID.value,
                                           "message": f"not a RunAgentInput: {problems}"}}, status_code=422)
        return _EventStream(self._stream(run_input))

    # -- one run ---------------------------------------------------------------------

    async def _stream(self, run_input: RunAgentInput) -> AsyncIterator[str]:
        encode = self._encoder.encode
        thread_id, run_id = run_input.thread_id, run_input.run_id
        yield encode(RunStartedEvent(thread_id=thread_id, run_id=run_id, protocol_version=PROTOCOL_VERSION,
                                     timestamp=now_ms()))
        events: _Inbox | None = None
        handle: RunHandle | None = None
        try:
            try:
                runtime = await self._runtime(thread_id)
                await runtime.load()
                if runtime.history:
                    yield encode(MessagesSnapshotEvent(messages=snapshot(runtime.history), timestamp=now_ms()))
                async with self._locks[thread_id]:
                    # The ids of the user messages the thread ran are in its saved state: a
                    # retried input is not run twice, also after a restart.
                    plan = check(runtime, run_input, input_log(runtime).ids())
                    events = _Inbox(runtime)
                    handle = await act(runtime, plan)
                mapper = EventMapper(run_id)
                if handle is not None:
                    # What the run published since the last write goes out in one write (a turn's
                    # chunks often come in one burst), adjacent fragments of one message joined;
                    # nothing ever waits for more to arrive.
                    async for batch in events.until(handle, paused=lambda: _asking(runtime)):
                        frames = [encode(out) for out in mapper.translate_all(batch)]
                        if frames:
                            yield "".join(frames)
                last = "".join(encode(out) for out in mapper.close()) + encode(terminal(runtime, run_input, handle))
            except ArkError as exc:  # a refusal (nothing ran), or a decision the runtime refused
                last = encode(RunErrorEvent(message=exc.message, code=exc.code, timestamp=now_ms()))
            except Exception as exc:  # a bug, or a factory that raised: still one RUN_ERROR, naming it
                if handle is not None and not handle.done:
                    handle.cancel()
                last = encode(RunErrorEvent(message=f"{type(exc).__name__}: {exc}",
                                            code=ErrorCode.INTERNAL_ERROR.value, timestamp=now_ms()))
            yield last
        except BaseException:
            # The client went away (or the server stops): the run ends with it.
            if handle is not None and not handle.done:
                handle.cancel()
            raise
        finally:
            if events is not None:
                events.close()

    async def _runtime(self, thread_id: str) -> AgentRuntime:
        known = self._threads.get(thread_id)
        if known is not None and known.detached is None:
            return known
        async with self._locks[thread_id]:
            known = self._threads.get(thread_id)
            if known is not None and known.detached is None:
                return known
            made = self._factory(thread_id)
            if inspect.isawaitable(made):
                made = await made
            if not isinstance(made, AgentRuntime):
                raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT, f"runtime_factory({thread_id!r}) "
                               f"returned {type(made).__name__}, not an AgentRuntime")
            if made.session_id != thread_id:
                raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT, f"runtime_factory({thread_id!r}) "
                               f"returned the runtime of session {made.session_id!r}; build it with "
                               "session_id=thread_id (the thread is the session)")
            input_log(made)  # before the thread's first input (see input_log.py)
            self._threads[thread_id] = made
            return made


def _asking(runtime: AgentRuntime) -> bool:
    """Whether ``runtime``'s run waits, mid-call, for a person to answer a tool server's question
    (the stream then ends with it as an interrupt; a resume answers it and streams the rest)."""
    listing = getattr(runtime.controller, "list_elicitations", None)
    return bool(listing()) if callable(listing) else False


class _Inbox:
    """A runtime's events, buffered from the moment it is made (before any decision)."""

    def __init__(self, runtime: AgentRuntime) -> None:
        self._buffer: collections.deque = collections.deque()
        self._waiter: asyncio.Future | None = None
        self._unsubscribe = runtime.bus.subscribe("*", self._put)

    def _put(self, event: Any) -> None:
        self._buffer.append(event)
        self._wake()

    def _wake(self, *_: Any) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def until(self, handle: RunHandle, paused: Callable[[], bool] = lambda: False) -> AsyncIterator[list[Any]]:
        """Every event until ``handle``'s run ends (events it published before ending included),
        or until ``paused()`` says it waits for a person while still running, in batches:
        whatever arrived since the last batch."""
        task = handle.task
        task.add_done_callback(self._wake)
        loop = asyncio.get_running_loop()
        while True:
            if self._buffer:
                batch = list(self._buffer)
                self._buffer.clear()
                yield batch
                continue
            if task.done() or paused():
                return
            self._waiter = loop.create_future()
            await self._waiter

    def close(self) -> None:
        self._unsubscribe()


class _EventStream(Response):
    """An SSE response that also watches for the client going away, and cancels the stream then."""

    media_type = "text/event-stream"

    def __init__(self, chunks: AsyncIterator[str]) -> None:
        self._chunks = chunks
        self.status_code = 200
        self.background = None
        self.init_headers({"cache-control": "no-cache", "x-accel-buffering": "no"})

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        streaming = asyncio.ensure_future(self._send_all(send))
        watching = asyncio.ensure_future(_disconnect(receive))
        try:
            await asyncio.wait({streaming, watching}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (streaming, watching):
                task.cancel()
            await asyncio.wait({streaming, watching})
        if not streaming.cancelled() and streaming.exception() is not None:
            raise streaming.exception()

    async def _send_all(self, send: Any) -> None:
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            async for chunk in self._chunks:
                await send({"type": "http.response.body", "body": chunk.encode("utf-8"), "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await self._chunks.aclose()


async def _disconnect(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def app(runtime_factory: RuntimeFactory, *, page: bool = True,
        cors_origins: tuple[str, ...] | list[str] = ()) -> AguiApp:
    """An ASGI app serving ``runtime_factory``'s agents over AG-UI 1.0 (DESIGN §18).

    Args:
        runtime_factory: ``thread_id -> AgentRuntime`` (sync or async), called once per
            thread; build the runtime with ``session_id=thread_id`` (and a durable store
            for threads that survive a restart).
        page: also serve the small chat page at ``GET /``.
        cors_origins: origins of pages elsewhere allowed to call it (e.g.
            ``["http://localhost:3000"]``); none by default (same origin only).

    Example:
        >>> asgi = ark.agui.app(lambda thread: ark.AgentRuntime(model, session_id=thread))  # doctest: +SKIP
    """
    return AguiApp(runtime_factory, page=page, cors_origins=cors_origins)


class AguiServer:
    """A running server (what :func:`serve` returns): ``url``, ``port``, ``app``, ``aclose()``."""

    def __init__(self, asgi: AguiApp, server: Any, task: asyncio.Task, sock: socket.socket) -> None:
        self.app = asgi
        self._server = server
        self._task = task
        self._socket = sock
        host, port = sock.getsockname()[:2]
        self.host, self.port = host, port
        self.url = f"http://{host}:{port}/"

    async def aclose(self) -> None:
        """Stop serving (open streams are closed, their runs cancelled) and free the port."""
        self._server.should_exit = True
        self._server.force_exit = True
        try:
            await self._task
        finally:
            self._socket.close()

    def __repr__(self) -> str:
        return f"AguiServer(url={self.url!r}, running={not self._task.done()})"

    def _repr_html_(self) -> str:
        return f'AG-UI server at <a href="{self.url}" target="_blank">{self.url}</a>'


async def serve(runtime_factory: RuntimeFactory | AguiApp, *, host: str = "127.0.0.1", port: int = 0,
                page: bool = True, cors_origins: tuple[str, ...] | list[str] = ()) -> AguiServer:
    """Serve the agents on the running loop (a notebook's kernel loop) and return at once.

    Args:
        runtime_factory: as for :func:`app` (or an app made by it).
        host: the address to listen on (loopback by default).
        port: the port (0: a free one; see ``server.port``).
        page: also serve the chat page at ``GET /``.
        cors_origins: as for :func:`app`.

    Returns:
        An :class:`AguiServer`; ``await server.aclose()`` stops it.
    """
    import uvicorn

    asgi = (runtime_factory if isinstance(runtime_factory, AguiApp)
            else app(runtime_factory, page=page, cors_origins=cors_origins))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)  # connections wait in the backlog until uvicorn accepts them: ready now
    except OSError as exc:
        sock.close()
        raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                       f"cannot listen on {host}:{port} ({exc.strerror or exc}); pick another port") from None
    config = uvicorn.Config(asgi, lifespan="off", log_level="warning", access_log=False)
    server = _QuietServer(config)
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]), name=f"arknb-agui-{port}")
    return AguiServer(asgi, server, task, sock)


def _quiet_server_class() -> type:
    import contextlib

    import uvicorn

    class QuietServer(uvicorn.Server):
        """A uvicorn server that leaves the process's signal handlers alone (the kernel's own)."""

        @contextlib.contextmanager
        def capture_signals(self):  # type: ignore[override]
            yield

    return QuietServer


def _QuietServer(config: Any) -> Any:  # noqa: N802 (a class made on first use: uvicorn loads lazily)
    return _quiet_server_class()(config)

