"""API keys: held as ``SecretStr`` or fetched from a callable, never shown (seed 003 §8.3).

The key lives only in memory, inside an :class:`ApiKey`. It is read when a request is
built and goes into the ``Authorization`` header, nowhere else: not into reprs, errors,
events, logs or state. Text that might echo it (a server's error body) passes through
:meth:`ApiKey.redact` first.

Whatever the source (a static key, the profile's environment variable, a sync or async
callable), every value handed out is reported first to the registered observers
(:meth:`ApiKey.observe`): the runtime registers one, so it learns each key before any
response to the request that uses it exists, and redacts the key from everything that
leaves it (DESIGN §9).
"""

from __future__ import annotations

import inspect
import os
import time
import weakref
from typing import Awaitable, Callable, Union

from pydantic import SecretStr

from ...domain import ArkError, ErrorLayer

__all__ = ["ApiKey", "ApiKeySource", "SecretObserver", "from_env"]

ApiKeySource = Union[str, SecretStr, Callable[[], Union[str, SecretStr, Awaitable[Union[str, SecretStr]]]]]
"""A key, or a (sync or async) callable returning one: called before every request,
so a rotating token provider works."""

SecretObserver = Callable[[SecretStr], None]
"""Called with each key value (wrapped) the first time it is handed out."""

_MASK = "[redacted]"

_PREFETCH_TTL = 60.0
"""Seconds a key fetched ahead of its request (:meth:`ApiKey.prefetch`) may be used for it;
an older one is fetched again (a provider's short-lived token may have expired)."""


def from_env(name: str) -> Callable[[], SecretStr]:
    """A key source that reads environment variable ``name`` when a request is made.

    Example:
        >>> source = from_env("DEEPSEEK_API_KEY")   # nothing is read yet
    """
    def read() -> SecretStr:
        value = os.environ.get(name)
        if not value:
            raise ArkError(ErrorLayer.CONFIG, "api_key_missing", f"environment variable {name} is not set")
        return SecretStr(value)
    read.__qualname__ = read.__name__ = f"from_env({name!r})"
    read.env_name = name  # type: ignore[attr-defined]  # lets ApiKey report the value early
    return read


