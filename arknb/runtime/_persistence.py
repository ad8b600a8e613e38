"""Persistence phase: every save goes through here (seed 000 §9).

Autosaves (after user input, after model text, after a tool batch) may be skipped by a
``before_persist_state`` hook. Awaiting-approval, suspend and terminal saves are
mandatory: ``skip`` is ignored and a failed terminal save marks the session not
resumable. Every save runs the secret lint first. A save is never claimed that did not
happen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..domain import ArkError, ErrorCode, ErrorInfo, ErrorLayer, Retryability
from ..events import EventTypes
from ..hooks import HookSlot, PersistAction, StatePersistenceHookContext

if TYPE_CHECKING:
    from ._context import RunContext
    from .runtime import AgentRuntime

__all__ = ["SaveOutcome", "persist", "persist_terminal", "save_error"]


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
                  run_error: ErrorInfo | None = None) -> SaveOutcome:
    """Run the persistence hooks, then save the runtime's state to its storage."""
    run_id = ctx.run_id if ctx is not None else (rt.state.current_run_id or "")
    pipeline = rt._pipeline
    hook_ctx = None
    if pipeline.has(HookSlot.BEFORE_PERSIST_STATE) or pipeline.has(HookSlot.AFTER_PERSIST_STATE):
        hook_ctx = StatePersistenceHookContext(session_id=rt.session_id, run_id=run_id, state=rt.state,
                                               reason=reason, mandatory=mandatory, run_error=run_error)
        decision = await pipeline.before_persist_state(hook_ctx)
        if decision.action is PersistAction.SKIP:  # only reachable when not mandatory
            rt._emit(EventTypes.STATE_PERSISTED, {"reason": reason, "mandatory": mandatory,
                                                  "skipped": True, "ok": True, "hook": decision.hook})
            return SaveOutcome(True, skipped=True)
        if decision.action is PersistAction.ABORT:
            error = decision.error or ArkError(
                ErrorLayer.SECURITY, ErrorCode.HOOK_ABORT,
                f"hook {decision.hook!r} aborted the {reason} save" + (f": {decision.reason}" if decision.reason else ""))
            return _failed(rt, reason, mandatory, error, hook=decision.hook)
    state = rt._stamp_state()
    try:
        # Every save is linted, not only the mandatory ones: an autosave that wrote a
        # credential would leave it on disk even though the terminal save refuses it.
        rt.secret_lint.check(state, history_from=rt._linted_history)
        rt._linted_history = len(state.history)
        revision = await rt._invocations.save(state, reason=reason, mandatory=mandatory)
    except Exception as exc:  # a lint refusal stays as it is; any other failure: the save did not happen
        refused = isinstance(exc, ArkError) and exc.code == ErrorCode.SECRET_IN_STATE
        return _failed(rt, reason, mandatory, exc if refused else _save_failed(reason, exc))
    if type(revision) is int:  # the next save compares against the revision this one made (DESIGN §8)
        rt._set_state(revision=revision)
    rt._emit(EventTypes.STATE_PERSISTED, {"reason": reason, "mandatory": mandatory, "skipped": False, "ok": True})
    if hook_ctx is not None:
        await pipeline.after_persist_state(hook_ctx)
    return SaveOutcome(True)


async def persist_terminal(rt: AgentRuntime, ctx: RunContext, *, run_error: ErrorInfo | None = None,
                           reason: str = "terminal") -> SaveOutcome:
    """A mandatory save; if it fails the session is marked not resumable (seed 000 §9.3)."""
    outcome = await persist(rt, ctx, reason, mandatory=True, run_error=run_error)
    if outcome.ok:
        return outcome
    rt._set_state(not_resumable=True, is_running=False)
    try:
        await rt._invocations.mark_not_resumable()
    except Exception:  # nothing more can be done; the result already says not persisted
        pass
    return outcome


def _failed(rt: AgentRuntime, reason: str, mandatory: bool, error: ArkError, hook: str | None = None) -> SaveOutcome:
    payload = {"reason": reason, "mandatory": mandatory, "skipped": False, "ok": False, "error": error.to_dict()}
    if hook is not None:
        payload["hook"] = hook
    rt._emit(EventTypes.STATE_PERSISTED, payload)
    return SaveOutcome(False, error=error)


def save_error(error: ArkError | None) -> ArkError:
    """What a run reports when a save it needed failed: a storage failure or a secret-lint
    refusal as it is; anything else (a hook aborting the save) as ``state_save_failed``."""
    if error is not None and error.code in (ErrorCode.STATE_SAVE_FAILED, ErrorCode.SECRET_IN_STATE):
        return error
    return ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_SAVE_FAILED,
                    "saving state failed" + (f": {error.message}" if error else ""))


def _save_failed(reason: str, exc: BaseException) -> ArkError:
    detail = exc.message if isinstance(exc, ArkError) else f"{type(exc).__name__}: {exc}"
    return ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_SAVE_FAILED,
                    f"saving state ({reason}) failed: {detail}", Retryability.CONDITIONAL)
