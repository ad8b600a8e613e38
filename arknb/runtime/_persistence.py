"""Persistence phase: every save goes through here (seed 000 §9).

Autosaves (after user input, after model text, after a tool batch) may be skipped by a
``before_persist_state`` hook. Awaiting-approval, suspend, decision and terminal saves
are mandatory: ``skip`` is ignored and a failed terminal save marks the session not
resumable. Every save runs the secret lint first, which redacts what it finds (in the
saved copy and in memory). A save is never claimed that did not happen.

Saves are compare-and-swaps (DESIGN §8): each is based on the revision the runtime
holds and returns the next one, which the runtime keeps. A runtime issues its saves one
at a time, each within ``save_timeout`` seconds. A save that overruns (or whose waiter
is cancelled) is not abandoned by the storage: it may still land, so the runtime keeps
it as *unsettled*, and its next save first waits for it (learning the revision it
stored) instead of racing it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..domain import ArkError, ErrorCode, ErrorInfo, ErrorLayer, Retryability
from ..events import EventTypes
from ..events.envelope import flat_payload
from ..hooks import HookSlot, PersistAction, StatePersistenceHookContext
from ..state import AgentState
from ._redaction import lint_before_save

if TYPE_CHECKING:
    from ._context import RunContext
    from .runtime import AgentRuntime

__all__ = ["SaveOutcome", "autosave", "mark_not_resumable", "not_ours", "persist", "persist_terminal", "save_error",
           "save_state"]

# Refusals that say the stored state is not ours to write: another runtime saved it,
# or it cannot be read. Marking it not resumable would meddle with it.
_NOT_OURS = frozenset({ErrorCode.STATE_CONFLICT, ErrorCode.STATE_CORRUPT, ErrorCode.STATE_VERSION_UNSUPPORTED,
                       ErrorCode.LEASE_LOST, ErrorCode.STORE_VERSION_UNSUPPORTED})

# Errors a run or a decision reports as they are (anything else becomes state_save_failed).
_REPORTED_AS_IS = frozenset({ErrorCode.STATE_SAVE_FAILED, ErrorCode.SECRET_IN_STATE, *_NOT_OURS})


class SaveOutcome:
    """The result of one save attempt."""

    __slots__ = ("ok", "skipped", "error")

    def __init__(self, ok: bool, skipped: bool = False, error: ArkError | None = None) -> None:
        self.ok = ok
        self.skipped = skipped
        self.error = error

    def __bool__(self) -> bool:
        return self.ok


async def persist(rt: AgentRuntime, ctx: RunContext | None, reason: str, *, mandatory: bool = False,
                  run_error: ErrorInfo | None = None, candidate: AgentState | None = None,
                  run_id: str | None = None, hurry: bool = False, operations: tuple = ()) -> SaveOutcome:
    """Run the persistence hooks, then save the runtime's state to its storage.

    Args:
        candidate: save this state instead of the runtime's, and make it the runtime's
            state only once it is saved (a decision is not taken before it is recorded).
        operations: operation records committed with this save or not at all (a person's
            in-doubt decision, see ``record_in_doubt_decision``).
        hurry: do not wait for an earlier save that has not finished (a cancelled run
            ends promptly even when the storage hangs).
    """
    run_id = run_id or (ctx.run_id if ctx is not None else (rt.state.current_run_id or ""))
    pipeline = rt._pipeline
    hook_ctx = None
    if pipeline.has(HookSlot.BEFORE_PERSIST_STATE) or pipeline.has(HookSlot.AFTER_PERSIST_STATE):
        hook_ctx = StatePersistenceHookContext(session_id=rt.session_id, run_id=run_id,
                                               state=candidate if candidate is not None else rt.state,
                                               reason=reason, mandatory=mandatory, run_error=run_error)
        await rt._invocations.flush_staged()  # a record held back is committed before user code runs
        decision = await pipeline.before_persist_state(hook_ctx)
        if decision.action is PersistAction.SKIP:  # only reachable when not mandatory
            rt._emit(EventTypes.STATE_PERSISTED, flat_payload(reason=reason, mandatory=mandatory, skipped=True,
                                                              ok=True, hook=decision.hook), run_id)
            return SaveOutcome(True, skipped=True)
        if decision.action is PersistAction.ABORT:
            error = decision.error or ArkError(
                ErrorLayer.SECURITY, ErrorCode.HOOK_ABORT,
                f"hook {decision.hook!r} aborted the {reason} save" + (f": {decision.reason}" if decision.reason else ""))
            return _failed(rt, reason, mandatory, error, run_id, hook=decision.hook)
    async with rt._save_lock:
        try:
            # An earlier save that overran may have landed since: its revision is the base now.
            await _settle(rt, reason, hurry=hurry)
            if candidate is None:
                state = rt._state = rt._stamped(rt._state)
            else:  # built from the runtime's state before the settling: only the revision moved
                state = rt._stamped(candidate.model_copy(update={"revision": rt._state.revision}))
            # Every save is linted, not only the mandatory ones (an autosave would otherwise
            # write what the terminal save redacts); a finding is redacted, not refused.
            state = lint_before_save(rt, state, in_memory=candidate is None)
            revision = await save_state(rt, state, reason, mandatory=mandatory, operations=operations)
        except Exception as exc:  # a refusal stays as it is; any other failure: the save did not happen
            kept = isinstance(exc, ArkError) and exc.code in _REPORTED_AS_IS
            return _failed(rt, reason, mandatory, exc if kept else _save_failed(reason, exc), run_id)
        base = state if candidate is not None else rt._state
        rt._state = base.model_copy(update={"revision": revision})
    # Built frozen (all scalars): this event comes with every save.
    rt._emit(EventTypes.STATE_PERSISTED, flat_payload(reason=reason, mandatory=mandatory, skipped=False, ok=True,
                                                      revision=revision), run_id)
    if hook_ctx is not None:
        await pipeline.after_persist_state(hook_ctx)
    return SaveOutcome(True)


def not_ours(error: ArkError | None) -> bool:
    """True if a save failed because the stored session is not this runtime's to write
    (another runtime saved it or holds its lease, or it cannot be read): trying again here
    cannot help."""
    return error is not None and error.code in _NOT_OURS


async def autosave(rt: AgentRuntime, ctx: RunContext, reason: str) -> None:
    """A skippable save during a run. A failure is reported (``state.persisted`` with
    ``ok`` false) and the run goes on, except when the stored session is not this
    runtime's to write: another runtime or process saved it since (``state_conflict``), or
    it can no longer be read. Then no later save of this run can succeed, and going on
    would call the model and run tools for a session someone else owns, so the run ends
    here, ``failed`` with that error.

    Raises:
        ArkError: the storage's refusal, naming the save it stopped the run at.
    """
    outcome = await persist(rt, ctx, reason)
    error = outcome.error
    if outcome.ok or not not_ours(error):
        return
    raise ArkError(error.layer, error.code, f"the run stopped at its {reason} save, before doing anything "
                   f"more: {error.message}", error.retryability)


async def persist_terminal(rt: AgentRuntime, ctx: RunContext, *, run_error: ErrorInfo | None = None,
                           reason: str = "terminal", hurry: bool = False) -> SaveOutcome:
    """A mandatory save; if it fails the session is marked not resumable (seed 000 §9.3),
    unless the stored state is not this runtime's to mark (a conflict, an unreadable state)."""
    outcome = await persist(rt, ctx, reason, mandatory=True, run_error=run_error, hurry=hurry)
    if outcome.ok:
        return outcome
    rt._set_state(not_resumable=True, is_running=False)
    if outcome.error is None or outcome.error.code not in _NOT_OURS:
        await mark_not_resumable(rt, hurry=hurry)
    return outcome


