"""What both widgets share: the bundled front end, the runtime hookup, and their lifetime.

A widget listens to its runtime's bus. The bus must never keep a widget alive, and
a widget nobody can see must stop listening, or every re-run of a notebook cell
leaves one more listener behind (500 re-runs, 500 listeners). Three things end a
widget's listener, all through :class:`BusListener`:

* ``widget.close()`` (and ``ipywidgets.Widget.close_all()``);
* garbage collection: the bus holds the widget only through a weak reference, and a
  finalizer unsubscribes when the widget goes. Until a view shows it, ipywidgets' own
  registry and the comm's message handler hold it weakly too (a widget made and dropped
  without ``close()``, or one a marimo cell re-run let go, is collected); once displayed
  (``_repr_mimebundle_``) they hold it as they hold any widget, since a view may use it;
* a re-run of the cell that made it: :data:`CELLS` remembers which widgets each
  cell's latest execution made (the cell id JupyterLab, VS Code and nbclient put in
  the execute request) and closes those of an earlier execution when the cell makes
  a new one. Outside a kernel, or with a front end that sends no cell id, nothing is
  replaced.

A widget class adopts all three by mixing in :class:`RuntimeWidget`, calling
``self._listen(bus)`` in ``__init__`` and keeping its ``_on_event(event)`` method.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable

from ..domain import invalid_argument

__all__ = ["CELLS", "STATIC", "BusListener", "CellWidgets", "RuntimeWidget", "bundle", "check_events",
           "check_runtime", "kernel_cell", "spawn"]

STATIC = Path(__file__).resolve().parent.parent / "static"
"""Folder of the built front end (``js/`` is built into it; the wheel ships it)."""


def bundle(name: str) -> str:
    """The text of a built front-end file, for a widget's ``_esm``/``_css``.

    Text rather than a path: anywidget watches a path for hot reload and connects every
    instance to that watcher for good, so a widget given a path is never collected.
    """
    return (STATIC / name).read_text(encoding="utf-8")

_log = logging.getLogger("arknb.widgets")

_RUNTIME_SURFACE = ("bus", "state", "controller", "start", "cancel")


def check_runtime(runtime: Any, widget: str) -> None:
    """Refuse, naming what is missing, anything that is not an AgentRuntime-like object."""
    missing = [name for name in _RUNTIME_SURFACE if not hasattr(runtime, name)]
    if missing:
        raise invalid_argument(f"{widget} needs an AgentRuntime (or a list of recorded events), got "
                               f"{type(runtime).__name__} without {', '.join(missing)}")


def check_events(events: Any, widget: str) -> list[Any]:
    """The recorded events as a list; refuses a non-iterable or items that are not events."""
    if isinstance(events, (str, bytes)) or not hasattr(events, "__iter__"):
        raise invalid_argument(f"{widget} events must be a list of AgentEvent or event dicts, "
                               f"got {type(events).__name__}")
    items = list(events)
    for i, event in enumerate(items):
        kind = event.get("type") if isinstance(event, dict) else getattr(event, "type", None)
        if not isinstance(kind, str):
            raise invalid_argument(f"{widget} events[{i}] is not an event (no 'type'): {type(event).__name__}")
    return items


# -- the bus listener -------------------------------------------------------------------

class BusListener:
    """``owner.<method>(event)`` for every event on ``bus``, holding ``owner`` weakly.

    The subscription ends on :meth:`close` or when ``owner`` is garbage-collected,
    whichever comes first (a ``weakref.finalize`` unsubscribes), so a runtime that
    outlives its widgets does not keep them, or their listeners, alive.

    A widget whose hot path is only to keep the event (the timeline: thousands of
    ``llm.chunk`` per answer) gives ``record``, a callable that must not hold the
    owner (e.g. the ``append`` of a list the owner keeps): every event goes to
    ``record`` first, and ``owner.<method>`` is then called only for events whose
    type is not in ``quiet``. A chunk then costs one C-level call, not a weak
    reference lookup and a method call.

    Example:
        >>> from arknb.events import EventBus
        >>> class W:
        ...     def on(self, event): pass
        >>> bus, w = EventBus(), W()
        >>> link = BusListener(bus, w, "on")
        >>> bus.has_listeners("x"), link.active
        (True, True)
        >>> del w; bus.has_listeners("x")     # collected: the listener went with it
        False
    """

    __slots__ = ("_finalizer", "__weakref__")

    def __init__(self, bus: Any, owner: Any, method: str, *, record: Callable[[Any], Any] | None = None,
                 quiet: Iterable[str] = ()) -> None:
        # A plain weak reference and the class's function rather than a WeakMethod:
        # calling a WeakMethod runs Python code, a weakref is a C call (every event pays it).
        owner_ref = weakref.ref(owner)
        function = getattr(type(owner), method)
        if record is None:
            def listener(event: Any) -> None:
                target = owner_ref()
                if target is not None:  # None only between collection and the finalizer
                    function(target, event)
        else:
            skip = frozenset(quiet)

            def listener(event: Any) -> None:
                record(event)
                if event.type not in skip:
                    target = owner_ref()
                    if target is not None:
                        function(target, event)

        # The finalizer holds the unsubscribe function, never the owner.
        self._finalizer = weakref.finalize(owner, bus.subscribe("*", listener))
        self._finalizer.atexit = False

    @property
    def active(self) -> bool:
        """True until closed or until the owner was collected."""
        return self._finalizer.alive

    def close(self) -> None:
        """Unsubscribe now (idempotent)."""
        self._finalizer()


# -- one live set of widgets per notebook cell ---------------------------------------------

def kernel_cell() -> tuple[str, str] | None:
    """``(cell id, execution id)`` of the notebook cell running now, or None.

    The cell id is what the front end sent in the execute request's metadata
    (``cellId``); the execution id is that request's message id, so two executions
    of one cell differ. None outside an IPython kernel or without a cell id.
    """
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return None
    kernel = getattr(get_ipython(), "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)
    if get_parent is None:
        return None
    try:
        parent = get_parent() or {}
    except Exception:  # an ipykernel without contextvar parents, or no request yet
        return None
    cell = (parent.get("metadata") or {}).get("cellId")
    execution = (parent.get("header") or {}).get("msg_id")
    if not cell or not execution:
        return None
    return str(cell), str(execution)


class CellWidgets:
    """The widgets each notebook cell's latest execution made.

    :meth:`claim` records a new widget under the running cell; when the cell runs
    again and makes a widget, the widgets of its earlier execution are closed (their
    outputs were cleared by the re-run, so nobody can see them any more).

    Args:
        locate: returns ``(cell id, execution id)`` for the code running now, or None
            (default: :func:`kernel_cell`). Tests inject their own.
    """

    def __init__(self, locate: Callable[[], tuple[str, str] | None] = kernel_cell) -> None:
        self.locate = locate
        self._by_cell: dict[str, tuple[str, list[weakref.ref]]] = {}

    def claim(self, widget: Any) -> None:
        """Record ``widget`` under the running cell; close what an earlier run of it made."""
        where = self.locate()
        if where is None:
            return
        cell, execution = where
        entry = self._by_cell.get(cell)
        if entry is not None and entry[0] != execution:
            for ref in entry[1]:
                old = ref()
                if old is not None and old is not widget:
                    try:
                        old.close()
                    except Exception:  # a widget that fails to close must not block the new one
                        _log.debug("closing a replaced widget failed", exc_info=True)
            entry = None
        if entry is None:
            entry = (execution, [])
            self._by_cell[cell] = entry
        entry[1].append(weakref.ref(widget))

    def cells(self) -> dict[str, int]:
        """How many live widgets each cell holds (for tests and diagnostics)."""
        return {cell: sum(1 for r in refs if r() is not None) for cell, (_, refs) in self._by_cell.items()}


CELLS = CellWidgets()
"""The process-wide registry both widgets claim their cell in."""


class RuntimeWidget:
    """Mixin for an ``anywidget.AnyWidget`` that listens to a runtime's bus.

    ``self._listen(bus)`` subscribes ``self._on_event`` weakly and claims the running
    notebook cell; ``close()`` stops listening and flushing, then closes the widget.
    Subclasses that batch with a ``Coalescer`` keep it in ``self._coalescer``; one
    that has more to end on close (tasks, a static companion) extends :meth:`_release`.
    """

    _link: BusListener | None = None
    _coalescer: Any = None

    def _listen(self, bus: Any, *, method: str = "_on_event", record: Callable[[Any], Any] | None = None,
                quiet: Iterable[str] = ()) -> None:
        """Listen to ``bus`` weakly (``record``/``quiet``: see :class:`BusListener`)."""
        self._link = BusListener(bus, self, method, record=record, quiet=quiet)
        CELLS.claim(self)
        self._hold(strongly=False)
        self._watch_comm(getattr(self, "comm", None))
        observe = getattr(self, "observe", None)
        if observe is not None:  # a host that gives the widget a comm of its own (marimo does)
            observe(lambda change: self._watch_comm(change["new"]), names="comm")

    def _watch_comm(self, comm: Any) -> None:
        """Stop listening when the comm closes, whoever closes it: marimo closes a re-run
        cell's comms without ``widget.close()``, and ipywidgets would keep the widget
        (and its listener) registered for ever."""
        if comm is None or getattr(comm, "_arknb_watched", False):
            return
        close, ref = comm.close, weakref.ref(self)

        def closing(*args: Any, **kwargs: Any) -> Any:
            widget = ref()
            if widget is not None:
                if widget.listening:  # (widget.close() released it already)
                    widget._release()
                from ipywidgets.widgets import widget as ipywidget

                if ipywidget._instances.get(getattr(comm, "comm_id", None)) is widget:
                    del ipywidget._instances[comm.comm_id]
            return close(*args, **kwargs)

        comm.close = closing
        comm._arknb_watched = True

    def _hold(self, *, strongly: bool) -> None:
        """Let ipywidgets' registry and the comm's message handler hold this widget
        ``strongly`` (as ipywidgets does) or only weakly (until a view shows it)."""
        comm = getattr(self, "comm", None)
        if comm is None:
            return
        from ipywidgets.widgets import widget as ipywidget  # (ipywidgets comes with anywidget)

        if strongly:
            ipywidget._instances[self.model_id] = self
            comm.on_msg(self._handle_msg)  # type: ignore[attr-defined]
            return
        if ipywidget._instances.get(self.model_id) is self:
            del ipywidget._instances[self.model_id]
        ref = weakref.ref(self)

        def handle(msg: Any) -> None:
            widget = ref()
            if widget is not None:
                widget._handle_msg(msg)

        comm.on_msg(handle)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The view's bundle (anywidget's); from now on the widget is held like any shown widget."""
        self._hold(strongly=True)
        return super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]

    @property
    def listening(self) -> bool:
        """True while the widget receives its runtime's events."""
        return self._link is not None and self._link.active

    def _release(self) -> None:
        """Stop listening and flushing (what ``close`` does before closing the comm).
        Safe on a half-built widget: ipywidgets also calls ``close()`` from ``__del__``."""
        if self._link is not None:
            self._link.close()
        if self._coalescer is not None:
            self._coalescer.close()

    def close(self) -> None:
        """Stop listening to the runtime and close the widget (its views go too)."""
        self._release()
        super().close()  # type: ignore[misc]


def spawn(coro: Awaitable[Any], tasks: set[asyncio.Future], on_error: Callable[[BaseException], None]) -> None:
    """Run ``coro`` as a background task on the running loop, never blocking the caller.

    The task is held in ``tasks`` until done; an exception goes to ``on_error``.
    """
    task = asyncio.ensure_future(coro)
    tasks.add(task)

    def done(t: asyncio.Future) -> None:
        tasks.discard(t)
        if t.cancelled():
            return
        exc = t.exception()
        if exc is not None:
            _log.debug("widget action failed", exc_info=exc)
            on_error(exc)

    task.add_done_callback(done)
