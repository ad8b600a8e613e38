"""Owning a session: one runtime per session and storage place in a process, and loading it.

Sessions continue, never get overwritten (DESIGN §7): a runtime created with the id of
a saved session loads it before its first run or decision. In a notebook the same cell
runs again and again, each time building a new runtime for the same session; the newest
one owns it. :func:`claim` records the owner with a weak reference only (a replaced
runtime that nobody holds is freed, and its entry with it) and detaches the one it
replaces: that runtime publishes ``runtime.detached``, ends an active run as cancelled
(its terminal save still lands, before the new owner reads the session) and refuses
every later run and decision. Across processes the revisions of the saved state keep
the same promise: a stale runtime's save fails with ``state_conflict``.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from functools import partial
from typing import TYPE_CHECKING, Hashable

from ..domain import ArkError, ErrorCode, ErrorLayer, Retryability
from ..events import EventTypes
from ..state import AgentState, storage_location
from .lifecycle import closed_error

if TYPE_CHECKING:
    from .runtime import AgentRuntime

__all__ = ["claim", "detach", "detached_error", "load_session"]

# (storage place, session id) -> the runtime that owns it. Weak: ownership never keeps
# a runtime alive.
_owners: dict[tuple[Hashable, str], weakref.ref] = {}
# Re-entrant: a weak reference's callback may run (garbage collection) while it is held.
_guard = threading.RLock()

# A restored session continues well past its last saved sequence number: the old
# process may have published events after that save (e.g. approval.required).
_RESTORE_SEQUENCE_GAP = 10_000


def _forget(key: tuple[Hashable, str], ref: weakref.ref) -> None:
    with _guard:
        if _owners.get(key) is ref:
            del _owners[key]


def claim(rt: AgentRuntime) -> AgentRuntime | None:
    """Make ``rt`` the owner of its session; returns the runtime it replaces, if one is alive."""
    key = (storage_location(rt.storage), rt.session_id)
    with _guard:
        ref = _owners.get(key)
        previous = ref() if ref is not None else None
        _owners[key] = weakref.ref(rt, partial(_forget, key))
    if previous is None or previous is rt:
        return None
    if key[0] == ("object", id(rt.storage)) and previous.storage is not rt.storage:
        return None  # an id reused by another object: not the same place (cannot happen while both live)
    return previous


def detach(rt: AgentRuntime, reason: str, message: str) -> asyncio.Task | None:
    """End ``rt``'s ownership of its session: publish ``runtime.detached``, cancel an active
    run, refuse what comes later. Returns the task of the run still finishing, if any."""
    if rt._detached is not None:
        return None
    rt._detached = reason
    rt._detached_message = message
    rt._emit(EventTypes.RUNTIME_DETACHED, {"reason": reason, "message": message})
    ctx = rt._active
    if ctx is None or ctx.task is None or ctx.task.done():
        return None
    rt.cancel()
    return ctx.task


def detached_error(rt: AgentRuntime) -> ArkError:
    """What a detached runtime answers to a run, a resume, a load or a decision
    (``runtime_closed`` once :meth:`~arknb.AgentRuntime.aclose` began)."""
    if rt._closing is not None or rt._detached == "closed":
        return closed_error(rt)
    return ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CONFLICT,
                    f"this runtime no longer owns session {rt.session_id!r} ({rt._detached}): "
                    f"{rt._detached_message}", Retryability.NEVER)


async def load_session(rt: AgentRuntime) -> AgentState | None:
    """Read the session's saved state into ``rt`` once; returns it (None if there is none).

    Waits first for the run of the runtime ``rt`` replaced, so that run's terminal save
    is what ``rt`` reads. With ``fresh=True`` the saved state is deleted instead (also
    one that cannot be read: that is how a user starts over).

    Raises:
        ArkError: the storage's load error (``state_corrupt`` naming the file,
            ``state_version_unsupported``, ``state_load_failed``); ``state_conflict`` if
            ``rt`` was detached meanwhile. Nothing is loaded then, and nothing is saved
            over the unreadable state: every run and decision keeps failing with it.
    """
    predecessor, rt._predecessor = rt._predecessor, None
    if predecessor is not None and not predecessor.done() and predecessor is not asyncio.current_task():
        try:
            await asyncio.wait({predecessor}, timeout=rt.save_timeout)
        except ValueError:  # a task of another event loop: nothing to wait for here
            pass
    if rt._detached is not None:
        raise detached_error(rt)
    if rt._fresh:
        await _bounded(rt, rt.storage.delete(rt.session_id), "delete")
        return None
    try:
        state = await _bounded(rt, rt.storage.load(rt.session_id), "load")
    except ArkError as exc:
        raise _unreadable(rt, exc) from None
    if state is None:
        return None
    if not isinstance(state, AgentState) or state.session_id != rt.session_id:
        raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                       f"{rt.storage!r}.load({rt.session_id!r}) returned {type(state).__name__} "
                       f"{getattr(state, 'session_id', '')!r}, not the session's AgentState")
    if rt._detached is not None:
        raise detached_error(rt)
    rt._state = state
    rt.loop_detector.restore(state.loop_window, state.loop_forgiven)
    rt._seq = max(rt._seq, state.event_sequence + _RESTORE_SEQUENCE_GAP)
    rt._emit(EventTypes.STATE_LOADED, lambda: {"revision": state.revision, "messages": len(state.history),
                                               "pending_approval": state.pending_approval is not None})
    return state


def _unreadable(rt: AgentRuntime, error: ArkError) -> ArkError:
    """A load error with the way forward: nothing is saved over the state, so the runtime
    keeps failing with it until it is fixed, or discarded with ``fresh=True``."""
    until = _UNTIL.get(error.code)
    if until is None:
        return error
    return ArkError(error.layer, error.code, f"{error.message}. Nothing is saved over it: runs and decisions of "
                    f"session {rt.session_id!r} fail with this error until it can be read ({until}), or start "
                    "the session over with AgentRuntime(..., fresh=True), which deletes it", error.retryability)


_UNTIL = {ErrorCode.STATE_CORRUPT: "fix it", ErrorCode.STATE_VERSION_UNSUPPORTED: "by a newer arknb",
          ErrorCode.STATE_LOAD_FAILED: "once the storage works again"}


async def _bounded(rt: AgentRuntime, call, what: str):
    try:
        return await asyncio.wait_for(call, rt.save_timeout)
    except asyncio.TimeoutError:
        raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_LOAD_FAILED,
                       f"the {what} of session {rt.session_id!r} from {rt.storage!r} did not finish within "
                       f"{rt.save_timeout:g} s (save_timeout)", Retryability.CONDITIONAL) from None