async def save_state(rt: AgentRuntime, state: AgentState, what: str, *, mandatory: bool = True,
                     operations: tuple = ()) -> int:
    """Hand ``state`` to the storage (through the invocation seam, which on a durable store
    commits it with the session's operations and events, ``operations`` among them) and
    return the revision it stored, within ``save_timeout`` (the caller settled earlier
    saves first).

    Raises:
        ArkError: what the storage raised; ``state_save_timeout`` if it did not answer in
            time (the save is then unsettled: it may still land).
    """
    task = asyncio.ensure_future(rt._invocations.save(state, reason=what, mandatory=mandatory, operations=operations))
    await _within_limit(rt, task, what)
    revision = task.result()
    if type(revision) is not int or revision <= state.revision:
        raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_SAVE_FAILED,
                       f"{rt.storage!r}.save() returned {revision!r}, not the new revision: a StateStorage "
                       "save returns the revision it stored (state.revision + 1), see the StateStorage "
                       "docstring; the state may or may not have been written")
    return revision


async def mark_not_resumable(rt: AgentRuntime, *, hurry: bool = False) -> None:
    """Mark the session not resumable in its storage, best effort (nothing more can be done
    when that fails too; the run's result already says it was not persisted)."""
    task = asyncio.ensure_future(rt._invocations.mark_not_resumable())
    if hurry and not task.done():
        # Queued behind whatever the storage still does; it lands after it.
        _keep_unsettled(rt, task)
        return
    try:
        await _within_limit(rt, task, "not-resumable mark")
        task.result()
    except Exception:
        pass


