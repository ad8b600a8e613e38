"""Worker threads for blocking tool functions.

A sync tool must never stall the kernel's event loop (the widgets would freeze), so
it runs on a worker thread. ``asyncio.to_thread`` does that through
``ThreadPoolExecutor`` and ``wrap_future``: two futures, a condition variable and a
callback chain per call, about twice the CPU of the hand-off itself on these machines
(measured in ``benchmarks/README.md``). Here one call is one queue item and one
``call_soon_threadsafe``: the worker runs the function in a copy of the caller's
context (as ``to_thread`` does) and sets the caller's asyncio future directly.

Threads start on demand, up to ``MAX_WORKERS``, and idle ones are reused; a batch of
blocking calls still runs concurrently. They are daemon threads: a tool stuck in a
blocking call cannot keep the interpreter from exiting.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import queue
import threading
from typing import Any, Callable

__all__ = ["MAX_WORKERS", "run_blocking"]

MAX_WORKERS = min(32, (os.cpu_count() or 1) + 4)
"""The most threads that run tools at once (the default executor's rule)."""


class _WorkerPool:
    __slots__ = ("_jobs", "_lock", "_threads", "_idle")

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0

    def submit(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future,
               context: contextvars.Context, fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1  # that thread takes this job
            elif self._threads < MAX_WORKERS:
                self._threads += 1
                threading.Thread(target=self._work, name=f"arknb-tool-{self._threads}", daemon=True).start()
            # else: every thread is busy; the job waits in the queue for the first free one
        self._jobs.put((loop, future, context, fn, args, kwargs))

    def _work(self) -> None:
        jobs = self._jobs
        while True:
            loop, future, context, fn, args, kwargs = jobs.get()
            try:
                value = context.run(fn, *args, **kwargs)
            except BaseException as exc:  # handed to the awaiting task, which decides
                outcome: tuple = (None, exc)
            else:
                outcome = (value, None)
            del fn, args, kwargs, context  # keep nothing of a finished call alive while idle
            with self._lock:
                self._idle += 1
            try:
                loop.call_soon_threadsafe(_settle, future, *outcome)
            except RuntimeError:  # the loop was closed while the call ran: nobody waits
                pass
            del loop, future, outcome

    def _after_fork(self) -> None:
        # A forked child has none of the parent's threads.
        self.__init__()


def _settle(future: asyncio.Future, value: Any, error: BaseException | None) -> None:
    if future.done():  # the awaiting task was cancelled meanwhile
        return
    if error is None:
        future.set_result(value)
    else:
        future.set_exception(error)


_POOL = _WorkerPool()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_POOL._after_fork)


async def run_blocking(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``await`` ``fn(*args, **kwargs)`` run on a worker thread, in a copy of the current
    context. Cancelling the awaiting task stops the wait, not the thread (as with
    ``asyncio.to_thread``: Python cannot interrupt a running function)."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    _POOL.submit(loop, future, contextvars.copy_context(), fn, args, kwargs)
    return await future
