"""The waiters of one process: who waits for which operation (seed 004 §2.1's ResultWaitRegistry).

Only a hint: the store is the source of truth. A signal wakes a waiter early; a
waiter that missed one finds the result at its next periodic re-read.
"""

from __future__ import annotations

import asyncio

__all__ = ["WaitRegistry"]


class WaitRegistry:
    """Per operation id, the events of the tasks waiting for it."""

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: dict[str, set[asyncio.Event]] = {}

    def attach(self, operation_id: str) -> asyncio.Event:
        """Register a waiter; its event is set by :meth:`signal` (or :meth:`wake_all`)."""
        event = asyncio.Event()
        self._waiting.setdefault(operation_id, set()).add(event)
        return event

    def detach(self, operation_id: str, event: asyncio.Event) -> None:
        """Forget one waiter (the others keep waiting)."""
        waiters = self._waiting.get(operation_id)
        if waiters is not None:
            waiters.discard(event)
            if not waiters:
                del self._waiting[operation_id]

    def signal(self, operation_id: str) -> None:
        """Wake every waiter of ``operation_id`` (they re-read the store)."""
        for event in self._waiting.get(operation_id, ()):
            event.set()

    def wake_all(self) -> None:
        """Wake every waiter (the bus is closing)."""
        for waiters in self._waiting.values():
            for event in waiters:
                event.set()

    def count(self, operation_id: str) -> int:
        """How many tasks wait for ``operation_id``."""
        return len(self._waiting.get(operation_id, ()))
