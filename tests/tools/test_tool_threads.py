"""The worker threads that run sync tools (arknb.tools._threads)."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from arknb.tools import _threads
from arknb.tools._threads import run_blocking

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="unset")


async def test_runs_the_function_on_another_thread_and_returns_its_value():
    loop_thread = threading.get_ident()
    value, thread = await run_blocking(lambda a, b=0: (a + b, threading.get_ident()), 2, b=3)
    assert value == 5
    assert thread != loop_thread


async def test_the_function_sees_the_callers_context_variables():
    request_id.set("r-42")
    assert await run_blocking(request_id.get) == "r-42"


async def test_an_exception_reaches_the_awaiting_task_as_raised():
    def boom() -> None:
        raise KeyError("missing")

    with pytest.raises(KeyError, match="missing"):
        await run_blocking(boom)


async def test_blocking_calls_run_concurrently():
    # Three calls that can only finish if all three run at the same time.
    barrier = threading.Barrier(3, timeout=5)
    results = await asyncio.gather(*(run_blocking(barrier.wait) for _ in range(3)))
    assert sorted(results) == [0, 1, 2]


async def test_more_calls_than_threads_all_complete(monkeypatch):
    monkeypatch.setattr(_threads, "MAX_WORKERS", 2)
    pool = _threads._WorkerPool()
    monkeypatch.setattr(_threads, "_POOL", pool)
    release = threading.Event()

    def wait_then(n: int) -> int:
        assert release.wait(timeout=5)
        return n

    calls = [asyncio.ensure_future(run_blocking(wait_then, n)) for n in range(6)]
    await asyncio.sleep(0)
    assert pool._threads == 2  # the other four wait in the queue for a free thread
    release.set()
    assert await asyncio.gather(*calls) == list(range(6))


async def test_cancelling_the_wait_leaves_the_thread_to_finish_quietly():
    loop = asyncio.get_running_loop()
    problems: list[dict] = []
    loop.set_exception_handler(lambda _loop, context: problems.append(context))
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(timeout=5)
        finished.set()
        return "late"

    waiting = asyncio.ensure_future(run_blocking(slow))
    assert await asyncio.to_thread(started.wait, 5)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    release.set()
    assert await asyncio.to_thread(finished.wait, 5)
    # The late result is handed to the loop and dropped there: nothing is reported.
    await run_blocking(lambda: None)  # a later call on the same threads still works
    assert problems == []
