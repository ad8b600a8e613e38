"""EventChannel: hands a run's events from bus listeners to one consumer (``run_stream``).

A bare ``asyncio.Queue`` costs a future and a wake-up per item. A run publishes its
events in bursts (a whole model turn between two awaits of the consumer), so the
channel buffers them and wakes the consumer once per burst; the consumer then drains
the buffer without awaiting.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

__all__ = ["EventChannel"]

T = TypeVar("T")


class EventChannel(Generic[T]):
    """A single-consumer buffer: ``put`` from callbacks, ``close`` to end; the consumer
    drains :attr:`buffer` and awaits :meth:`wait` when it is empty.

    The consumer reads the deque itself rather than through an async iterator: the
    runtime's ``run_stream`` is already one, and a second generator layer would cost
    a hop per event.
    """

    __slots__ = ("buffer", "closed", "_waiter")

    def __init__(self) -> None:
        self.buffer: deque[T] = deque()
        self.closed = False
        self._waiter: asyncio.Future | None = None

    def put(self, item: T) -> None:
        self.buffer.append(item)
        self._wake()

    def close(self) -> None:
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self) -> None:
        """Return once the buffer holds something or the channel is closed."""
        if self.buffer or self.closed:
            return
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None
