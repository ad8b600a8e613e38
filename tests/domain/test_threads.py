"""WorkerThreads: the threads that run blocking calls (sync tools, storage I/O)."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from arknb.domain.threads import WorkerThreads, run_blocking

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


async def test_more_calls_than_threads_all_complete():
    workers = WorkerThreads(max_workers=2, name="test")
    release = threading.Event()

    def wait_then(n: int) -> int:
        assert release.wait(timeout=5)
        return n

    calls = [asyncio.ensure_future(workers.run(wait_then, n)) for n in range(6)]
    await asyncio.sleep(0)
    assert workers.thread_count == 2  # the other four wait in the queue for a free thread
    release.set()
    assert await asyncio.gather(*calls) == list(range(6))
    workers.stop(wait=True)


async def test_one_worker_runs_every_call_on_the_same_thread_in_order():
    workers = WorkerThreads(max_workers=1, name="owner")
    seen: list[tuple[int, int]] = []
    await asyncio.gather(*(workers.run(lambda n=n: seen.append((n, threading.get_ident()))) for n in range(5)))
    assert [n for n, _ in seen] == list(range(5))
    assert len({ident for _, ident in seen}) == 1
    workers.stop(wait=True)


async def test_stop_runs_the_last_call_after_the_queued_ones_then_refuses_new_calls():
    workers = WorkerThreads(max_workers=1, name="closing")
    order: list[str] = []
    release = threading.Event()
    queued = [asyncio.ensure_future(workers.run(release.wait, 5)),
              asyncio.ensure_future(workers.run(order.append, "queued"))]
    await asyncio.sleep(0)
    workers.stop(lambda: order.append("last"))
    release.set()
    await asyncio.gather(*queued)
    await asyncio.to_thread(workers._threads[0].join, 5)
    assert order == ["queued", "last"]
    assert not workers._threads[0].is_alive()
    with pytest.raises(RuntimeError, match="stopped"):
        await workers.run(order.append, "too late")


async def test_a_posted_call_runs_in_order_with_the_others_and_its_failure_stops_nothing():
    workers = WorkerThreads(max_workers=1, name="post")
    order: list[str] = []

    def fail() -> None:
        order.append("posted failing")
        raise RuntimeError("nobody waits for this")

    workers.post(order.append, "posted")
    workers.post(fail)
    assert await workers.run(lambda: order.append("awaited") or len(order)) == 3
    assert order == ["posted", "posted failing", "awaited"]
    assert workers.thread_count == 1  # the failure did not cost the thread
    workers.stop(wait=True)
    with pytest.raises(RuntimeError):
        workers.post(order.append, "late")


def test_max_workers_must_be_a_positive_int():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="max_workers"):
            WorkerThreads(max_workers=bad)


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


async def test_the_threads_of_a_pool_nobody_references_exit():
    import gc

    workers = WorkerThreads(max_workers=1, name="forgotten")
    await workers.run(lambda: None)
    thread = workers._threads[0]
    del workers
    gc.collect()
    await asyncio.to_thread(thread.join, 5)
    assert not thread.is_alive()
