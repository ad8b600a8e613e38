"""EventChannel: hands a run's events from bus listeners to one ``async for`` consumer.

A bare ``asyncio.Queue`` costs a future and a wake-up per item. A run publishes its
events in bursts (a whole model turn between two awaits of the consumer), so the
channel buffers them and wakes the consumer once per burst; the consumer then drains
the buffer without awaiting.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import AsyncIterator, Generic, TypeVar

__all__ = ["EventChannel"]

T = TypeVar("T")


class EventChannel(Generic[T]):
    """A single-consumer buffer: ``put`` from callbacks, ``async for`` to read, ``close`` to end."""

    __slots__ = ("_buffer", "_waiter", "_closed")

    def __init__(self) -> None:
        self._buffer: deque[T] = deque()
        self._waiter: asyncio.Future | None = None
        self._closed = False

    def put(self, item: T) -> None:
        self._buffer.append(item)
        self._wake()

    def close(self) -> None:
        self._closed = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def __aiter__(self) -> AsyncIterator[T]:
        buffer = self._buffer
        while True:
            while buffer:
                yield buffer.popleft()
            if self._closed:
                return
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
