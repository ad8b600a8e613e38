"""Approvals phase: freeze a batch, save it, then ask; apply decisions; unfreeze (seed 000 §8).

Order matters and is kept here: the pending batch is saved with a mandatory write
FIRST; only after that save succeeds are ``approval.required`` and ``agent.suspended``
published. If the save fails, the run fails with ``state_save_failed`` and the session
is marked not resumable: never claim resumable without a save. Likewise a decision is
saved before it is acknowledged, published or acted on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..domain import ArkError, ErrorCode, ErrorLayer, Retryability
from ..events import EventTypes
from ..state import (
    RESOLVED_APPROVALS_KEPT, ApprovalDecision, ApprovalDecisionResult, PendingApprovalBatch, PendingApprovalItem,
    ResolvedApproval,
)
from .extensions import ApprovalKind, Resolution
from .loop_detector import tool_signature
from .result import StopReason
from ._persistence import not_ours, persist, persist_terminal, save_error
from ._tool_batch import BatchPlan

if TYPE_CHECKING:
    from ._context import RunContext
    from .runtime import AgentRuntime

__all__ = ["LoopKind", "apply_decision", "awaiting_approval_error", "build_batch", "freeze_for_approval",
           "resolve_decided_batch"]


def build_batch(rt: AgentRuntime, ctx: RunContext, plan: BatchPlan, model_message,
                finished=()) -> PendingApprovalBatch:
    """The pending batch for a plan with deferred calls (pure data: no callbacks, no secrets).

    Each item keeps the kind it was deferred with; the batch takes the first kind that is
    not a plain tool approval (a plan review, a detected loop, ...), else ``"tool"``.
    """
    now = rt._clock()
    items = tuple(
        PendingApprovalItem(approval_id=rt._new_id("approval"), tool_call=d.call, risk_level=d.risk,
                            reason=d.reason, created_at=now, kind=d.kind, detail=dict(d.detail or {}))
        for d in plan.deferred)
    kind = next((item.kind for item in items if item.kind != "tool"), "tool")
    return PendingApprovalBatch(batch_id=plan.batch_id, run_id=ctx.run_id, items=items, model_message=model_message,
                                created_at=now, allowed_calls=tuple(plan.allowed), denied_calls=tuple(plan.denied),
                                finished_calls=tuple(finished), kind=kind)


async def freeze_for_approval(rt: AgentRuntime, ctx: RunContext, batch: PendingApprovalBatch,
                              reason: str = "awaiting_approval") -> ArkError | None:
    """Save the pending batch (mandatory), then publish; returns the error if the save failed."""
    waiting = awaiting_approval_error(batch, rt._extensions.kind(batch.kind).how_to_decide)
    rt._set_state(pending_approval=batch, is_running=True, last_stop_reason="awaiting_approval",
                  last_error=waiting.info())
    saved = await persist_terminal(rt, ctx, reason="awaiting_approval")
    if not saved.ok:
        # Not saved means not resumable: drop the batch and answer its calls so history stays paired.
        rt._set_state(pending_approval=None)
        error = save_error(saved.error)
        rt._answer_unanswered(f"not executed: {error.code}")
        return error
    # Whole items (defaults included): a listener reads item["decision"] like the saved batch.
    rt._emit(EventTypes.APPROVAL_REQUIRED, lambda: {
        "batch_id": batch.batch_id, "items": _items(batch), "kind": batch.kind}, run_id=batch.run_id)
    # Each kind publishes its own events, also only after the save (e.g. plan.review_required).
    rt._extensions.announce(rt, batch)
    rt._emit(EventTypes.AGENT_SUSPENDED, {"reason": reason, "batch_id": batch.batch_id, "error": waiting.to_dict()},
             run_id=batch.run_id)
    return None


def awaiting_approval_error(batch: PendingApprovalBatch, how: str = ApprovalKind.how_to_decide) -> ArkError:
    """What a run waiting for approval reports: ``awaiting_approval`` (security), a resumable
    pause rather than a failure; the stop reason and this code go together (seed 000 §11).
    ``how`` is the batch kind's :attr:`ApprovalKind.how_to_decide`."""
    names = ", ".join(item.tool_call.name for item in batch.items)
    return ArkError(ErrorLayer.SECURITY, ErrorCode.AWAITING_APPROVAL,
                    f"{len(batch.items)} tool call(s) wait for a person ({names}): {how} and the run continues",
                    Retryability.CONDITIONAL)


