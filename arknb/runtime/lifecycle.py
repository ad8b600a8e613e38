"""Lifecycle: how a runtime gives up its session (DESIGN §14 "Lifecycle").

``await runtime.aclose(grace=2.0)`` asks an active run to suspend at its next safe
checkpoint (a turn boundary, where every tool call has its result) and waits up to
``grace`` seconds; a run that does not get there is cancelled, which answers its open
calls and saves it ended. Either way the session is saved suspended (``resume()``
continues it) or ended with ``last_stop_reason`` recorded, never as if a run were still
in progress. The extensions are closed meanwhile (``Extension.on_close``): a parent's
sub-agents are closed with it, so a delegation suspends with its child and no child keeps
its session's lease. On a durable store what is pending is committed and the session's lease
released. Then the runtime publishes ``runtime.detached`` (reason ``"closed"``),
refuses new runs and decisions with ``runtime_closed``, and closes its own event bus.

The same happens by itself when the process ends with a run still active:

* **Jupyter kernel shutdown or restart.** ipykernel handles ``shutdown_request`` on its
  control thread: ``do_shutdown`` sets ``shell.exit_now`` (which stops the main event
  loop 0.1 s later), then the kernel stops the shell loop and the process exits. The
  runs live on that main loop, so arknb wraps the kernel's ``do_shutdown``: before the
  kernel's own shutdown starts, it closes every runtime with an active run on the
  still-running loop (``run_coroutine_threadsafe``) and waits for that from the control
  thread. jupyter_client waits ``shutdown_wait_time`` (5 s) before it kills a kernel,
  so with the default grace (2 s to a checkpoint, at most as long again to cancel and
  save) the saves finish in time.
* **Anything else that ends the interpreter** (``exit()`` in a cell, a script that stops
  its loop): a hook in ``threading``'s exit callbacks, which run before the thread pools
  shut down (``FileStateStorage`` saves through ``asyncio.to_thread``) and before
  ``atexit``, runs the same close on the stopped loop. A script whose ``asyncio.run``
  ended cancels the run's task itself; the run then ends ``cancelled`` and saves on its
  way out (``_loop.drive``).

A hard kill (``SIGKILL``, a kernel that did not exit in time) runs nothing: that is what
the durable stores are for (DESIGN §13).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import sys
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

from ..domain import ArkError, ErrorCode, ErrorLayer, invalid_argument
from ..events import EventTypes

if TYPE_CHECKING:
    from .result import AgentRunResult
    from .runtime import AgentRuntime

__all__ = ["DEFAULT_GRACE", "close_runtime", "closed_error", "install_shutdown_hooks", "shutdown_active_runtimes",
           "track"]

DEFAULT_GRACE = 2.0
"""Seconds an active run gets to reach a safe checkpoint when its runtime is closed."""

_MIN_CANCEL_SECONDS = 1.0
_log = logging.getLogger("arknb.lifecycle")
_tracked: weakref.WeakSet[AgentRuntime] = weakref.WeakSet()
_install_lock = threading.Lock()
_installed = {"exit": False, "kernel": None}


def closed_error(rt: AgentRuntime) -> ArkError:
    """The ``runtime_closed`` refusal of a run, a resume, a load or a decision."""
    return ArkError(ErrorLayer.RUNTIME, ErrorCode.RUNTIME_CLOSED,
                    f"this runtime was closed (aclose) and no longer owns session {rt.session_id!r}: create a "
                    f"new AgentRuntime with session_id={rt.session_id!r} and the same storage to continue it")


async def close_runtime(rt: AgentRuntime, grace: float = DEFAULT_GRACE) -> AgentRunResult | None:
    """What :meth:`AgentRuntime.aclose` does; returns the result of the run it ended, if any.

    Closing twice (or concurrently) closes once: later calls wait for the first and
    return its result.
    """
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or not grace >= 0:
        raise invalid_argument(f"aclose: grace must be a number of seconds >= 0, got {grace!r}")
    if rt._closing is not None:
        return await asyncio.shield(rt._closing)
    rt._closing = asyncio.get_running_loop().create_future()
    try:
        result = await _end_run_and_extensions(rt, float(grace))
        await rt.tools.aclose_sources()  # MCP servers and other tool sources (DESIGN §15)
        # On a durable store: commit what is pending and release the session's lease, so
        # another process may open it (DESIGN §13); nothing to do on the other stores.
        await rt._invocations.aclose()
    except BaseException as exc:
        rt._closing.set_exception(exc)
        rt._closing.exception()  # retrieved: a later aclose() re-raises it, nobody is left unwarned
        raise
    finally:
        _detach(rt)
    rt._closing.set_result(result)
    return result


async def _end_run_and_extensions(rt: AgentRuntime, grace: float) -> AgentRunResult | None:
    """End the active run, and close the extensions while it ends (each ``on_close``).

    At the same time, not after: a sub-agent's run is the tool call the parent's run waits
    for, so the parent reaches its checkpoint only once its children suspend at theirs
    (their calls then pause the parent's batch, resumable). The run is asked to suspend
    first, so a call that the children's suspension answers starts no new turn.
    """
    rt.request_suspend()
    closing = asyncio.ensure_future(rt._extensions.close(rt, grace)) if rt._extensions else None
    try:
        return await _end_active_run(rt, grace)
    finally:
        if closing is not None:
            await closing


async def _end_active_run(rt: AgentRuntime, grace: float) -> AgentRunResult | None:
    ctx = rt._active
    if ctx is None or ctx.task is None:
        return None
    task = ctx.task
    if ctx.task is asyncio.current_task():
        # aclose() from inside the run (a hook or a listener): it cannot wait for itself.
        rt.request_suspend()
        return None
    rt.request_suspend()
    done, _ = await asyncio.wait({task}, timeout=grace)
    if not done:
        reason = (f"runtime closed: the run did not reach a safe checkpoint within {grace:g} s "
                  "(it was cancelled; its open tool calls are answered as not executed)")
        ctx.cancel.cancel(reason)  # the token keeps the first reason: this one, not cancel()'s default
        rt.cancel()
        done, _ = await asyncio.wait({task}, timeout=max(grace, _MIN_CANCEL_SECONDS))
        if not done:
            _log.warning("arknb: run %s of session %r did not finish after being cancelled (a save that does "
                         "not return?); the runtime is closed without its final save", ctx.run_id, rt.session_id)
            return None
    if task.cancelled() or task.exception() is not None:
        return None  # a run that raised (a load error, say) reports it to whoever awaits its handle
    return task.result()


def _detach(rt: AgentRuntime) -> None:
    """Publish ``runtime.detached`` and let go of what the runtime holds."""
    _tracked.discard(rt)
    if rt._detached is None:  # (one replaced by a newer runtime said so already)
        rt._detached = "closed"
        rt._detached_message = "closed with aclose()"
        state = rt.state
        rt._emit(EventTypes.RUNTIME_DETACHED, lambda: {
            "reason": "closed", "message": rt._detached_message, "last_stop_reason": state.last_stop_reason,
            "resumable": bool(state.is_running and not state.not_resumable)})
    if rt._owns_bus:
        rt.bus.close()  # drops every listener (widgets, run_stream consumers) it still holds


# -- process shutdown ------------------------------------------------------------------

def track(rt: AgentRuntime) -> None:
    """Remember ``rt`` (weakly) as a runtime that may hold an active run at shutdown."""
    _tracked.add(rt)
    if not _installed["exit"] or (_installed["kernel"] is None and "ipykernel" in sys.modules):
        install_shutdown_hooks()


def install_shutdown_hooks() -> None:
    """Install the process-exit hook and, inside an ipykernel, the kernel-shutdown hook
    (each once; called by the first run a runtime starts)."""
    with _install_lock:
        if not _installed["exit"]:
            register = getattr(threading, "_register_atexit", None)
            try:
                if register is None:
                    raise RuntimeError("no threading._register_atexit")
                # These run before atexit, newest first (CPython's threading._shutdown).
                # concurrent.futures.thread registers the callback that makes thread pools
                # refuse new work when it is first imported, which asyncio does lazily: import
                # it now so that ours is newer and runs first, while saves can still use
                # asyncio.to_thread.
                import concurrent.futures.thread  # noqa: F401

                register(_at_exit)
            except RuntimeError:  # too late (the interpreter is already shutting down) or not CPython
                atexit.register(_at_exit)
            _installed["exit"] = True
        if _installed["kernel"] is None:
            kernel = _current_kernel()
            if kernel is not None and not getattr(kernel.do_shutdown, "__arknb_wrapped__", False):
                kernel.do_shutdown = _wrap_do_shutdown(kernel.do_shutdown)
                _installed["kernel"] = weakref.ref(kernel)


def _current_kernel() -> Any:
    """The running ipykernel's kernel object, or None (never imports IPython itself)."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if callable(get) else None
    kernel = getattr(shell, "kernel", None)
    return kernel if callable(getattr(kernel, "do_shutdown", None)) else None


def _wrap_do_shutdown(original: Any) -> Any:
    def do_shutdown(restart: bool) -> Any:
        # On ipykernel's control thread, while the main loop still runs the runs.
        try:
            shutdown_active_runtimes()
        except Exception:  # the kernel must shut down whatever happened here
            _log.exception("arknb: closing runtimes at kernel shutdown failed")
        return original(restart)

    do_shutdown.__arknb_wrapped__ = True  # type: ignore[attr-defined]
    do_shutdown.__wrapped__ = original  # type: ignore[attr-defined]
    return do_shutdown


def shutdown_active_runtimes(grace: float = DEFAULT_GRACE) -> int:
    """Close every tracked runtime that has an active run, from whatever thread this is
    called on; returns how many were closed (or scheduled to close).

    A runtime whose loop runs in another thread is closed there and waited for; one whose
    loop is stopped is closed by running that loop until it is done; one whose loop runs
    in this very thread (nothing can wait for it here) is scheduled to close.
    """
    active = [rt for rt in list(_tracked) if rt._active is not None and rt._active.task is not None]
    waits: list[concurrent.futures.Future] = []
    for rt in active:
        loop = rt._active.task.get_loop()
        if loop.is_closed():
            continue  # its task can never run again (asyncio.run already ended it)
        try:
            running_here = asyncio.get_running_loop() is loop
        except RuntimeError:
            running_here = False
        if running_here:
            loop.create_task(rt.aclose(grace))
        elif loop.is_running():
            waits.append(asyncio.run_coroutine_threadsafe(rt.aclose(grace), loop))
        else:
            _run_stopped_loop(loop, rt, grace)
    if waits:
        # The checkpoint wait, then the cancel and its save (see close_runtime), with a margin.
        concurrent.futures.wait(waits, timeout=grace + max(grace, _MIN_CANCEL_SECONDS) + 1.0)
    return len(active)


def _run_stopped_loop(loop: asyncio.AbstractEventLoop, rt: AgentRuntime, grace: float) -> None:
    """Run ``rt.aclose(grace)`` on a loop that was stopped (not closed) until it is done.

    A stop that was already scheduled when the loop stopped (ipykernel's ``exit_now``
    schedules one 0.1 s ahead, then stops the loop itself) fires as soon as the loop runs
    again: the loop is simply run again, up to the time the close can take.
    """
    closing = loop.create_task(rt.aclose(grace))
    deadline = time.monotonic() + grace + max(grace, _MIN_CANCEL_SECONDS) + 1.0
    while not closing.done() and time.monotonic() < deadline:
        try:
            loop.run_until_complete(closing)
        except RuntimeError as exc:
            if "stopped before" not in str(exc):
                raise
        except Exception:
            _log.exception("arknb: closing runtime of session %r at exit failed", rt.session_id)
            return


def _at_exit() -> None:
    try:
        shutdown_active_runtimes()
    except Exception:  # never turn interpreter exit into a crash
        _log.exception("arknb: closing runtimes at exit failed")
