"""What both widgets share: the bundled front end's location and the runtime hookup."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any, Awaitable, Callable

from ..domain import invalid_argument

__all__ = ["STATIC", "check_events", "check_runtime", "detach", "spawn"]

STATIC = Path(__file__).resolve().parent.parent / "static"
"""Folder of the built front end (``js/`` is built into it; the wheel ships it)."""

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


def detach(widget: Any) -> None:
    """Stop a widget listening to its runtime's bus and flushing (what ``close`` does first)."""
    if widget._unsubscribe is not None:
        widget._unsubscribe()
        widget._unsubscribe = None
    widget._coalescer.close()


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
