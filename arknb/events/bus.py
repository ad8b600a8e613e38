"""EventBus: one-to-many notification and one-to-one requests (seed 000 §7).

Listeners only observe: an exception in one is swallowed and counted, never reaching
the publisher or the other listeners, and the payload they get is read-only all the
way down, so none can change what the others see (DESIGN §4). Hooks, not listeners,
change a run.

What a listener costs the run: a **sync** listener is called in line, on the event loop,
so its time is the run's time and nothing bounds or drops it (a 1 ms sync listener made a
20-turn SQLite run 4-5x slower in ``benchmarks/outbox_listeners.py``): keep sync listeners
quick (the widgets' are) and do slow work in an async one. An **async** listener never
slows the run (DESIGN §13): it runs as a task with a bounded number of deliveries in
flight (``max_pending``) and a time limit per callback (``callback_timeout``). What a slow or stuck async listener cannot take is
dropped and counted (:attr:`EventBus.dropped`, and a ``bus.dropped`` event through
:attr:`EventBus.on_dropped`); the outbox of a durable session still has every event.

A durable session's outbox is not a listener but a **journal** (:meth:`EventBus.add_journal`):
it sees each event first, and an event it keeps is delivered to the listeners only once
the journal reports it committed (:meth:`EventBus.committed`), with every event published
after it held behind it, in order. So a listener never hears of an event a crash could
take back: after a SIGKILL, everything any listener received is in the outbox.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
from collections import deque
from typing import Any, Awaitable, Callable, Collection, Iterable

from ..domain import ArkError, ErrorCode, ErrorLayer
from ..domain.frozen import FrozenDict
from .envelope import AgentEvent, freeze_payload

__all__ = ["EventBus", "Journal", "Listener", "RequestHandler"]

Listener = Callable[[AgentEvent], Any]
Journal = Callable[[AgentEvent], bool]
"""Sees every event of its types first; True means: hold it until :meth:`EventBus.committed`."""
RequestHandler = Callable[[AgentEvent], Awaitable[Any] | Any]

_log = logging.getLogger("arknb.events")

DEFAULT_MAX_PENDING = 1000
"""Deliveries one async listener may have in flight before the next ones are dropped."""
DEFAULT_CALLBACK_TIMEOUT = 30.0
"""Seconds one async listener may take for one event."""
_DROPPED_EVENT = "bus.dropped"
_MISSING = object()


class EventBus:
    """Typed publish/subscribe plus a single request handler per event type.

    Example:
        >>> bus = EventBus()
        >>> seen = []
        >>> unsubscribe = bus.subscribe(EventTypes.LLM_CHUNK, seen.append)
        >>> bus.publish(AgentEvent("r:1", EventTypes.LLM_CHUNK, "s", "r", 1, 0.0, {"text": "hi"}))
        >>> len(seen)
        1
    """

    def __init__(self, *, max_pending: int = DEFAULT_MAX_PENDING,
                 callback_timeout: float = DEFAULT_CALLBACK_TIMEOUT) -> None:
        if isinstance(max_pending, bool) or not isinstance(max_pending, int) or max_pending < 1:
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                           f"max_pending must be an int >= 1, got {max_pending!r}")
        if not isinstance(callback_timeout, (int, float)) or not callback_timeout > 0:
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                           f"callback_timeout must be a positive number of seconds, got {callback_timeout!r}")
        self._by_type: dict[str, tuple[Listener, ...]] = {}
        self._handlers: dict[str, RequestHandler] = {}
        self._closed = False
        self._pending: set[asyncio.Task] = set()
        self.max_pending = max_pending
        """Deliveries an async listener may have in flight; more are dropped."""
        self.callback_timeout = float(callback_timeout)
        """Seconds an async listener may take per event before its delivery is dropped."""
        self.listener_errors = 0
        """How many listener calls raised (they are isolated, never re-raised)."""
        self.dropped = 0
        """Deliveries dropped because an async listener was too slow (full, or over its time limit)."""
        self.dropped_by: dict[str, int] = {}
        """The same, per listener (its qualified name)."""
        self.on_dropped: Callable[[str, int], None] | None = None
        """Called (soon after, never inside ``publish``) with a listener's name and how many
        of its deliveries were dropped since the last call; the runtime publishes ``bus.dropped``."""
        self._drops_to_report: dict[str, int] = {}
        # The outbox journals (add_journal) and what waits for their commits: [event, held]
        # pairs in publication order; ``held`` is True until the event is committed.
        self._journals: tuple[tuple[Journal, frozenset[str]], ...] = ()
        self._journal_types: frozenset[str] = frozenset()
        self._queue: deque[list] = deque()
        self._awaiting: dict[int, list] = {}

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    def subscribe(self, event_type: str, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` for every event of ``event_type`` (``"*"`` for all).

        Returns a function that unsubscribes (calling it twice is harmless). After
        :meth:`close` this does nothing and returns a no-op.
        """
        _check_registration(event_type, listener, "listener")
        if self._closed:
            return _noop
        entry = _Entry(listener)
        # Copy-on-write tuples: publish iterates a snapshot without copying it.
        self._swap(event_type, lambda current: current + (entry,))
        # The unsubscribe function forgets the entry once used, so a caller that keeps it
        # (e.g. a widget attribute) does not keep the listener alive (seed 000 §7.3: no leak).
        holder = [entry]

        def unsubscribe() -> None:
            if not holder:
                return
            entry = holder.pop()
            self._swap(event_type, lambda current: tuple(e for e in current if e is not entry))

        return unsubscribe

    def _swap(self, event_type: str, change: Callable[[tuple], tuple]) -> None:
        """Replace ``event_type``'s listeners with ``change(current)``, re-entrantly safe.

        Building the new tuple allocates, an allocation may run the garbage collector, and
        a collected widget's finalizer unsubscribes *during* it: writing back a tuple built
        from the listeners read before would bring that listener back for ever (seen as 6
        of 200 dropped widgets still listening). So the write happens only if nothing
        changed meanwhile; otherwise the change is built again from the new listeners.
        """
        while True:
            current = self._by_type.get(event_type, ())
            new = change(current)
            if self._by_type.get(event_type, ()) is current:  # no allocation between check and write
                if new:
                    self._by_type[event_type] = new
                else:
                    self._by_type.pop(event_type, None)
                return

    def subscribe_all(self, listener: Listener) -> Callable[[], None]:
        """Shorthand for ``subscribe("*", listener)``."""
        return self.subscribe("*", listener)

    def has_listeners(self, event_type: str) -> bool:
        """True if publishing ``event_type`` would reach anyone (lets callers skip building events)."""
        return bool(self._by_type.get(event_type) or self._by_type.get("*") or event_type in self._journal_types)

    # -- the outbox journal ---------------------------------------------------------------

    def add_journal(self, journal: Journal, types: Collection[str]) -> Callable[[], None]:
        """Have ``journal(event)`` see every event of ``types`` before any listener does.

        When it returns True the event is held: listeners get it (and every event
        published after it, in order) only after :meth:`committed` names it. Returns a
        function that removes the journal and delivers what it still held.
        """
        if not callable(journal):
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                           f"journal must be callable, got {type(journal).__name__}")
        entry = (journal, frozenset(types))
        self._journals += (entry,)
        self._journal_types = frozenset().union(*(t for _, t in self._journals))

        def remove() -> None:
            if entry in self._journals:
                self._journals = tuple(e for e in self._journals if e is not entry)
                self._journal_types = frozenset().union(*(t for _, t in self._journals))
                self.release_all()

        return remove

    def committed(self, events: Iterable[AgentEvent]) -> None:
        """The journal committed ``events``: deliver what no longer waits, in order."""
        awaiting = self._awaiting
        for event in events:
            item = awaiting.pop(id(event), None)
            if item is not None:
                item[1] = False
        self._deliver_ready()

    def release_all(self) -> None:
        """Deliver every held event now (the journal will not commit them: its store
        refused, or it is going away). Its listeners hear of them uncommitted."""
        for item in self._awaiting.values():
            item[1] = False
        self._awaiting.clear()
        self._deliver_ready()

    @property
    def held(self) -> int:
        """Events published and not yet delivered, waiting for a journal's commit."""
        return len(self._queue)

    def _deliver_ready(self) -> None:
        queue = self._queue
        while queue and not queue[0][1]:
            event, _, entries = queue.popleft()
            if not self._closed:
                self._announce(event, entries)

    def publish(self, event: AgentEvent) -> None:
        """Deliver ``event`` to its listeners, in subscription order, each isolated.

        Every listener gets the same event with a read-only payload: an event whose
        payload is not frozen yet (built with ``new_event`` from a plain dict) is
        delivered as a copy with its payload frozen. Async listeners are scheduled as
        tasks on the running loop, never awaited here.
        """
        if self._closed:
            return
        if not isinstance(event.payload, FrozenDict) and dataclasses.is_dataclass(event):
            event = dataclasses.replace(event, payload=freeze_payload(event.payload))
        if self._journals:
            held = False
            for journal, types in self._journals:
                if event.type in types:
                    try:
                        held = bool(journal(event)) or held
                    except Exception:
                        self._listener_failed(event)
            if held or self._queue:
                # The listeners as they are now (DESIGN §4: a snapshot), told once it is committed.
                item = [event, held, self._entries(event)]
                self._queue.append(item)
                if held:
                    self._awaiting[id(event)] = item
                return
        self._announce(event, self._entries(event))

    def _entries(self, event: AgentEvent) -> tuple[_Entry, ...]:
        by_type = self._by_type
        specific = by_type.get(event.type)
        return by_type.get("*", ()) if specific is None else specific + by_type.get("*", ())

    def _announce(self, event: AgentEvent, entries: tuple[_Entry, ...]) -> None:
        for entry in entries:
            try:
                outcome = entry.listener(event)
            except Exception:
                self._listener_failed(event)
                continue
            if outcome is not None:
                self._schedule(outcome, event, entry)

    def _schedule(self, outcome: Any, event: AgentEvent, entry: _Entry) -> None:
        """Run what an async listener returned as a task (never awaited by the publisher),
        unless that listener already has ``max_pending`` deliveries in flight."""
        if not inspect.isawaitable(outcome):
            return
        if entry.inflight >= self.max_pending:
            if inspect.iscoroutine(outcome):
                outcome.close()  # never started: nothing to clean up
            self._drop(entry, report=event.type != _DROPPED_EVENT)  # never a report about a report
            return
        try:
            task = asyncio.ensure_future(self._deliver(outcome, entry))
        except Exception:  # e.g. no running loop
            if inspect.iscoroutine(outcome):
                outcome.close()
            self._listener_failed(event)
            return
        entry.inflight += 1
        self._pending.add(task)
        task.add_done_callback(self._async_done)

    async def _deliver(self, outcome: Any, entry: _Entry) -> None:
        try:
            async with asyncio.timeout(self.callback_timeout):
                await outcome
        except TimeoutError:
            self._drop(entry)
        finally:
            entry.inflight -= 1

    def _drop(self, entry: _Entry, *, report: bool = True) -> None:
        self.dropped += 1
        name = entry.name
        self.dropped_by[name] = self.dropped_by.get(name, 0) + 1
        if self.on_dropped is None or not report:
            return
        first = not self._drops_to_report
        self._drops_to_report[name] = self._drops_to_report.get(name, 0) + 1
        if first:  # one report per burst, after the publisher is done
            try:
                asyncio.get_running_loop().call_soon(self._report_drops)
            except RuntimeError:
                self._drops_to_report.clear()

    def _report_drops(self) -> None:
        drops, self._drops_to_report = self._drops_to_report, {}
        report = self.on_dropped
        if report is None or self._closed:
            return
        for name, count in drops.items():
            try:
                report(name, count)
            except Exception:  # a report must not fail the loop
                _log.debug("bus.dropped report failed", exc_info=True)

    def _listener_failed(self, event: AgentEvent) -> None:
        self.listener_errors += 1
        _log.debug("event listener raised on %s", event.type, exc_info=True)

    def _async_done(self, task: asyncio.Task) -> None:
        self._pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.listener_errors += 1

    def register_request_handler(self, event_type: str, handler: RequestHandler) -> Callable[[], None]:
        """Make ``handler`` the one answerer of ``request`` for ``event_type``.

        A second handler for the same type raises ``request_handler_duplicate``.
        Returns a function that unregisters it.
        """
        _check_registration(event_type, handler, "handler")
        if event_type in self._handlers:
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.REQUEST_HANDLER_DUPLICATE,
                           f"a request handler for {event_type!r} is already registered")
        self._handlers[event_type] = handler

        def unregister() -> None:
            if self._handlers.get(event_type) is handler:
                del self._handlers[event_type]

        return unregister

    async def request(self, event: AgentEvent, default: Any = _MISSING) -> Any:
        """Ask the one handler of ``event.type`` and return its answer.

        The handler's exceptions propagate. With no handler, ``default`` is returned if
        given, else ``request_handler_missing`` is raised.
        """
        handler = self._handlers.get(event.type)
        if handler is None:
            if default is not _MISSING:
                return default
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.REQUEST_HANDLER_MISSING,
                           f"no request handler registered for {event.type!r}")
        outcome = handler(event)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        return outcome

    async def drain(self) -> None:
        """Wait for async listeners scheduled so far (useful in tests and at shutdown)."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    def close(self) -> None:
        """Stop delivering: later ``publish`` is a no-op and ``subscribe`` returns a no-op."""
        self._closed = True
        self._by_type.clear()
        self._handlers.clear()
        self._queue.clear()
        self._awaiting.clear()
        self._journals = ()
        self._journal_types = frozenset()


class _Entry:
    __slots__ = ("listener", "inflight")

    def __init__(self, listener: Listener) -> None:
        self.listener = listener
        self.inflight = 0  # async deliveries running

    @property
    def name(self) -> str:
        listener = self.listener
        return getattr(listener, "__qualname__", None) or type(listener).__qualname__


def _check_registration(event_type: object, fn: object, role: str) -> None:
    if not isinstance(event_type, str) or not event_type:
        raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                       f"event_type must be a non-empty string, got {event_type!r}")
    if not callable(fn):
        raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                       f"{role} must be callable, got {type(fn).__name__}")


def _noop() -> None:
    return None
