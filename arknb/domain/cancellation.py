"""Cooperative cancellation shared by the runtime, providers and tools."""

from __future__ import annotations

import asyncio

from .errors import ArkError, ErrorCode, ErrorLayer

__all__ = ["CancellationToken"]


class CancellationToken:
    """A one-way flag that says "stop": once cancelled, it stays cancelled.

    Tools receive it through ``ToolContext.cancel``; providers close their stream when
    it fires. ``raise_if_cancelled()`` turns it into ``ArkError(cancelled)``.

    Example:
        >>> token = CancellationToken()
        >>> token.cancel("user pressed Stop")
        >>> token.cancelled
        True
    """

    __slots__ = ("_event", "_reason", "_callbacks")

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None
        self._reason: str | None = None
        self._callbacks: list = []

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        """The reason given to :meth:`cancel`, if any."""
        return self._reason

    def cancel(self, reason: str = "cancelled") -> None:
        """Set the flag (idempotent) and run the registered callbacks once."""
        if self._reason is not None:
            return
        self._reason = reason or "cancelled"
        if self._event is not None:
            self._event.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # a callback must not stop the others
                pass

    def on_cancel(self, callback):
        """Call ``callback()`` when the token is cancelled (at once if it already is).

        Returns a function that removes the callback, so a token shared by many calls
        does not accumulate callbacks of calls that already finished.
        """
        if self.cancelled:
            callback()
            return _noop
        self._callbacks.append(callback)

        def remove() -> None:
            try:
                self._callbacks.remove(callback)
            except ValueError:
                pass
        return remove

    async def wait(self) -> None:
        """Wait until the token is cancelled."""
        if self._event is None:
            self._event = asyncio.Event()
            if self.cancelled:
                self._event.set()
        await self._event.wait()

    def error(self) -> ArkError:
        """The ``cancelled`` error this token stands for."""
        return ArkError(ErrorLayer.CANCELLED, ErrorCode.CANCELLED, self._reason or "cancelled")

    def raise_if_cancelled(self) -> None:
        """Raise ``ArkError(cancelled)`` if the token is cancelled."""
        if self._reason is not None:
            raise self.error()

    def __repr__(self) -> str:
        return f"CancellationToken(cancelled={self.cancelled})"


def _noop() -> None:
    return None
