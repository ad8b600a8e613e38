"""``OpenAICompatibleClient``: the streaming Chat Completions client over httpx (DESIGN §9).

One ``stream()`` call is one model call: ``model_start``, then deltas as they arrive,
``usage``, and exactly one ``model_complete`` with the whole response; or it raises
:class:`ArkError`. Failures before any output are retried per :class:`RetryPolicy`,
each retry announced by a ``retry`` event. Closing the generator (``aclose()``) or
firing the ``cancel`` token closes the HTTP response at once.

An error this client raises carries nothing of the HTTP exchange: no ``__cause__`` or
``__context__`` (httpx exceptions hold the request, and so its ``Authorization``
header), and a traceback whose frames of this module hold no request, response or
headers (each attempt runs in its own generator, whose frame is not in it).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from contextlib import aclosing
from typing import Any, AsyncIterator, Callable, Coroutine, Iterable, Mapping, TypeVar
from urllib.parse import urlsplit

import httpx
from pydantic import SecretStr

from ...domain import (
    AgentMessage, ArkError, CancellationToken, ErrorLayer, ModelComplete, ModelRequest, ModelResponse, ModelStart, Retryability,
    RetryNotice, StreamingEvent,
)
from ...domain.json_decode import MAX_JSON_DEPTH, JSONTooDeepError, decode_json
from .assembler import StreamAssembler
from .errors import error_from_envelope, error_from_status, retry_after_seconds
from .media import check_message
from .profiles import Capabilities, ProviderProfile, is_loopback_host
from .retry import RetryPolicy, Timeouts
from .secrets import ApiKey, ApiKeySource, SecretObserver, from_env
from .sse import DONE, iter_chunks
from .wire import build_body

__all__ = ["OpenAICompatibleClient"]

_log = logging.getLogger("arknb.providers.openai_compat")
_T = TypeVar("_T")
_USER_AGENT = "arknb/0.1 (OpenAI-compatible)"
_MAX_ERROR_BODY = 64 * 1024
_DRAIN_TIMEOUT = 2.0
_CREDENTIAL_HEADER_WORDS = ("key", "token", "secret", "auth", "password")


class _Guard:
    """Runs one awaitable at a time under a time limit and the cancel token.

    When the token fires during such an await, the current task is cancelled and the
    ``CancelledError`` is turned back into ``ArkError(cancelled)`` right there (like
    ``asyncio.timeout`` does), so no task or future is created per streamed event.
    """

    __slots__ = ("_token", "_task", "_waiting", "_fired")

    def __init__(self, token: CancellationToken | None) -> None:
        self._token = token
        self._task: asyncio.Task | None = None
        self._waiting = False
        self._fired = False
        if token is not None:
            token.on_cancel(self._on_cancel)

    def _on_cancel(self) -> None:
        if self._waiting and self._task is not None and not self._fired:
            self._fired = True
            self._task.cancel()

    def check(self) -> None:
        if self._token is not None and self._token.cancelled:
            raise self._token.error()

    async def run(self, awaitable: Coroutine[Any, Any, _T], limit: float | None) -> _T:
        if self._token is not None and self._token.cancelled:
            awaitable.close()
            raise self._token.error()
        self._task = asyncio.current_task()
        self._waiting = True
        try:
            if limit is None:
                return await awaitable
            async with asyncio.timeout(max(limit, 0.0)):
                return await awaitable
        except asyncio.CancelledError:
            if self._fired:
                self._fired = False
                self._task.uncancel()
                raise self._token.error() from None
            raise
        finally:
            self._waiting = False

    def release(self) -> None:
        self._task = None
        self._waiting = False


class _Failed(Exception):
    """An attempt failed with ``error``; ``retry_after`` is what the server asked for."""

    def __init__(self, error: ArkError, retry_after: float | None = None, should_retry: bool | None = None):
        super().__init__(error.message)
        self.error = error
        self.retry_after = retry_after
        self.should_retry = should_retry


class OpenAICompatibleClient:
    """An :class:`~arknb.providers.LLMClient` for any OpenAI-compatible ``/chat/completions``.

    Args:
        profile: the service (:func:`openai`, :func:`deepseek`, :func:`zhipu`, :func:`local`).
        api_key: a ``str``, ``SecretStr`` or (async) callable returning one, called
            before each request. ``None`` reads ``profile.api_key_env`` at request time.
        model: the default model name; a non-empty ``ModelConfig.model`` overrides it.
        http_client: an ``httpx.AsyncClient`` to use (you close it); by default the
            client creates its own and closes it in :meth:`aclose`.
        timeout: a :class:`Timeouts`, or a number of seconds for the total timeout.
        retry: a :class:`RetryPolicy` (``RetryPolicy(max_retries=0)`` disables retries).
        headers: extra headers for every request.

    Example:
        >>> import arknb.providers.openai_compat as oc
        >>> client = oc.OpenAICompatibleClient(oc.local(), model="qwen3:0.6b")
        >>> client
        OpenAICompatibleClient(provider='local', model='qwen3:0.6b', url='http://localhost:11434/v1/chat/completions')
    """

    def __init__(self, profile: ProviderProfile, *, api_key: ApiKeySource | None = None, model: str = "",
                 http_client: httpx.AsyncClient | None = None, timeout: Timeouts | float | None = None,
                 retry: RetryPolicy | None = None, headers: Mapping[str, str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not isinstance(profile, ProviderProfile):
            raise ArkError(ErrorLayer.CONFIG, "invalid_argument",
                           f"profile must be a ProviderProfile (e.g. openai_compat.deepseek()), "
                           f"got {type(profile).__name__}")
        if api_key is None and profile.api_key_env and profile.requires_api_key:
            import os
            if not os.environ.get(profile.api_key_env):
                raise ArkError(ErrorLayer.CONFIG, "api_key_missing",
                               f"no api_key given and {profile.api_key_env} is not set")
            api_key = from_env(profile.api_key_env)
        self._profile = profile
        self._key = ApiKey(api_key)
        self._model = model
        if isinstance(timeout, (int, float)):
            timeout = Timeouts(total=float(timeout))
        self._timeouts = timeout or Timeouts()
        self._retry = retry or RetryPolicy()
        self._headers = dict(headers or {})
        if any(k.lower() == "authorization" for k in self._headers):
            raise ArkError(ErrorLayer.CONFIG, "invalid_argument",
                           "pass the key as api_key=, not as an Authorization header")
        for name, value in {**profile.default_headers, **self._headers}.items():
            # e.g. Azure's "api-key": a credential like the key, hidden and reported like it.
            if any(word in name.lower() for word in _CREDENTIAL_HEADER_WORDS):
                self._key.hide(value)
        self._clock = clock
        self._owns_client = http_client is None
        if http_client is None:
            # A loopback server is never reached through a proxy from the environment.
            loopback = is_loopback_host(urlsplit(profile.chat_url).hostname)
            http_client = httpx.AsyncClient(follow_redirects=False, trust_env=not loopback)
        self._http = http_client
        t = self._timeouts
        # Reads are limited by first_output / idle below, not by httpx.
        self._http_timeout = httpx.Timeout(connect=t.connect, read=None, write=t.connect, pool=t.connect)

    @property
    def profile(self) -> ProviderProfile:
        """The service profile."""
        return self._profile

    @property
    def capabilities(self) -> Capabilities:
        """What the service can do (the profile's): ``AgentRuntime`` asks it how to request a
        typed answer (``json_schema_output``)."""
        return self._profile.capabilities

    @property
    def model(self) -> str:
        """The default model name."""
        return self._model

    def secret_values(self) -> tuple[SecretStr, ...]:
        """The API key(s) known so far as ``SecretStr``; never shown anywhere. A key from
        a callable is known only once resolved: use :meth:`observe_secrets` to learn it."""
        return self._key.known()

    async def resolve_secrets(self) -> None:
        """Resolve the key now if this client has not resolved one yet (its observers learn
        it), so nothing a run produces before its first request can hold an unknown key.
        The next request uses that key rather than asking a provider again.
        ``AgentRuntime`` calls it as each run starts.

        Raises:
            ArkError: ``api_key_missing`` or ``api_key_provider_failed`` (config), as a
                request would.
        """
        await self._key.prefetch()

    def check_input(self, messages: Iterable[AgentMessage]) -> None:
        """Refuse, before any request, a part of ``messages`` this profile cannot carry
        (an image for a text-only profile, a document where no file input is taken):
        ``ArkError(unsupported_content)`` naming the profiles that accept it.
        ``AgentRuntime`` asks before it starts a run, so a refused message is never
        appended to the session's history."""
        for message in messages:
            check_message(message, self._profile)

    def observe_secrets(self, observer: SecretObserver) -> Callable[[], None]:
        """Call ``observer(SecretStr(key))`` for each key known now (a static key, the
        environment variable's value) and for each new key a source hands out (a callable
        may rotate), before the request that uses it is sent. ``AgentRuntime`` registers
        one and redacts every key it learns. Returns a function that stops observing.

        A bound method is held weakly, so a runtime is not kept alive by its client.
        """
        return self._key.observe(observer)

    def __repr__(self) -> str:
        return (f"OpenAICompatibleClient(provider={self._profile.provider_id!r}, model={self._model!r}, "
                f"url={self._profile.chat_url!r})")

    async def aclose(self) -> None:
        """Close the HTTP client if this object created it."""
        if self._owns_client:
            await self._http.aclose()

    async def __aenter__(self) -> OpenAICompatibleClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def generate(self, request: ModelRequest, *, cancel: CancellationToken | None = None) -> ModelResponse:
        """The complete response (the call is still streamed, so timeouts and cancel apply)."""
        stream = self.stream(request, cancel=cancel)
        try:
            async for event in stream:
                if event.type == "model_complete":
                    return event.response
        finally:
            await stream.aclose()
        raise ArkError(ErrorLayer.PROVIDER, "provider_stream_incomplete", "the stream ended without a response")

    # -- the call --------------------------------------------------------------------------

    def _limit(self, phase: float | None, deadline: float | None) -> tuple[float | None, bool]:
        """(seconds, is_total) for the next await: the phase limit or what is left of the total."""
        if deadline is None:
            return phase, False
        remaining = deadline - self._clock()
        if phase is None or remaining <= phase:
            return remaining, True
        return phase, False

    def _timeout_error(self, what: str, is_total: bool) -> ArkError:
        limit = self._timeouts.idle if what == "event" else self._timeouts.first_output
        if is_total or limit is None:
            return ArkError(ErrorLayer.TRANSPORT, "provider_timeout",
                            f"{self._profile.provider_id}: total timeout of {self._timeouts.total:g}s exceeded",
                            Retryability.NEVER)
        return ArkError(ErrorLayer.TRANSPORT, "provider_timeout",
                        f"{self._profile.provider_id}: no {what} within {limit:g}s"
                        + (" (first-output timeout)" if what != "event" else " (idle timeout)"), Retryability.SAFE)

    async def _io(self, guard: _Guard, awaitable: Coroutine[Any, Any, _T], what: str, phase: float | None,
                  deadline: float | None) -> _T:
        limit, is_total = self._limit(phase, deadline)
        try:
            return await guard.run(awaitable, limit)
        except TimeoutError:
            error = self._timeout_error(what, is_total)
        except httpx.TimeoutException:
            error = self._timeout_error(what, False)
        except httpx.HTTPError as exc:
            # The exception text holds the URL at most, never headers; redact anyway.
            error = ArkError(ErrorLayer.TRANSPORT, "provider_connection_error",
                             f"{self._profile.provider_id}: {type(exc).__name__}: "
                             f"{self._key.redact(str(exc)) or 'connection failed'}", Retryability.SAFE)
        # Raised here, outside the handler: the httpx exception (it holds the request and
        # its headers) does not become this one's __context__.
        raise _Failed(error)

    async def _request(self, content: bytes) -> httpx.Request:
        headers = {"Accept": "text/event-stream", "Content-Type": "application/json",
                   "User-Agent": _USER_AGENT, **self._profile.default_headers, **self._headers}
        key = await self._key.get()
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        return self._http.build_request("POST", self._profile.chat_url, content=content, headers=headers,
                                        timeout=self._http_timeout)

    async def _status_failure(self, response: httpx.Response, guard: _Guard, deadline: float | None) -> _Failed:
        body = bytearray()

        async def read() -> None:
            async for piece in response.aiter_bytes():
                body.extend(piece)
                if len(body) >= _MAX_ERROR_BODY:
                    break
        try:
            await self._io(guard, read(), "error body", self._timeouts.idle, deadline)
        except _Failed:
            pass  # the status alone is enough to classify the failure
        error = error_from_status(response.status_code, bytes(body), provider=self._profile.provider_id,
                                  redact=self._key.redact)
        should = response.headers.get("x-should-retry")
        return _Failed(error, retry_after_seconds(response.headers),
                       None if should is None else should.lower() == "true")

    async def _read(self, response: httpx.Response, assembler: StreamAssembler, guard: _Guard,
                    first: float | None, deadline: float | None) -> AsyncIterator[StreamingEvent]:
        """The events of one HTTP response; raises ``_Failed`` for anything but a complete stream."""
        provider = self._profile.provider_id
        if response.status_code != 200:
            raise await self._status_failure(response, guard, deadline)
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if kind == "application/json":   # a server that ignored stream=true, or an error with 200
            raw = await self._io(guard, response.aread(), "output", _left(first, self._clock), deadline)
            for event in assembler.feed(_json_body(raw, provider, self._key.redact)):
                yield event
            return
        if kind != "text/event-stream":
            raise _Failed(ArkError(ErrorLayer.PROVIDER, "provider_bad_response",
                                   f"{provider} answered with content-type {kind or 'none'!r}, "
                                   "expected text/event-stream", status_code=response.status_code))
        idle = self._timeouts.idle
        chunks = iter_chunks(response)
        done = started = False
        try:
            while True:
                try:
                    chunk = await self._io(guard, chunks.__anext__(), "event" if started else "output",
                                           idle if started else _left(first, self._clock), deadline)
                except StopAsyncIteration:
                    break
                started = True
                if chunk is DONE:
                    done = True
                    break
                if not isinstance(chunk, dict):
                    continue
                if chunk.get("error"):
                    raise _Failed(error_from_envelope(chunk, provider=provider, redact=self._key.redact))
                for event in assembler.feed(chunk):
                    yield event
            if done:   # read the end of the body so the connection goes back to the pool
                try:
                    await self._io(guard, chunks.__anext__(), "end", _DRAIN_TIMEOUT, None)
                except (StopAsyncIteration, _Failed):
                    pass
        finally:
            await chunks.aclose()
        if not done:
            raise _Failed(ArkError(ErrorLayer.PROVIDER, "provider_stream_incomplete",
                                   f"{provider} closed the stream before [DONE]; the partial answer was discarded",
                                   Retryability.SAFE))
        for event in assembler.flush():
            yield event

    async def _attempt(self, content: bytes, model: str, attempt: int, assembler: StreamAssembler, guard: _Guard,
                       deadline: float | None) -> AsyncIterator[StreamingEvent]:
        """One HTTP request and its events. Its own generator, so the request and the
        response live in a frame that no error raised by :meth:`stream` keeps."""
        http_request = await self._request(content)
        _log.debug("POST %s model=%s attempt=%d", self._profile.chat_url, model, attempt)
        # The first-output limit runs from sending the request to the first event.
        first_output = self._timeouts.first_output
        first = None if first_output is None else self._clock() + first_output
        response = await self._io(guard, self._http.send(http_request, stream=True, follow_redirects=False),
                                  "output", _left(first, self._clock), deadline)
        try:
            async with aclosing(self._read(response, assembler, guard, first, deadline)) as events:
                async for event in events:
                    yield event
        finally:
            await response.aclose()

    async def stream(self, request: ModelRequest, *,
                     cancel: CancellationToken | None = None) -> AsyncIterator[StreamingEvent]:
        """Stream one model call; see the module docstring for the event order."""
        profile = self._profile
        # Config errors (unconsumed extension, missing model, unsupported content)
        # surface here, before any request is made.
        body = build_body(request, profile, request.config.model or self._model)
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        yield ModelStart.model_construct(model=body["model"])

        timeouts, policy = self._timeouts, self._retry
        deadline = None if timeouts.total is None else self._clock() + timeouts.total
        guard = _Guard(cancel)
        attempt = 0
        try:
            while True:
                guard.check()
                attempt += 1
                assembler = StreamAssembler(think_tags=profile.think_tags, provider=profile.provider_id)
                try:
                    async with aclosing(self._attempt(content, body["model"], attempt, assembler, guard,
                                                      deadline)) as events:
                        async for event in events:
                            yield event
                    result = assembler.finish()
                except ArkError as exc:
                    failure = _Failed(exc)
                except _Failed as exc:
                    failure = exc
                else:
                    yield ModelComplete.model_construct(response=result)
                    return
                error, retry_after, should_retry = _detached(failure.error), failure.retry_after, failure.should_retry
                failure = None  # its traceback holds the attempt's frames (request, response)
                # Text or reasoning already shown is never answered twice; a stream cut before
                # any was shown (tool-call deltas at most: no call completed, none ran) is
                # tried again like a connection that failed before output (DESIGN §17).
                if error.layer is ErrorLayer.CANCELLED or assembler.shown or should_retry is False:
                    raise error
                delay = policy.delay(attempt, error, retry_after)
                if delay is None and should_retry:
                    delay = policy.delay(attempt, ArkError(error.layer, error.code, error.message,
                                                           Retryability.SAFE), None)
                if delay is None and retry_after is not None and retry_after > policy.max_retry_after:
                    raise _asked_to_wait(error, retry_after, policy.max_retry_after, "RetryPolicy.max_retry_after")
                if delay is not None and retry_after is not None and deadline is not None \
                        and self._clock() + delay >= deadline:
                    raise _asked_to_wait(error, retry_after, deadline - self._clock(), "the time left of Timeouts.total")
                if delay is None or (deadline is not None and self._clock() + delay >= deadline):
                    raise error
                _log.info("%s: %s; retry %d in %.2fs", profile.provider_id, error.code, attempt, delay)
                reason = ("the stream was cut before any text was shown and before a tool call completed"
                          if assembler.output_started else "the call failed before any output")
                yield RetryNotice.model_construct(attempt=attempt, delay=delay, error=error.info(), reason=reason)
                await guard.run(policy.sleep(delay), None)
        finally:
            guard.release()


def _asked_to_wait(error: ArkError, wait: float, limit: float, what: str) -> ArkError:
    """``error`` saying how long the server asked to wait, when that is over a limit (``what``)."""
    return ArkError(error.layer, error.code, f"{error.message} (the server asked to wait {wait:g}s before "
                    f"retrying, longer than {what}={max(limit, 0.0):g}s: run again after that wait, "
                    "or allow a longer wait)", error.retryability, status_code=error.status_code,
                    provider_code=error.provider_code)


def _detached(error: ArkError) -> ArkError:
    """``error`` without a traceback or chained exceptions: what it was raised through
    (the attempt's frames, an httpx exception) holds the request and its headers."""
    error.__cause__ = None
    error.__context__ = None
    return error.with_traceback(None)


def _left(until: float | None, clock: Callable[[], float]) -> float | None:
    return None if until is None else until - clock()


def _json_body(raw: bytes, provider: str, redact: Callable[[str], str]) -> dict[str, Any]:
    """A whole (non-streamed) completion, or the error object some servers send with 200."""
    try:
        payload = decode_json(raw)
    except JSONTooDeepError:
        raise _Failed(ArkError(ErrorLayer.DECODE, "provider_decode_error",
                               f"{provider} sent a JSON body nested more than {MAX_JSON_DEPTH} levels deep")) from None
    except ValueError:
        raise _Failed(ArkError(ErrorLayer.DECODE, "provider_decode_error",
                               f"{provider} sent a JSON content-type with a body that is not JSON")) from None
    if not isinstance(payload, dict):
        raise _Failed(ArkError(ErrorLayer.DECODE, "provider_decode_error", f"{provider} sent an unexpected body"))
    if payload.get("error"):
        raise _Failed(error_from_envelope(payload, provider=provider, redact=redact))
    return payload