def _items(batch: PendingApprovalBatch) -> list[dict]:
    return [item.model_dump(mode="json") for item in batch.items]


async def apply_decision(rt: AgentRuntime, approval_id: str, decision: ApprovalDecision,
                         deny_reason: str | None, batch_id: str | None = None) -> ApprovalDecisionResult:
    """Record one decision (idempotent); when the batch is fully decided, continue the run.

    The decision is a compare-and-swap on the saved state (DESIGN §8): it is saved
    (mandatory) before anything else happens, and only a saved decision is acknowledged,
    published (``approval.decided``) and acted on. A failed save leaves the item pending,
    here and in storage, so trying again later works.
    """
    try:
        await rt.load()  # a runtime that was never loaded decides on its saved batch, not on nothing
    except ArkError as exc:
        return ApprovalDecisionResult.failure(approval_id, exc)
    state = rt.state
    batch = state.pending_approval
    if batch is not None and batch_id is not None and batch_id != batch.batch_id:
        batch = None  # a card of another batch: not this runtime's to decide
    item = batch.find(approval_id) if batch is not None else None
    if item is None:
        return _not_pending(rt, approval_id, batch_id)
    refusal = rt._extensions.kind(batch.kind).refuse_decision(item)
    if refusal is not None:  # a kind decided its own way (an in-doubt call: rerun / mark_done / mark_failed)
        return ApprovalDecisionResult.failure(approval_id, refusal)
    if state.not_resumable:
        # Deciding the last item would continue the run: a session marked not resumable
        # must never be continued, whatever its saved batch says (seed 000 §9.3).
        return ApprovalDecisionResult.failure(approval_id, ArkError(
            ErrorLayer.STORAGE, ErrorCode.NOT_RESUMABLE,
            f"session {rt.session_id!r} is marked not resumable (a save failed), so its pending approvals "
            "cannot be decided; send new input to start over (the frozen calls are answered as not executed)"))
    if not item.is_pending():
        # Seed 000 §6.4: deciding again is an idempotent success reporting the current decision.
        return ApprovalDecisionResult.success(approval_id, item.decision, batch.all_decided())
    batch = batch.with_item(item.decide(decision, reason=deny_reason, at=rt._clock()))
    all_decided = batch.all_decided()
    if all_decided:
        # The batch is consumed in the same save that records the last decision: a restore
        # after a crash can never offer (and so run) the same approved calls again.
        kept = (state.resolved_approvals + ResolvedApproval.of_batch(batch))[-RESOLVED_APPROVALS_KEPT:]
        candidate = state.model_copy(update={"pending_approval": None, "resolved_approvals": kept})
    else:
        candidate = state.model_copy(update={"pending_approval": batch})
    saved = await persist(rt, None, "approval_resolved" if all_decided else "approval_decision", mandatory=True,
                          candidate=candidate, run_id=batch.run_id)
    if not saved.ok:
        return ApprovalDecisionResult.failure(approval_id, _not_saved(approval_id, save_error(saved.error)))
    rt._emit(EventTypes.APPROVAL_DECIDED, {
        "batch_id": batch.batch_id, "approval_id": approval_id, "decision": decision.value,
        "deny_reason": deny_reason, "all_decided": all_decided, "kind": item.kind}, run_id=batch.run_id)
    await rt._extensions.on_decided(rt, batch, batch.find(approval_id))
    if not all_decided:
        # The batch waits for the next decision, maybe long: what this one announced is
        # committed now (a durable store's outbox), not with a commit that may never come.
        await rt._invocations.flush()
        return ApprovalDecisionResult.success(approval_id, decision, False)
    rt._emit(EventTypes.APPROVAL_RESOLVED, lambda: {
        "batch_id": batch.batch_id, "items": _items(batch)}, run_id=batch.run_id)
    rt._continue_after_approval(batch)
    return ApprovalDecisionResult.success(approval_id, decision, True)


