"""The waiters of one process: who waits for which operation (seed 004 §2.1's ResultWaitRegistry).

Only a hint: the store is the source of truth. A signal wakes a waiter early; a
waiter that missed one finds the result at its next periodic re-read.
"""

from __future__ import annotations

import asyncio

__all__ = ["Waiter", "WaitRegistry"]


class Waiter:
    """One task's wait for an operation: set by a signal, waited for with a time limit.

    ``asyncio.wait_for(event.wait(), t)`` would make a task per wait; a bus waits once or
    twice per request, so this waits on one future and one timer instead.
    """

    __slots__ = ("_set", "_future")

    def __init__(self) -> None:
        self._set = False
        self._future: asyncio.Future | None = None

    def set(self) -> None:
        """Wake the wait (or make the next one return at once)."""
        self._set = True
        future = self._future
        if future is not None and not future.done():
            future.set_result(None)

    def is_set(self) -> bool:
        return self._set

    def clear(self) -> None:
        self._set = False

    async def wait(self, timeout: float) -> bool:
        """Wait until set or ``timeout`` seconds passed; True if it was set."""
        if self._set:
            return True
        loop = asyncio.get_running_loop()
        future = self._future = loop.create_future()
        timer = loop.call_later(timeout, _expire, future)
        try:
            await future
        finally:
            timer.cancel()
            self._future = None
        return self._set


def _expire(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


class WaitRegistry:
    """Per operation id, the waiters of the tasks waiting for it."""

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: dict[str, set[Waiter]] = {}

    def attach(self, operation_id: str) -> Waiter:
        """Register a waiter; it is set by :meth:`signal` (or :meth:`wake_all`)."""
        waiter = Waiter()
        self._waiting.setdefault(operation_id, set()).add(waiter)
        return waiter

    def detach(self, operation_id: str, waiter: Waiter) -> None:
        """Forget one waiter (the others keep waiting)."""
        waiters = self._waiting.get(operation_id)
        if waiters is not None:
            waiters.discard(waiter)
            if not waiters:
                del self._waiting[operation_id]

    def signal(self, operation_id: str) -> None:
        """Wake every waiter of ``operation_id`` (they re-read the store)."""
        for waiter in self._waiting.get(operation_id, ()):
            waiter.set()

    def wake_all(self) -> None:
        """Wake every waiter (the bus is closing)."""
        for waiters in self._waiting.values():
            for waiter in waiters:
                waiter.set()

    def count(self, operation_id: str) -> int:
        """How many tasks wait for ``operation_id``."""
        return len(self._waiting.get(operation_id, ()))
