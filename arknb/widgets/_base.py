"""What both widgets share: the bundled front end's location and the runtime hookup."""

from __future__ import annotations

import asyncio
import inspect
import logging
from pathlib import Path
from typing import Any, Awaitable, Callable

__all__ = ["STATIC", "call_maybe_async", "spawn"]

STATIC = Path(__file__).resolve().parent.parent / "static"
"""Folder of the built front end (``js/`` is built into it; the wheel ships it)."""

_log = logging.getLogger("arknb.widgets")


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


def call_maybe_async(fn: Callable[..., Any], *args: Any, tasks: set[asyncio.Future],
                     on_error: Callable[[BaseException], None]) -> Any:
    """Call ``fn``; if it returns an awaitable, schedule it with :func:`spawn`."""
    outcome = fn(*args)
    if inspect.isawaitable(outcome):
        spawn(outcome, tasks, on_error)
        return None
    return outcome
