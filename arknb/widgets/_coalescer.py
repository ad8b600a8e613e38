"""Flush scheduling for widget deltas: batch a fast stream, send structure at once.

The Jupyter server drops kernel messages above about 1,000 per second (RECIPES), so
a widget never sends one message per streamed chunk. Deltas mark the coalescer
dirty; a timer on the running asyncio loop flushes them every ``interval`` seconds.
A structural event (a tool call, an approval, the end of a run) flushes at once,
unless a flush went out less than ``interval`` ago, in which case it is pulled
forward to ``interval`` after that flush: either way at most one flush per
``interval``, and no structural change waits longer than that.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

__all__ = ["Coalescer", "DEFAULT_INTERVAL"]

DEFAULT_INTERVAL = 0.033
"""Seconds between flushes while deltas stream (about 30 per second)."""

CallLater = Callable[[float, Callable[[], None]], Any]


def _loop_call_later(delay: float, callback: Callable[[], None]) -> Any:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop.call_later(delay, callback)


def _cancel_handle(handle: Any) -> None:
    """Cancel a ``call_later`` handle (``None`` is fine)."""
    if handle is not None:
        try:
            handle.cancel()
        except Exception:  # a foreign handle without cancel semantics
            pass


class Coalescer:
    """Decides *when* to call ``flush``; what a flush sends is the caller's business.

    Args:
        flush: called with no arguments to send everything pending.
        interval: minimum seconds between two flushes.
        clock: monotonic clock in seconds (injectable for tests).
        call_later: ``(delay, callback) -> handle with .cancel()`` or ``None`` when no
            loop is running; defaults to the running asyncio loop's ``call_later``.
            Without a loop, deltas flush on the leading edge of each interval and
            structural events flush at once (replays built outside a loop stay small).

    Example:
        >>> sent = []
        >>> c = Coalescer(lambda: sent.append(1), call_later=lambda d, cb: None)
        >>> c.structural(); len(sent)
        1
    """

    __slots__ = ("_flush", "interval", "_clock", "_call_later", "_timer", "_due", "_last", "_dirty",
                 "_flushing", "flushes")

    def __init__(self, flush: Callable[[], None], *, interval: float = DEFAULT_INTERVAL,
                 clock: Callable[[], float] | None = None,
                 call_later: CallLater | None = None) -> None:
        self._flush = flush
        self.interval = interval
        self._clock = clock or time.monotonic
        self._call_later = call_later or _loop_call_later
        self._timer: Any = None
        self._due = 0.0
        self._last = float("-inf")
        self._dirty = False
        self._flushing = False
        self.flushes = 0
        """How many flushes ran (for tests and benchmarks)."""

    def delta(self) -> None:
        """Something streamable is pending: make sure a flush is scheduled. O(1)."""
        if self._timer is not None:
            return
        self._dirty = True
        # Always wait one interval: a burst of chunks then shares one message.
        self._schedule(self._clock(), self.interval)

    def structural(self) -> None:
        """Something structural happened: flush now, or as soon as the rate allows."""
        self._dirty = True
        now = self._clock()
        wait = self._last + self.interval - now
        if wait <= 0:
            self.flush_now()
            return
        if self._timer is not None and self._due <= now + wait:
            return
        self._cancel_timer()
        self._schedule(now, wait)

    def flush_now(self) -> None:
        """Flush immediately (also cancels a scheduled flush)."""
        self._cancel_timer()
        self._dirty = False
        self._last = self._clock()
        self.flushes += 1
        self._flushing = True
        try:
            self._flush()
        finally:
            self._flushing = False

    def close(self) -> None:
        """Cancel any scheduled flush; pending data is left to the caller."""
        self._cancel_timer()

    def _schedule(self, now: float, wait: float) -> None:
        handle = self._call_later(wait, self._on_timer)
        if handle is None:
            # No running loop: flush on the leading edge of the interval instead. A
            # delta the flush itself asks for (the next tick of a stream) waits for
            # the next call: flushing inside the flush would recurse without end.
            if now - self._last >= self.interval and not self._flushing:
                self.flush_now()
            return
        self._timer = handle
        self._due = now + wait

    def _on_timer(self) -> None:
        self._timer = None
        if self._dirty:
            self.flush_now()

    def _cancel_timer(self) -> None:
        _cancel_handle(self._timer)
        self._timer = None
