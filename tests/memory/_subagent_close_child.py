"""Child process of the sub-agent lifecycle tests (tests/memory/test_subagent_close.py).

``shutdown``: a parent delegates to the ``worker`` sub-agent, whose ``work`` tool (one line
per execution in ``work.log``) runs twice, one turn each. While the first runs, another
thread closes every runtime as a kernel shutdown does
(``lifecycle.shutdown_active_runtimes``); then the process prints ``CLOSED <parent's stop
reason> <child's stop reason>`` and blocks until SIGKILL.

``paused``: a parent delegates to the ``cleaner`` sub-agent until the cleaner waits for
approval, closes the parent (``aclose``), prints ``CLOSED <namespaced approval id>`` and
stays alive (the test restores the session meanwhile) until SIGKILL. ``held``: the same
without the close (the parent and its child keep their leases), printing ``HELD <id>``.

``between``: the same delegation to ``worker``, killed after its first ``work`` finished
(its result saved) and before its next model call answers: prints ``BETWEEN`` from the
child's ``before_model_call`` of turn 2 and blocks until SIGKILL.

Usage: python _subagent_close_child.py <directory> <store> <shutdown|paused|held|between>
"""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import arknb as ark  # noqa: E402
from arknb.runtime import lifecycle  # noqa: E402
from tests.memory._subagent_kit import cleaner, delegate, open_store, worker  # noqa: E402


async def shutdown(folder: Path, kind: str) -> None:
    storage = open_store(kind, folder)
    closed = asyncio.Event()
    loop = asyncio.get_running_loop()

    def kernel_control_thread() -> None:  # what the kernel-shutdown hook does, from its own thread
        lifecycle.shutdown_active_runtimes()
        loop.call_soon_threadsafe(closed.set)

    async def while_working(n: int) -> None:
        if n == 1:
            threading.Thread(target=kernel_control_thread, daemon=True).start()
            await asyncio.sleep(0.2)  # still running when the close asks the runs to suspend

    parent = ark.AgentRuntime(ark.ScriptedModel([delegate("d1", "worker", "Work twice.")]), storage=storage,
                              session_id="boss", subagents=[worker(folder, storage, on_work=while_working)])
    run = asyncio.ensure_future(parent.run("Get the work done."))
    await closed.wait()
    result = await run
    child = await storage.load("boss.worker.1")
    print(f"CLOSED {result.stop_reason.value} {child.last_stop_reason}", flush=True)
    await asyncio.Event().wait()  # until SIGKILL


async def between(folder: Path, kind: str) -> None:
    storage = open_store(kind, folder)

    async def before_model(turn: int) -> None:
        if turn == 2:
            print("BETWEEN", flush=True)
            await asyncio.Event().wait()  # until SIGKILL

    parent = ark.AgentRuntime(ark.ScriptedModel([delegate("d1", "worker", "Work twice.")]), storage=storage,
                              session_id="boss", subagents=[worker(folder, storage, on_model_call=before_model)])
    result = await parent.run("Get the work done.")
    print(f"UNEXPECTED {result.stop_reason} {result.error}", flush=True)


async def paused(folder: Path, kind: str, close: bool = True) -> None:
    storage = open_store(kind, folder)
    parent = ark.AgentRuntime(ark.ScriptedModel([delegate("d1", "cleaner", "Clear the cache in /tmp/cache.")]),
                              storage=storage, session_id="boss", subagents=[cleaner(folder, storage)])
    result = await parent.run("Free some disk space.")
    pending = parent.controller.list_pending_approvals()
    if result.stop_reason != "awaiting_approval" or len(pending) != 1:
        print(f"UNEXPECTED {result.stop_reason} {result.error} {pending}", flush=True)
        return
    if close:
        await parent.aclose()
    print(f"{'CLOSED' if close else 'HELD'} {pending[0].approval_id}", flush=True)
    await asyncio.Event().wait()  # alive, until SIGKILL


if __name__ == "__main__":
    directory, store, mode = sys.argv[1:4]
    modes = {"shutdown": shutdown, "paused": paused, "held": lambda f, k: paused(f, k, close=False),
             "between": between}
    asyncio.run(modes[mode](Path(directory), store))