class ApiKey:
    """A key source with a safe repr. ``await key.get()`` returns the plain key."""

    __slots__ = ("_source", "_seen", "_observers", "_prefetched")

    def __init__(self, source: ApiKeySource | None) -> None:
        if isinstance(source, str):
            source = SecretStr(source)
        if source is not None and not isinstance(source, SecretStr) and not callable(source):
            raise ArkError(ErrorLayer.CONFIG, "invalid_argument",
                           f"api_key must be a str, SecretStr or callable, got {type(source).__name__}")
        self._source = source
        # Every value handed out, so redact() also hides a rotated key.
        self._seen: set[str] = set()
        self._observers: list[Callable[[], SecretObserver | None]] = []
        self._prefetched: tuple[str, float] | None = None  # (key, when) for the next request
        if isinstance(source, SecretStr):
            self._remember(source.get_secret_value())

    @property
    def present(self) -> bool:
        """True if a key (or key provider) was given."""
        return self._source is not None

    async def get(self) -> str | None:
        """The plain key (``None`` when there is none), reported to the observers first.

        Raises:
            ArkError: ``api_key_missing`` (config) when the source gives no key;
                ``api_key_provider_failed`` (config) when a callable raises: only the
                exception's type is kept, never its text or the exception itself (it
                may hold secrets), so nothing of it is chained to the error.
        """
        source = self._source
        if source is None:
            return None
        prefetched, self._prefetched = self._prefetched, None
        if prefetched is not None and time.monotonic() - prefetched[1] <= _PREFETCH_TTL:
            return prefetched[0]
        if callable(source) and not isinstance(source, SecretStr):
            failure: ArkError | None = None
            try:
                value = source()
                if inspect.isawaitable(value):
                    value = await value
            except ArkError as error:
                failure = ArkError(error.layer, error.code, self.redact(error.message), error.retryability)
            except Exception as exc:
                failure = ArkError(ErrorLayer.CONFIG, "api_key_provider_failed",
                                   f"the api_key provider raised {type(exc).__name__}")
            if failure is not None:  # raised outside the handler: no __context__ to follow
                raise failure
        else:
            value = source
        plain = value.get_secret_value() if isinstance(value, SecretStr) else value
        if not isinstance(plain, str) or not plain:
            raise ArkError(ErrorLayer.CONFIG, "api_key_missing", "the api_key provider returned no key")
        if plain not in self._seen:
            self._remember(plain)
        return plain

    async def prefetch(self) -> None:
        """Fetch the key now if none was handed out yet, so the observers learn it before
        anything that could echo it exists (a restored session whose approved tool runs
        before its first request). The next :meth:`get` uses it instead of calling the
        provider again, if it comes within a minute, so a provider is not called more
        often than there are requests. Once a key was handed out, this does nothing.

        Raises:
            ArkError: what :meth:`get` raises.
        """
        if self._seen or self._prefetched is not None or not callable(self._source) or isinstance(
                self._source, SecretStr):
            return
        value = await self.get()
        if value is not None:
            self._prefetched = (value, time.monotonic())

    def observe(self, observer: SecretObserver) -> Callable[[], None]:
        """Call ``observer(SecretStr(key))`` for every key known now and, from now on,
        for each new one before it is used. Returns a function that stops it.

        A bound method is held weakly (a runtime that goes away is not kept alive by the
        client it used); any other callable strongly, until the returned function is
        called.
        """
        if not callable(observer):
            raise ArkError(ErrorLayer.CONFIG, "invalid_argument",
                           f"observer must be callable, got {type(observer).__name__}")
        ref: Callable[[], SecretObserver | None]
        ref = weakref.WeakMethod(observer) if inspect.ismethod(observer) else (lambda: observer)
        self._observers.append(ref)
        for value in self.known():
            observer(value)

        def stop() -> None:
            if ref in self._observers:
                self._observers.remove(ref)
        return stop

    def hide(self, value: str | SecretStr) -> None:
        """Treat ``value`` (another credential the client sends, e.g. an ``api-key``
        header) like a key: redacted from error text and reported to the observers."""
        plain = value.get_secret_value() if isinstance(value, SecretStr) else value
        if isinstance(plain, str) and plain and plain not in self._seen:
            self._remember(plain)

    def known(self) -> tuple[SecretStr, ...]:
        """The keys known so far (the static key, any a provider returned, and the value
        of the environment variable a :func:`from_env` source reads), still wrapped."""
        values = set(self._seen)
        env_name = getattr(self._source, "env_name", None)
        if isinstance(env_name, str) and os.environ.get(env_name):
            values.add(os.environ[env_name])
        return tuple(SecretStr(v) for v in sorted(values))

    def redact(self, text: str) -> str:
        """``text`` with every key this object has handed out replaced by ``[redacted]``."""
        for secret in sorted(self._seen, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, _MASK)
        return text

    def _remember(self, plain: str) -> None:
        wrapped = SecretStr(plain)
        failed: str | None = None
        for ref in list(self._observers):
            observer = ref()
            if observer is None:  # its runtime is gone
                self._observers.remove(ref)
                continue
            try:
                observer(wrapped)
            except Exception as exc:
                failed = type(exc).__name__
        if failed is not None:  # a key an observer could not learn is not used (asked again next time)
            raise ArkError(ErrorLayer.CONFIG, "secret_observer_failed",
                           f"a secret observer raised {failed}; the request was not sent")
        if len(plain) >= 4:  # shorter "keys" would mask ordinary text in error messages
            self._seen.add(plain)

    def __repr__(self) -> str:
        kind = "none" if self._source is None else "callable" if callable(self._source) and not isinstance(
            self._source, SecretStr) else "secret"
        return f"ApiKey({kind}, '**********')" if self._source is not None else "ApiKey(none)"

    __str__ = __repr__

    def __reduce__(self):  # never pickled with its value
        raise TypeError("ApiKey cannot be pickled")
