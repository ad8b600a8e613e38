"""The TimelineWidget's kernel-side event store: bounded, positioned, paged.

Every event the widget receives gets a *position* (0, 1, 2, ... in arrival order).
The store keeps the newest ``max_events`` of them; older ones are forgotten, and the
front end learns the oldest position the kernel still has (``first``) so it can show
"N older events" and fetch them a page at a time. Events older than the store (the
earlier runs of a restored session, or events the store forgot) can come from an
:class:`EventPages` source; positions of such pages are below ``first`` (they may be
negative) and are only ever seen by the view that asked for them. The newest such
page, read when the widget is built, is :meth:`EventLog.prepend`-ed: it takes the
positions just below the live events (negative ones), so no position already sent
ever changes.

The listener path is one ``list.append``: trimming to ``max_events`` happens when the
widget flushes, so a burst between two flushes is kept whole and sent, then trimmed.
"""

from __future__ import annotations

import inspect
from collections import deque
from typing import Any, Awaitable, Callable, Protocol, Sequence, runtime_checkable

from ..domain import invalid_argument

__all__ = ["BackwardPages", "EventLog", "EventPages", "ForwardPages", "event_sequence"]


@runtime_checkable
class EventPages(Protocol):
    """Where a timeline reads events older than the ones it keeps in memory.

    One method, so any durable store can back it (see :class:`ForwardPages` for a
    store that reads forward, as ``store.read_events(session_id, after_sequence=,
    limit=)`` does).

    Example:
        >>> class Recorded:
        ...     def __init__(self, events): self.events = events
        ...     async def read_before(self, before_sequence, limit):
        ...         older = [e for e in self.events
        ...                  if before_sequence is None or e["sequence"] < before_sequence]
        ...         return older[-limit:]
    """

    async def read_before(self, before_sequence: int | None, limit: int) -> Sequence[Any]:
        """The newest ``limit`` events whose ``sequence`` is below ``before_sequence``
        (all events when it is ``None``), oldest first; fewer (or none) when the
        source has no more."""
        ...


ReadEvents = Callable[..., Awaitable[Sequence[Any]] | Sequence[Any]]


class _SourcePages:
    """A page source over one sync or async callable (the store's read)."""

    def __init__(self, read: ReadEvents) -> None:
        if not callable(read):
            raise invalid_argument(f"{type(self).__name__} needs a callable, got {type(read).__name__}")
        self._read = read

    async def _called(self, **kwargs: Any) -> list[Any]:
        got = self._read(**kwargs)
        if inspect.isawaitable(got):
            got = await got
        return list(got or ())


class BackwardPages(_SourcePages):
    """:class:`EventPages` over a source that reads backwards, as the durable stores'
    ``read_events_before(session_id, before_sequence, limit=)`` does: a page costs the
    same however long the session is.

    Args:
        read_before: sync or async callable ``(before_sequence=B, limit=N)`` returning
            the newest ``N`` events below ``B`` (of all, when ``B`` is None), oldest first.

    Example:
        >>> pages = BackwardPages(lambda **kw: store.read_events_before(session_id, **kw))  # doctest: +SKIP
    """

    async def read_before(self, before_sequence: int | None, limit: int) -> list[Any]:
        return await self._called(before_sequence=before_sequence, limit=limit) if limit > 0 else []


