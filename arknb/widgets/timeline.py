"""TimelineWidget: every event of a runtime (or a recorded trace) as rows and spans."""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, Callable

import anywidget
import traitlets

from ..domain import invalid_argument
from ._base import RuntimeWidget, bundle, check_events, spawn
from ._coalescer import DEFAULT_INTERVAL, Coalescer
from ._protocol import Action, Msg
from ._static_html import StaticTwin, new_static_id
from ._timeline_html import render as _render_html
from ._timeline_model import RUN_END
from ._timeline_model import rows as _rows
from ._timeline_model import spans as _spans
from ._timeline_store import BackwardPages, EventLog, EventPages, ForwardPages, event_sequence
from ._timeline_wire import CHUNK, encode, event_dict

__all__ = ["TimelineWidget"]

_logger = logging.getLogger("arknb.widgets")

DEFAULT_MAX_EVENTS = 10_000
DEFAULT_PAGE_SIZE = 2_000
DEFAULT_MAX_VIEW_EVENTS = 100_000
_MESSAGE_EVENTS = 5_000
"""Most events per ``events`` message (one column batch of at most this many events)."""
_HELLO_WAIT = 2.0
"""Seconds a view's first page waits for the earlier runs before it goes without them."""


def _positive(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise invalid_argument(f"TimelineWidget {name} must be a positive int, got {value!r}")
    return value


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _store_pages(runtime: Any) -> EventPages | None:
    """The runtime's store as a page source, when it can read its event outbox (DESIGN §13)."""
    storage = getattr(runtime, "storage", None)
    session_id = getattr(runtime, "session_id", None)
    if not isinstance(session_id, str):
        return None
    backwards = getattr(storage, "read_events_before", None)  # arknb's stores: a page reads only itself
    if callable(backwards):
        return BackwardPages(lambda *, before_sequence, limit: backwards(session_id, before_sequence, limit=limit))
    read = getattr(storage, "read_events", None)  # a store of the bare protocol: read forward
    if not callable(read):
        return None
    return ForwardPages(lambda *, after_sequence, limit: read(session_id, after_sequence=after_sequence,
                                                                 limit=limit))


def _field(event: Any, name: str) -> Any:
    return event.get(name) if isinstance(event, dict) else getattr(event, name, None)


def _light(event: Any) -> Any:
    """An event as a dict for the static HTML: chunks are not made JSON-safe (only
    their text is read), so a refresh over many chunks stays cheap."""
    if isinstance(event, dict) or getattr(event, "type", None) != CHUNK:
        return event_dict(event)
    return {"type": CHUNK, "run_id": event.run_id, "sequence": event.sequence, "timestamp": event.timestamp,
            "payload": event.payload}


class TimelineWidget(RuntimeWidget, anywidget.AnyWidget):
    """A trace view: one row per event (status-coloured, one-line summaries), runs,
    turns, model calls and tool calls as nested waterfall spans, totals per run,
    filters by type, run and span, text search, a detail pane with structured
    before/after diffs of hook decisions, and JSONL export.

    Built for long sessions: the kernel keeps the newest ``max_events`` events (older
    pages come back on demand from ``pages``, or from the runtime's store when it
    keeps an event outbox); the browser renders only the rows on screen and folds
    updates in once per animation frame, so 100,000 events stay scrollable,
    filterable and searchable. Live on a runtime, events leave the kernel in batches
    (at most one message per 33 ms, the end of a run at once); they travel as binary
    columns (``_timeline_wire.py``). The cell's output also carries a static
    HTML summary that is kept current, so a saved notebook reads without a kernel.

    On a runtime with a page source (a restored durable session: its store's outbox,
    DESIGN §13) the widget shows the earlier runs at once: built where an event loop
    runs (a notebook cell), it reads the newest ``page_size`` stored events in the
    background and puts them before the live ones (a view that opens meanwhile gets
    its first page when they are in; an event that arrives both ways is kept once).
    Built where no loop runs (a script), it reads them when the first view opens, or
    when ``await timeline.load_history()`` asks. Pages older than that one still come
    on demand.

    Args:
        source: an ``AgentRuntime`` (live) or an iterable of ``AgentEvent``/dicts
            (a recorded trace, kept whole, read-only).
        max_events: events kept in the kernel (live); the rest is forgotten (or in ``pages``).
        page_size: events a view gets when it opens, and per "older events" click.
        max_view_events: events a browser view holds at most (it drops the oldest).
        pages: where older events come from (:class:`~arknb.widgets._timeline_store.EventPages`).
        static_html: also display the static companion (default True).
        interval, clock, call_later: batching (see ChatWidget).

    Example:
        >>> TimelineWidget(runtime)                         # doctest: +SKIP
        >>> TimelineWidget(events).to_jsonl("trace.jsonl")  # doctest: +SKIP
        >>> html = TimelineWidget(events).to_html()         # doctest: +SKIP
    """

    _esm = bundle("timeline.js")
    _css = bundle("timeline.css")

    read_only = traitlets.Bool(False).tag(sync=True)
    """True when built from recorded events (no live updates)."""
    page_size = traitlets.Int(DEFAULT_PAGE_SIZE).tag(sync=True)
    max_view_events = traitlets.Int(DEFAULT_MAX_VIEW_EVENTS).tag(sync=True)
    paged = traitlets.Bool(False).tag(sync=True)
    """True when events older than the kernel keeps can be fetched from a page source."""
    session_id = traitlets.Unicode("").tag(sync=True)
    static_id = traitlets.Unicode("").tag(sync=True)
    """Ties the view to its static HTML companion (the view hides it while live)."""

    def __init__(self, source: Any = None, *, max_events: int = DEFAULT_MAX_EVENTS,
                 page_size: int = DEFAULT_PAGE_SIZE, max_view_events: int = DEFAULT_MAX_VIEW_EVENTS,
                 pages: EventPages | None = None, static_html: bool = True, interval: float = DEFAULT_INTERVAL,
                 clock: Callable[[], float] | None = None, call_later: Callable[..., Any] | None = None,
                 **kwargs: Any) -> None:
        _positive("page_size", page_size)
        _positive("max_view_events", max_view_events)
        if pages is not None and not isinstance(pages, EventPages):
            raise invalid_argument(f"TimelineWidget pages must have an async read_before(before_sequence, limit), "
                                   f"got {type(pages).__name__}")
        bus = getattr(source, "bus", None)
        live = bus is not None
        if live:
            _positive("max_events", max_events)
            pages = pages if pages is not None else _store_pages(source)
        else:
            recorded = check_events(source or (), "TimelineWidget")
        # Traits go in with the constructor: the front end's initialize() sees only the
        # state the widget was opened with.
        super().__init__(read_only=not live, page_size=page_size, max_view_events=max_view_events,
                         paged=pages is not None, static_id=new_static_id(),
                         session_id=str(getattr(source, "session_id", "") or "") if live else "", **kwargs)
        self._tasks: set[asyncio.Future] = set()
        self._streaming = False
        self._coalescer = Coalescer(self._flush, interval=interval, clock=clock, call_later=call_later)
        self._pages = pages
        self._history: asyncio.Future | None = None
        """The read of the newest page of ``pages`` (the earlier runs), once started."""
        self._history_ids: frozenset[str] = frozenset()
        """Ids of the events that read added (one arriving live too is dropped)."""
        self._origin: int | None = None
        """Position of the session's first event, once the kernel holds it (nothing older exists)."""
        self._more_stored = False
        """True when that read found more events than one page (the static summary says so)."""
        self._fed = False
        """True once any ``events`` message went out (a view may hold a window without the history)."""
        self._history_error: str | None = None
        """What the history read failed with (each view is told)."""
        if live:
            self._log = EventLog(max_events)
            # The hot path: every event is one list append (no reference to the widget, so
            # the bus never keeps it alive); only non-chunk events reach _on_structure.
            self._listen(bus, method="_on_structure", record=self._log.append, quiet=(CHUNK,))
        else:
            self._log = EventLog(None)  # the caller holds the trace already: keep it whole
            self._log.extend(recorded)
        self._sent = self._log.next
        self._twin = StaticTwin(self, self.to_html, enabled=static_html, clock=clock, call_later=call_later)
        self.on_msg(self._on_msg)
        if live:
            self._start_history()  # no loop here: the first view's hello or load_history() starts it

    # -- reading --------------------------------------------------------------------

    @property
    def events(self) -> list[dict[str, Any]]:
        """The events the kernel keeps (the newest ``max_events``; on a restored runtime
        the earlier runs' events from the store come first), as JSON-ready dicts."""
        return [event_dict(e) for e in self._log.kept()]

    @property
    def forgotten(self) -> int:
        """How many events arrived but are no longer kept (``max_events`` was reached)."""
        return self._log.first - self._log.base

    async def load_history(self) -> int:
        """Read the newest ``page_size`` (at most ``max_events``) events of the page
        source, the earlier runs of a restored session, into the widget; once per
        widget. Built where a loop runs, the widget has started this already: awaiting
        it says when :attr:`events`, :meth:`rows` and :meth:`to_html` show them.

        Returns:
            How many events it added (0 without a page source, on a read-only trace,
            or when the widget was closed first); the same number on every call.

        Raises:
            Whatever the page source raised (the views show it too).

        Example:
            >>> timeline = TimelineWidget(await AgentRuntime.restore("s", storage=store))  # doctest: +SKIP
            >>> await timeline.load_history()                                            # doctest: +SKIP
            8
        """
        history = self._start_history()
        if history is None:
            return 0
        try:
            return await asyncio.shield(history)
        except asyncio.CancelledError:
            if history.cancelled():  # the widget was closed
                return 0
            raise

    def rows(self) -> list[dict[str, Any]]:
        """One row per kept event (index, sequence, type, run_id, relative t, summary, status)."""
        return _rows(self.events)

    def spans(self) -> list[dict[str, Any]]:
        """Nested run, turn, model-call and tool-call spans of the kept events."""
        return _spans(self.events)

    def to_jsonl(self, path: str | os.PathLike[str]) -> int:
        """Write the kept events to ``path`` as a trace (DESIGN §11: a header line, then one
        event per line, what ``ev.trace.from_jsonl`` and ``TimelineWidget(events)`` read);
        returns how many events it wrote.

        The header's ``dropped`` says how many older events the widget no longer kept
        (``max_events``) and so are not in the file, and ``first_sequence`` where the
        file starts; a restored session's store still has them all.
        """
        from ..eval.trace import to_jsonl as write_trace  # (importing the widgets must not import eval)

        events = self.events
        return write_trace(events, path, dropped=self.forgotten)

    def to_html(self) -> str:
        """A static HTML summary of the timeline (totals per run, nested spans with
        durations, hook decisions, the latest rows), every value escaped; what the
        notebook shows where no kernel runs."""
        return _render_html([_light(e) for e in self._log.kept()], self.static_id, older=self.forgotten,
                            in_store=self._more_stored and not self.forgotten)

    def _ipython_display_(self) -> None:
        self._twin.display()

    # -- kernel -> browser ------------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        """Take one event as the bus listener does (tests, replays)."""
        self._log.append(event)
        if event.type != CHUNK:
            self._on_structure(event)

    def _on_structure(self, event: Any) -> None:
        """A non-chunk event was appended: the end of a run goes out at once; anything else
        within one interval, so the events of a busy stretch share one message (each
        message has a fixed cost, in the kernel and in the browser)."""
        if self._history_ids and event.event_id in self._history_ids and self._log.drop_last(event):
            return  # read from the store already (committed before it was announced)
        etype = event.type
        if etype in RUN_END:
            self._streaming = False
            self._coalescer.structural()
            self._twin.changed(settled=True)
            return
        if etype == "llm.before":
            self._streaming = True  # chunks follow: flush on a timer until llm.after
        elif etype == "llm.after":
            self._streaming = False
        self._coalescer.delta()
        self._twin.changed()

    def _flush(self) -> None:
        if self._sent < self._log.next:
            self._send_range(max(self._sent, self._log.first), self._log.next)
            self._sent = self._log.next
        self._log.trim()
        if self._streaming:
            self._coalescer.delta()  # next tick while the model streams

    def _first_after_trim(self) -> int:
        cap = self._log.max_events
        return self._log.first if cap is None else max(self._log.first, self._log.next - cap)

    def _send_range(self, start: int, stop: int, *, reset: bool = False, to: str | None = None) -> None:
        """Events at ``[start, stop)`` in append order (the first message may reset the view)."""
        first = self._first_after_trim()
        events = self._log.slice(start, stop)
        if not events:
            if reset:
                self._send_events(start, [], first, reset=True, to=to)
            return
        for offset in range(0, len(events), _MESSAGE_EVENTS):
            flags: dict[str, Any] = {"reset": True} if reset and offset == 0 else {}
            if flags and self._pages is not None and start == self._log.first and self._at_origin():
                flags["exhausted"] = True  # the view holds the session from its first event
            self._send_events(start + offset, events[offset:offset + _MESSAGE_EVENTS], first, to=to, **flags)

    def _send_older(self, start: int, events: list[Any], *, exhausted: bool, to: str | None) -> None:
        """An older page in prepend order: newest slice first, so each message joins the view."""
        first = self._first_after_trim()
        offsets = list(range(0, len(events), _MESSAGE_EVENTS)) or [0]
        for offset in reversed(offsets):
            flags = {"exhausted": exhausted} if offset == offsets[0] else {}
            self._send_events(start + offset, events[offset:offset + _MESSAGE_EVENTS], first, older=True, to=to, **flags)

    def _send_events(self, start: int, events: list[Any], first: int, *, to: str | None = None, **flags: Any) -> None:
        self._fed = True
        items, buffers = encode(events)
        message = {"type": Msg.EVENTS, "start": start, "first": first, "events": items, **flags}
        if to is not None:
            message["to"] = to  # an answer to one view: the others ignore it
        self.send(message, buffers or None)

    # -- browser -> kernel ------------------------------------------------------------

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any = None) -> None:
        if not isinstance(content, dict):
            return
        kind = content.get("type")
        token = content.get("token") if isinstance(content.get("token"), str) else None
        if kind == Action.HELLO:
            self._hello(_int(content.get("have")), token)
        elif kind == Action.OLDER:
            before = _int(content.get("before"))
            if before is not None:
                self._older(before, _int(content.get("before_sequence")), _int(content.get("limit")), token)

    def _hello(self, have: int | None, token: str | None) -> None:
        history = self._start_history()
        if history is not None and not history.done():
            # The view's first page includes the earlier runs: answer once they are in, or
            # after _HELLO_WAIT seconds of a slow store (the page then follows as a reset).
            answered = False

            def answer(*_: Any) -> None:
                nonlocal answered
                if answered or history.cancelled():
                    return
                answered = True
                if history.done():
                    self._hello(have, token)  # the same path as a hello after the read
                else:
                    self._answer_hello(have, token)

            history.add_done_callback(answer)
            asyncio.get_running_loop().call_later(_HELLO_WAIT, answer)
            return
        self._answer_hello(have, token)

    def _answer_hello(self, have: int | None, token: str | None) -> None:
        if self._sent < self._log.next:
            self._coalescer.flush_now()  # what is pending goes to every view first, in order
        first, end = self._log.first, self._log.next
        if have is not None and first <= have <= end:
            self._send_range(have, end, to=token)  # the view missed messages: fill the gap
        else:
            self._send_range(max(first, end - self.page_size), end, reset=True, to=token)
            if self._history_error is not None:  # after the reset, which clears a view's error
                self._send_events(first, [], self._first_after_trim(), error=self._history_error, to=token)

    def _older(self, before: int, before_sequence: int | None, limit: int | None, token: str | None) -> None:
        limit = min(limit if limit is not None and limit > 0 else self.page_size, 50 * self.page_size)
        first = self._log.first
        if before > first:
            start = max(first, before - limit)
            self._send_older(start, self._log.slice(start, before),
                             exhausted=start == first and (self._pages is None or self._at_origin()), to=token)
        elif self._pages is None or self._at_origin():
            self._send_older(before, [], exhausted=True, to=token)
        else:
            spawn(self._older_from_pages(before, before_sequence, limit, token), self._tasks,
                  self._older_failed(before, token))

    async def _older_from_pages(self, before: int, before_sequence: int | None, limit: int,
                                token: str | None) -> None:
        page = sorted(await self._pages.read_before(before_sequence, limit), key=event_sequence)
        self._send_older(before - len(page), page, exhausted=len(page) < limit, to=token)

    # -- the earlier runs (the newest page of the page source) --------------------------

    def _at_origin(self) -> bool:
        """True while the kernel keeps the session from its first event (and will after
        the next trim): nothing older exists anywhere."""
        return self._origin is not None and self._first_after_trim() <= self._origin

    def _start_history(self) -> asyncio.Future | None:
        """The history read, started on the running loop the first time (None without a
        page source, on a read-only trace, or where no loop runs yet)."""
        if self._history is None and self._pages is not None and not self.read_only:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return None
            self._history = task = asyncio.ensure_future(self._read_history())
            self._tasks.add(task)
            task.add_done_callback(self._history_done)
        return self._history

    async def _read_history(self) -> int:
        limit = min(self.page_size, self._log.max_events or self.page_size)
        page = sorted(await self._pages.read_before(None, limit), key=event_sequence)
        return self._add_history(page, complete=len(page) < limit)

    def _add_history(self, page: list[Any], *, complete: bool) -> int:
        """Put the stored ``page`` before the live events, leaving out what came live."""
        log = self._log
        if log.first != log.base:
            return 0  # live events were forgotten already: older pages stay on demand
        live = log.kept()
        # Persist before announce (DESIGN §13): an event read from the store may have come
        # live already (left out here, by id) or come live later (dropped in _on_structure).
        # Only events older than the session's oldest live one go first, so order holds.
        seen = {_field(e, "event_id") for e in live}
        oldest = min((event_sequence(e) for e in live if _field(e, "session_id") == self.session_id), default=None)
        earlier = [e for e in page if _field(e, "event_id") not in seen
                   and (oldest is None or event_sequence(e) < oldest)]
        log.prepend(earlier)
        self._history_ids = frozenset(_field(e, "event_id") for e in earlier)
        if complete:
            self._origin = log.first
        self._more_stored = not complete
        if self._fed:
            # A view may hold live events without the history: give every view the newest page.
            if self._sent < log.next:
                self._coalescer.flush_now()
            self._send_range(max(log.first, log.next - self.page_size), log.next, reset=True)
        self._twin.changed(settled=True)
        return len(earlier)

    def _history_done(self, task: asyncio.Future) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            _logger.debug("reading the earlier events failed", exc_info=exc)
            self._history_error = f"could not read earlier events: {type(exc).__name__}: {exc}"
            if self._fed:
                self._send_events(self._log.first, [], self._first_after_trim(), error=self._history_error)

    def _older_failed(self, before: int, token: str | None) -> Callable[[BaseException], None]:
        def report(exc: BaseException) -> None:
            self._send_events(before, [], self._log.first, older=True, to=token,
                       error=f"could not read older events: {type(exc).__name__}: {exc}")
        return report

    def _release(self) -> None:
        """Stop listening, cancel page reads, refresh the static companion (on close)."""
        super()._release()
        for task in list(getattr(self, "_tasks", ())):
            task.cancel()
        twin = getattr(self, "_twin", None)  # ipywidgets also calls close() from __del__, maybe mid-__init__
        if twin is not None:
            twin.close()

    @classmethod
    def compare(cls, expected_events: Any, actual_events: Any, **options: Any) -> Any:
        """Two traces side by side, aligned by turn, with the first divergence marked
        (a :class:`~arknb.widgets.compare.TraceCompareWidget`; ``labels=`` names the columns)."""
        from .compare import TraceCompareWidget

        return TraceCompareWidget(expected_events, actual_events, **options)
