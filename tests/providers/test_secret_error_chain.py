"""A provider error carries nothing of the HTTP exchange (issue 10 item 5).

For each way a call can fail, the raised ``ArkError`` is walked: ``__cause__``,
``__context__``, its traceback's frames of arknb's own code (their locals), and
everything reachable from those. No httpx request, response or headers object may be
reachable, and no string or repr met on the way may hold the key. The objects that
hold the key by design (the client, its ``ApiKey``, the runtime) are not entered.
"""

from __future__ import annotations

import asyncio
import gc
import pathlib
import socket
import types

import httpx
import pytest

import arknb as ark
from arknb.domain import AgentMessage, ArkError, CancellationToken, ModelRequest
from arknb.providers.openai_compat import ApiKey, OpenAICompatibleClient, RetryPolicy, Timeouts, local
from arknb.runtime._redaction import Redactor
from arknb.state import SecretLint
from openai_sse_server import Reply, chunk, sse

KEY = "arknb-chain-key-7d1c9e0b4a2f6853"
ARKNB = pathlib.Path(ark.__file__).resolve().parent
_OPAQUE = (ApiKey, OpenAICompatibleClient, ark.AgentRuntime, SecretLint, Redactor, asyncio.Future,
           types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)
_HTTP = (httpx.Request, httpx.Response, httpx.Headers, httpx.AsyncClient)


def reachable(error: BaseException, limit: int = 20_000) -> list[object]:
    """Everything reachable from ``error`` the way a debugger, logger or pickler would go."""
    seen: set[int] = set()
    found: list[object] = []
    stack: list[object] = [error]
    while stack and len(found) < limit:
        obj = stack.pop()
        if obj is None or id(obj) in seen:
            continue
        seen.add(id(obj))
        found.append(obj)
        if isinstance(obj, _OPAQUE) or isinstance(obj, (str, bytes, int, float, bool)):
            continue
        if isinstance(obj, BaseException):
            stack += [obj.__cause__, obj.__context__, obj.__traceback__, *obj.args, *vars(obj).values()]
        elif isinstance(obj, types.TracebackType):
            stack += [obj.tb_frame, obj.tb_next]
        elif isinstance(obj, types.FrameType):
            # The frames we control: arknb's own code (a test's frames hold the key, of course).
            if pathlib.Path(obj.f_code.co_filename).resolve().is_relative_to(ARKNB):
                stack += list(obj.f_locals.values())
        elif isinstance(obj, dict):
            stack += [*obj.keys(), *obj.values()]
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack += list(obj)
        else:
            stack += [o for o in gc.get_referents(obj) if not isinstance(o, types.FrameType) or
                      pathlib.Path(o.f_code.co_filename).resolve().is_relative_to(ARKNB)]
    return found


def assert_detached(error: BaseException) -> None:
    objects = reachable(error)
    http = [type(o).__name__ for o in objects if isinstance(o, _HTTP)]
    assert not http, f"the error reaches HTTP objects: {http}"
    assert error.__cause__ is None and error.__context__ is None
    for obj in objects:
        if isinstance(obj, (str, bytes)):
            assert (KEY if isinstance(obj, str) else KEY.encode()) not in obj
        else:
            try:
                text = repr(obj)
            except Exception:
                continue
            assert KEY not in text, f"the key is in the repr of a {type(obj).__name__}"


def req() -> ModelRequest:
    return ModelRequest(messages=(AgentMessage.user("hi"),))


def client_for(base_url: str, **options) -> OpenAICompatibleClient:
    options.setdefault("retry", RetryPolicy(max_retries=0))
    return OpenAICompatibleClient(local(base_url, think_tags=False), api_key=options.pop("api_key", KEY),
                                  model="m", **options)


async def fail(client: OpenAICompatibleClient, cancel: CancellationToken | None = None) -> ArkError:
    with pytest.raises(ArkError) as info:
        async with client:
            await client.generate(req(), cancel=cancel)
    return info.value


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_http_error_whose_body_echoes_the_key(server):
    server.script(Reply.json(401, {"error": {"message": f"invalid key Bearer {KEY}", "code": KEY}}))
    error = await fail(client_for(server.base_url))
    assert error.code == "provider_unauthorized" and "[redacted]" in error.message
    assert_detached(error)


async def test_connection_refused():
    error = await fail(client_for(f"http://127.0.0.1:{closed_port()}/v1"))
    assert error.code == "provider_connection_error"
    assert_detached(error)


async def test_first_output_timeout(server):
    server.script(Reply([b": keep-alive\n\n"], hang=True))
    error = await fail(client_for(server.base_url, timeout=Timeouts(first_output=0.3)))
    assert error.code == "provider_timeout"
    assert_detached(error)


async def test_error_object_in_the_middle_of_the_stream(server):
    server.script(Reply([sse(chunk("partial "), {"error": {"message": f"key {KEY} revoked", "type": "server_error"}},
                             done=False)]))
    error = await fail(client_for(server.base_url))
    assert error.code == "provider_stream_error" and KEY not in error.message
    assert_detached(error)


async def test_stream_cut_before_done(server):
    server.script(Reply([sse(chunk("partial"), done=False)]))
    error = await fail(client_for(server.base_url))
    assert error.code == "provider_stream_incomplete"
    assert_detached(error)


async def test_cancelled_while_waiting_for_the_response(server):
    server.script(Reply([sse(chunk("late"))], delay=5.0, hang=True))
    token = CancellationToken()
    asyncio.get_running_loop().call_later(0.3, token.cancel, "user pressed Stop")
    error = await fail(client_for(server.base_url), cancel=token)
    assert error.code == "cancelled"
    assert_detached(error)


async def test_a_failing_key_provider_chains_nothing(server):
    def provider() -> str:
        raise RuntimeError(f"vault answered {KEY}")
    error = await fail(client_for(server.base_url, api_key=provider))
    assert error.code == "api_key_provider_failed" and server.requests == []
    assert_detached(error)


async def test_the_error_a_run_returns_is_detached_too(server):
    server.script(Reply.json(403, {"error": {"message": f"forbidden for {KEY}"}}))
    async with client_for(server.base_url) as client:
        result = await ark.AgentRuntime(client).run("hi")
    assert result.stop_reason == "failed" and result.error.code == "provider_forbidden"
    assert_detached(result.error)