class ForwardPages(_SourcePages):
    """:class:`EventPages` over a source that reads forward from a sequence number.

    ``read_events(after_sequence=S, limit=N)`` returns up to ``N`` events with
    ``sequence > S`` in order (``after_sequence=None``: from the start). A page before
    sequence ``B`` is found by reading the window just below ``B`` and widening it
    (doubling) until it holds ``limit`` events or reaches the start, so sequence gaps
    (the outbox has no ``llm.chunk``) cost a few extra reads, never a wrong page.
    A store that can read backwards (``ORDER BY sequence DESC``) is read through
    :class:`BackwardPages` instead.

    Args:
        read_events: sync or async callable as above.

    Example:
        >>> pages = ForwardPages(lambda **kw: store.read_events(session_id, **kw))  # doctest: +SKIP
    """

    async def _read_after(self, after: int | None, limit: int | None) -> list[Any]:
        return await self._called(after_sequence=after, limit=limit)

    async def read_before(self, before_sequence: int | None, limit: int) -> list[Any]:
        if limit <= 0:
            return []
        if before_sequence is None:
            # No bound: walk forward once, keeping the newest page (a store that can
            # read backwards is read through BackwardPages).
            newest: deque[Any] = deque(maxlen=limit)
            after: int | None = None
            step = max(limit, 1000)
            while True:
                window = await self._read_after(after, step)
                newest.extend(window)
                if len(window) < step:
                    return list(newest)
                after = event_sequence(window[-1])
        span = limit
        while True:
            after = before_sequence - 1 - span
            if after < 0:
                window = await self._read_after(None, before_sequence + limit)
            else:
                window = await self._read_after(after, span + limit)
            older = [e for e in window if event_sequence(e) < before_sequence]
            if len(older) >= limit or after < 0:
                return older[-limit:]
            span *= 2


def event_sequence(event: Any) -> int:
    """The ``sequence`` of an ``AgentEvent`` or an event dict (``-1`` when missing)."""
    value = event.get("sequence") if isinstance(event, dict) else getattr(event, "sequence", None)
    return value if isinstance(value, int) else -1


class EventLog:
    """The newest ``max_events`` events, each at its arrival position.

    ``append`` is the bus listener's whole work; :meth:`trim` enforces the bound (the
    widget calls it after each flush, so events are never forgotten before they were
    sent once).

    Args:
        max_events: how many events to keep (``None``: keep all, for recorded traces
            the caller already holds in memory).
    """

    __slots__ = ("_events", "first", "base", "max_events", "append")

    def __init__(self, max_events: int | None) -> None:
        if max_events is not None and (not isinstance(max_events, int) or isinstance(max_events, bool)
                                       or max_events < 1):
            raise invalid_argument(f"max_events must be a positive int or None, got {max_events!r}")
        self._events: list[Any] = []
        self.first = 0
        """Position of the oldest event still kept."""
        self.base = 0
        """Position of the oldest event ever held (0, or below it after :meth:`prepend`)."""
        self.max_events = max_events
        self.append: Callable[[Any], None] = self._events.append
        """Add one event at position :attr:`next` (``list.append``: the hot path)."""

    @property
    def next(self) -> int:
        """Position the next event will get (= how many events ever arrived)."""
        return self.first + len(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def extend(self, events: Sequence[Any]) -> None:
        """Append several events (recorded traces)."""
        self._events.extend(events)

    def prepend(self, events: Sequence[Any]) -> None:
        """Put events older than every kept one before them, at the positions just below
        :attr:`first` (the earlier runs of a restored session); only before anything
        was forgotten, or a hole would open between them and the kept events."""
        if self.first != self.base:
            raise invalid_argument("EventLog.prepend after events were forgotten would leave a hole")
        self._events[:0] = events
        self.first -= len(events)
        self.base = self.first

    def drop_last(self, event: Any) -> bool:
        """Take back ``event`` if it is the newest one (a duplicate the listener just
        appended); returns whether it was."""
        if self._events and self._events[-1] is event:
            self._events.pop()
            return True
        return False

    def slice(self, start: int, stop: int) -> list[Any]:
        """Events at positions ``[start, stop)``, clipped to what is kept."""
        lo = max(start, self.first) - self.first
        hi = max(min(stop, self.next) - self.first, lo)
        return self._events[lo:hi]

    def kept(self) -> list[Any]:
        """Every kept event, oldest first (a copy)."""
        return list(self._events)

    def trim(self) -> int:
        """Forget the oldest events beyond ``max_events``; returns how many went."""
        if self.max_events is None:
            return 0
        excess = len(self._events) - self.max_events
        if excess <= 0:
            return 0
        del self._events[:excess]
        self.first += excess
        return excess
