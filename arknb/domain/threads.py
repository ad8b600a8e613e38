"""Worker threads for blocking calls: sync tools, sync hooks with a timeout, SQLite I/O.

A blocking call must never stall the kernel's event loop (the widgets would freeze),
so it runs on a worker thread. ``asyncio.to_thread`` and ``run_in_executor`` do that
through ``ThreadPoolExecutor`` and ``wrap_future``: two futures, a condition variable
and a callback chain per call, about twice the CPU of the hand-off itself on these
machines (``benchmarks/README.md``). Here one call is one queue item and one
``call_soon_threadsafe``: the worker runs the function in a copy of the caller's
context (as ``to_thread`` does) and sets the caller's asyncio future directly.

Threads start on demand, up to ``max_workers``, and idle ones are reused. They are
daemon threads: a call stuck in blocking code cannot keep the interpreter from exiting.

Example:
    >>> workers = WorkerThreads(max_workers=1, name="demo")
    >>> await workers.run(sum, [1, 2, 3])      # doctest: +SKIP
    6
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import queue
import threading
import weakref
from typing import Any, Callable, TypeVar

__all__ = ["DEFAULT_MAX_WORKERS", "WorkerThreads", "run_blocking"]

T = TypeVar("T")

DEFAULT_MAX_WORKERS = min(32, (os.cpu_count() or 1) + 4)
"""The default executor's rule for how many blocking calls run at once."""

_STOP = object()
_POSTED = object()  # the "future" of a call nobody waits for (post)


class WorkerThreads:
    """A small pool of daemon threads that run blocking calls for asyncio code.

    With ``max_workers=1`` every call runs on the same thread, one after the other:
    what an object that owns a thread-bound resource (an SQLite connection) needs.

    Args:
        max_workers: the most threads (and so the most calls running at once).
        name: the threads' name prefix.
    """

    def __init__(self, max_workers: int = DEFAULT_MAX_WORKERS, *, name: str = "arknb-worker") -> None:
        if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
            raise ValueError(f"max_workers must be a positive int, got {max_workers!r}")
        self.max_workers = max_workers
        self.name = name
        self._reset()
        _after_fork.add(self)

    def _reset(self) -> None:
        # Also the state of a forked child, which has none of the parent's threads.
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._pool = _PoolState()
        self._threads: list[threading.Thread] = []
        self._stopped = False
        # The threads hold the queue and the counters, never this object: a pool
        # nobody references any more is collected, and its threads are told to exit.
        weakref.finalize(self, _stop_threads, self._jobs, self._threads)

    @property
    def thread_count(self) -> int:
        """How many threads were started (they are reused, never more than ``max_workers``)."""
        return len(self._threads)

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``await`` ``fn(*args, **kwargs)`` run on a worker thread, in a copy of the
        current context. Its exception is raised here. Cancelling the awaiting task stops
        the wait, not the call (as with ``asyncio.to_thread``: Python cannot interrupt a
        running function).

        Raises:
            RuntimeError: after :meth:`stop`.
        """
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._submit((loop, future, contextvars.copy_context(), fn, args, kwargs))
        return await future

    def post(self, fn: Callable[..., Any], /, *args: Any) -> None:
        """Run ``fn(*args)`` on a worker thread without waiting for it (nobody is told when
        it ends; its exceptions are ignored, so ``fn`` reports its own).

        Raises:
            RuntimeError: after :meth:`stop`.
        """
        self._submit((None, _POSTED, None, fn, args, {}))

    def stop(self, last: Callable[[], Any] | None = None, *, wait: bool = False) -> None:
        """Refuse new calls; the threads finish the queued ones, then exit.

        Args:
            last: run on a worker after the queued calls (e.g. closing a connection
                the thread owns); its exceptions are ignored.
            wait: block until every thread has exited.
        """
        with self._pool.lock:
            if self._stopped:
                return
            self._stopped = True
            threads = list(self._threads)
        if last is not None:
            if threads:
                self._jobs.put((None, None, None, last, (), {}))
            else:
                _quietly(last)
        _stop_threads(self._jobs, threads)
        if wait:
            current = threading.current_thread()
            for thread in threads:
                if thread is not current:
                    thread.join()

    def _submit(self, job: tuple) -> None:
        pool = self._pool
        with pool.lock:
            if self._stopped:
                raise RuntimeError(f"{self.name} workers are stopped")
            if pool.idle:
                pool.idle -= 1  # that thread takes this job
            elif len(self._threads) < self.max_workers:
                thread = threading.Thread(target=_work, args=(self._jobs, pool), daemon=True,
                                          name=f"{self.name}-{len(self._threads) + 1}")
                self._threads.append(thread)
                thread.start()
            # else: every thread is busy; the job waits in the queue for the first free one
        self._jobs.put(job)

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else f"{len(self._threads)}/{self.max_workers} threads"
        return f"WorkerThreads({self.name!r}, {state})"


class _PoolState:
    __slots__ = ("lock", "idle")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle = 0


def _work(jobs: queue.SimpleQueue, pool: _PoolState) -> None:
    while True:
        job = jobs.get()
        if job is _STOP:
            return
        loop, future, context, fn, args, kwargs = job
        del job
        if future is None:  # the ``last`` call of stop()
            _quietly(fn)
            continue
        if future is _POSTED:
            _quietly(fn, *args)
            del fn, args, kwargs
            with pool.lock:
                pool.idle += 1
            continue
        try:
            value = context.run(fn, *args, **kwargs)
        except BaseException as exc:  # handed to the awaiting task, which decides
            outcome: tuple = (None, exc)
        else:
            outcome = (value, None)
        del fn, args, kwargs, context  # keep nothing of a finished call alive while idle
        with pool.lock:
            pool.idle += 1
        try:
            loop.call_soon_threadsafe(_settle, future, *outcome)
        except RuntimeError:  # the loop was closed while the call ran: nobody waits
            pass
        del loop, future, outcome


def _stop_threads(jobs: queue.SimpleQueue, threads: list[threading.Thread]) -> None:
    for _ in threads:
        jobs.put(_STOP)


def _settle(future: asyncio.Future, value: Any, error: BaseException | None) -> None:
    if future.done():  # the awaiting task was cancelled meanwhile
        return
    if error is None:
        future.set_result(value)
    else:
        future.set_exception(error)


def _quietly(fn: Callable[..., Any], *args: Any) -> None:
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 - a clean-up step must not kill the worker
        pass


_after_fork: weakref.WeakSet[WorkerThreads] = weakref.WeakSet()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: [w._reset() for w in list(_after_fork)])

_shared = WorkerThreads(name="arknb-tool")


async def run_blocking(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run ``fn(*args, **kwargs)`` on arknb's shared worker threads (see :meth:`WorkerThreads.run`)."""
    return await _shared.run(fn, *args, **kwargs)