async def resolve_decided_batch(rt: AgentRuntime) -> bool:
    """After a load: a saved batch whose every item is decided but which is still pending
    (the runtime never saves one: the last decision's save consumes it; a hand-edited or
    foreign state) is resolved as after its last decision: consumed in a mandatory save,
    announced, and the run continued in the background. Otherwise the session would list
    nothing to decide and refuse every input (issue 26). Returns True if it did."""
    state = rt.state
    batch = state.pending_approval
    if batch is None or not batch.items or not batch.all_decided() or state.not_resumable:
        return False
    kept = (state.resolved_approvals + ResolvedApproval.of_batch(batch))[-RESOLVED_APPROVALS_KEPT:]
    candidate = state.model_copy(update={"pending_approval": None, "resolved_approvals": kept})
    saved = await persist(rt, None, "approval_resolved", mandatory=True, candidate=candidate, run_id=batch.run_id)
    if not saved.ok:
        raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_SAVE_FAILED,
                       f"session {rt.session_id!r} was saved with batch {batch.batch_id} fully decided but still "
                       f"pending, and resolving it failed: {save_error(saved.error).message}; load it again to retry",
                       Retryability.CONDITIONAL)
    rt._emit(EventTypes.APPROVAL_RESOLVED, lambda: {
        "batch_id": batch.batch_id, "items": _items(batch), "on_load": True}, run_id=batch.run_id)
    rt._continue_after_approval(batch)
    return True


def _not_saved(approval_id: str, error: ArkError) -> ArkError:
    """What a decision whose save failed answers: the cause, and what to do next."""
    if not_ours(error):
        # The stored session is not this runtime's to write: deciding again here cannot help.
        why = f"the decision on approval {approval_id!r} was not recorded, and nothing runs here"
    else:
        # A save that overran its time limit may still land: "not recorded" would be a guess.
        why = (f"the decision on approval {approval_id!r} was not applied and the call still waits; decide "
               "again once the storage works (deciding the same again is safe)")
    return ArkError(error.layer, error.code, f"{why}: {error.message}", error.retryability)


def _not_pending(rt: AgentRuntime, approval_id: str, batch_id: str | None) -> ApprovalDecisionResult:
    """The answer for an id that is not pending here: its batch resolved, or it is unknown."""
    for record in reversed(rt.state.resolved_approvals):
        if record.approval_id == approval_id and batch_id in (None, record.batch_id):
            return ApprovalDecisionResult.already_resolved(record)
    where = f" in batch {batch_id!r}" if batch_id is not None else ""
    return ApprovalDecisionResult.failure(approval_id, ArkError(
        ErrorLayer.RUNTIME, ErrorCode.APPROVAL_NOT_FOUND,
        f"no pending approval with id {approval_id!r}{where} in session {rt.session_id!r}: it is unknown "
        "here, or belongs to another runtime's batch; list the current ones with "
        "controller.list_pending_approvals()"))


class LoopKind(ApprovalKind):
    """A detected loop asking a person (``LoopDetector(on_detect="ask")``): approve lets the
    repeated calls go on (they are forgiven and planned again), deny stops the run."""

    name = "loop"

    def __init__(self, forgive: Callable[[str], None]) -> None:
        self._forgive = forgive

    def resolve(self, batch: PendingApprovalBatch, answer) -> Resolution:
        if any(item.decision is ApprovalDecision.DENIED for item in batch.items):
            return Resolution(stop=(StopReason.LOOP_DETECTED, ArkError(
                ErrorLayer.RUNTIME, ErrorCode.LOOP_DETECTED, "a detected loop was stopped by the user")),
                stop_text="not executed: the loop was stopped by the user")
        for item in batch.items:
            self._forgive(tool_signature(item.tool_call))
        # The loop paused the batch before its calls were planned: plan them now.
        return Resolution(run=tuple(item.tool_call for item in batch.items), replan=True)
