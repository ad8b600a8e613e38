"""A scripted OpenAI-compatible SSE server on 127.0.0.1, for provider tests.

Each request takes the next scripted :class:`Reply` and sends its byte chunks as
separate writes (with an optional delay between them). Every request is recorded
(:class:`Seen`), including whether the client dropped the connection.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable

import uvicorn

__all__ = ["Reply", "SSEServer", "Seen", "chunk", "sse"]


def chunk(content: str | None = None, *, reasoning: str | None = None, reasoning_field: str = "reasoning_content",
          tool_calls: list | None = None, finish: str | None = None, usage: dict | None = None,
          model: str = "test-model", choices: bool = True) -> dict:
    """One ``chat.completion.chunk`` object."""
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta[reasoning_field] = reasoning
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    out: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": model,
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if choices else []}
    if usage is not None:
        out["usage"] = usage
    return out


def sse(*objs: Any, done: bool = True, eol: str = "\n") -> bytes:
    """An SSE body: one ``data:`` event per object, then ``[DONE]``."""
    parts = [f"data: {json.dumps(o, ensure_ascii=False) if not isinstance(o, str) else o}{eol}{eol}" for o in objs]
    if done:
        parts.append(f"data: [DONE]{eol}{eol}")
    return "".join(parts).encode()


@dataclass
class Reply:
    """One scripted response."""

    chunks: Iterable[bytes] = ()
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    delay: float = 0.0
    hang: bool = False

    @classmethod
    def json(cls, status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
        return cls([json.dumps(payload).encode()], status=status,
                   headers={"content-type": "application/json", **(headers or {})})


@dataclass
class Seen:
    """A request the server received."""

    path: str
    headers: dict[str, str]
    raw: bytes
    disconnected: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)

    @property
    def body(self) -> Any:
        return json.loads(self.raw) if self.raw else None


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, ready: threading.Event) -> None:
        super().__init__(config)
        self._ready = ready

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets=sockets)
        self._ready.set()


class SSEServer:
    """Start with :meth:`start`, script with :meth:`script`, inspect :attr:`requests`."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Seen] = []
        self._lock = threading.Condition()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._ready = threading.Event()
        config = uvicorn.Config(self._app, lifespan="off", log_level="warning", http="h11", loop="asyncio",
                                interface="asgi3", proxy_headers=False,
                                access_log=False)
        self._server = _Server(config, self._ready)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name="sse-test-server", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> SSEServer:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the test SSE server did not start")
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)

    def reset(self) -> None:
        with self._lock:
            self.replies.clear()
            self.requests.clear()

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> bool:
        """Block until ``count`` requests arrived (use via ``asyncio.to_thread``)."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self.requests) >= count, timeout)

    def script(self, *replies: Reply | bytes) -> None:
        with self._lock:
            for reply in replies:
                self.replies.append(reply if isinstance(reply, Reply) else Reply([reply]))

    async def _app(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        raw = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            raw.extend(message.get("body", b""))
            if not message.get("more_body"):
                break
        seen = Seen(scope["path"], {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]},
                    bytes(raw))
        with self._lock:
            self.requests.append(seen)
            self._lock.notify_all()
            reply = self.replies.popleft() if self.replies else Reply.json(
                500, {"error": {"message": "no scripted reply", "type": "test_error"}})

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            seen.disconnected.set()
        watcher = asyncio.create_task(watch())
        try:
            await send({"type": "http.response.start", "status": reply.status,
                        "headers": [(k.encode(), v.encode()) for k, v in reply.headers.items()]})
            for number, piece in enumerate(reply.chunks):
                if number and reply.delay:
                    await asyncio.sleep(reply.delay)
                if seen.disconnected.is_set():
                    return
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            if reply.hang:
                await watcher
                return
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            seen.finished.set()
        except OSError:
            seen.disconnected.set()
        finally:
            if not reply.hang:
                watcher.cancel()
