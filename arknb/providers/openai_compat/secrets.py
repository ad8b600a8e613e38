"""API keys: held as ``SecretStr`` or fetched from a callable, never shown (seed 003 §8.3).

The key lives only in memory, inside an :class:`ApiKey`. It is read when a request is
built and goes into the ``Authorization`` header, nowhere else: not into reprs, errors,
events, logs or state. Text that might echo it (a server's error body) passes through
:meth:`ApiKey.redact` first.
"""

from __future__ import annotations

import inspect
import os
from typing import Awaitable, Callable, Union

from pydantic import SecretStr

from ...domain import ArkError, ErrorLayer

__all__ = ["ApiKey", "ApiKeySource", "from_env"]

ApiKeySource = Union[str, SecretStr, Callable[[], Union[str, SecretStr, Awaitable[Union[str, SecretStr]]]]]
"""A key, or a (sync or async) callable returning one: called before every request,
so a rotating token provider works."""

_MASK = "***"


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
    return read


class ApiKey:
    """A key source with a safe repr. ``await key.get()`` returns the plain key."""

    __slots__ = ("_source", "_seen")

    def __init__(self, source: ApiKeySource | None) -> None:
        if isinstance(source, str):
            source = SecretStr(source)
        if source is not None and not isinstance(source, SecretStr) and not callable(source):
            raise ArkError(ErrorLayer.CONFIG, "invalid_argument",
                           f"api_key must be a str, SecretStr or callable, got {type(source).__name__}")
        self._source = source
        # Every value handed out, so redact() also hides a rotated key.
        self._seen: set[str] = set()

    @property
    def present(self) -> bool:
        """True if a key (or key provider) was given."""
        return self._source is not None

    async def get(self) -> str | None:
        """The plain key (``None`` when there is none)."""
        source = self._source
        if source is None:
            return None
        if callable(source) and not isinstance(source, SecretStr):
            try:
                value = source()
                if inspect.isawaitable(value):
                    value = await value
            except ArkError:
                raise
            except Exception as exc:  # the provider's own text may hold secrets: keep only the type
                raise ArkError(ErrorLayer.CONFIG, "api_key_provider_failed",
                               f"the api_key provider raised {type(exc).__name__}") from None
        else:
            value = source
        plain = value.get_secret_value() if isinstance(value, SecretStr) else value
        if not isinstance(plain, str) or not plain:
            raise ArkError(ErrorLayer.CONFIG, "api_key_missing", "the api_key provider returned no key")
        if len(plain) >= 4:
            self._seen.add(plain)
        return plain

    def known(self) -> tuple[SecretStr, ...]:
        """The keys known so far (the static key and any a provider returned), still wrapped."""
        values = {self._source.get_secret_value()} if isinstance(self._source, SecretStr) else set()
        return tuple(SecretStr(v) for v in sorted(values | self._seen))

    def redact(self, text: str) -> str:
        """``text`` with every key this object has handed out replaced by ``***``."""
        for secret in self._seen:
            if secret in text:
                text = text.replace(secret, _MASK)
        return text

    def __repr__(self) -> str:
        kind = "none" if self._source is None else "callable" if callable(self._source) and not isinstance(
            self._source, SecretStr) else "secret"
        return f"ApiKey({kind}, '**********')" if self._source is not None else "ApiKey(none)"

    __str__ = __repr__

    def __reduce__(self):  # never pickled with its value
        raise TypeError("ApiKey cannot be pickled")