async def _within_limit(rt: AgentRuntime, task: asyncio.Future, what: str) -> None:
    try:
        done, _ = await asyncio.wait({task}, timeout=rt.save_timeout)
    except asyncio.CancelledError:
        if not task.done():
            _keep_unsettled(rt, task)  # the storage may still finish it
        raise
    if not done:
        _keep_unsettled(rt, task)
        raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_SAVE_TIMEOUT,
                       f"the {what} save did not finish within {rt.save_timeout:g} s (save_timeout); the "
                       f"storage {rt.storage!r} may still complete it, and the next save waits for it first",
                       Retryability.CONDITIONAL)


def _keep_unsettled(rt: AgentRuntime, task: asyncio.Future) -> None:
    rt._unsettled.append(task)
    # Retrieved here so a failure nobody waits for is not reported as "never retrieved".
    task.add_done_callback(lambda t: t.cancelled() or t.exception())


async def _settle(rt: AgentRuntime, what: str, *, hurry: bool) -> None:
    """Wait for the storage calls that overran earlier, and learn what they stored."""
    tasks = rt._unsettled
    if not tasks:
        return
    running = [task for task in tasks if not task.done()]
    if running:
        if hurry:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_SAVE_FAILED,
                           f"the {what} save was not attempted: an earlier save to {rt.storage!r} has not "
                           "finished (the storage seems stuck); it may still land", Retryability.CONDITIONAL)
        _, still = await asyncio.wait(running, timeout=rt.save_timeout)
        if still:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_SAVE_TIMEOUT,
                           f"the {what} save was not attempted: an earlier save to {rt.storage!r} has not "
                           f"finished after another {rt.save_timeout:g} s (save_timeout); it may still land. If "
                           "the storage never answers, open the session again in a new runtime: it reads what is "
                           "stored", Retryability.CONDITIONAL)
    rt._unsettled = []
    for task in tasks:
        revision = None if task.cancelled() or task.exception() is not None else task.result()
        # A save that landed late stored its revision; a mark returned None.
        if type(revision) is int and revision > rt._state.revision:
            rt._state = rt._state.model_copy(update={"revision": revision})


def _failed(rt: AgentRuntime, reason: str, mandatory: bool, error: ArkError, run_id: str,
            hook: str | None = None) -> SaveOutcome:
    payload = {"reason": reason, "mandatory": mandatory, "skipped": False, "ok": False, "error": error.to_dict()}
    if hook is not None:
        payload["hook"] = hook
    rt._emit(EventTypes.STATE_PERSISTED, payload, run_id)
    return SaveOutcome(False, error=error)


def save_error(error: ArkError | None) -> ArkError:
    """What a run or a decision reports when a save it needed failed: a storage failure,
    a conflict, an unreadable stored state or a secret-lint refusal as it is; anything
    else (a hook aborting the save) as ``state_save_failed``."""
    if error is not None and error.code in _REPORTED_AS_IS:
        return error
    return ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_SAVE_FAILED,
                    "saving state failed" + (f": {error.message}" if error else ""))


def _save_failed(reason: str, exc: BaseException) -> ArkError:
    detail = exc.message if isinstance(exc, ArkError) else f"{type(exc).__name__}: {exc}"
    return ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_SAVE_FAILED,
                    f"saving state ({reason}) failed: {detail}", Retryability.CONDITIONAL)
