"""In-doubt calls (DESIGN §13): a call a crash left with an unknown fate goes to a person.

Such calls pause the run like an approval batch, of kind ``in_doubt``: saved first,
then ``approval.required`` and one ``operation.in_doubt`` per call, stop reason
``awaiting_approval``. A person decides each with ``controller.rerun``,
``controller.mark_done(result_text)`` or ``controller.mark_failed(reason)``; the
decision is committed to the operation (durable store) and saved with the state, and
when the last one is decided the run continues in the background.

Without operations (file or memory store) nothing can tell "approved, not started"
from "started, fate unknown", so every call a crash left unanswered is in doubt: never
a silent "unknown" answer to the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..domain import ArkError, ErrorCode, ErrorLayer, ToolResult, ToolRisk
from ..domain.invocation import InDoubtCall
from ..events import EventTypes
from ..state import ApprovalDecision, ApprovalDecisionResult, DeniedCall, PendingApprovalBatch, PendingApprovalItem
from ._approvals import freeze_for_approval
from .extensions import ApprovalKind, Resolution, WaitingCall
from ._persistence import persist, save_error
from ._tool_batch import unanswered_calls

if TYPE_CHECKING:
    from .runtime import AgentRuntime

__all__ = ["IN_DOUBT", "RESOLUTIONS", "InDoubtKind", "apply_in_doubt_decision", "in_doubt_batch", "interrupted",
           "last_assistant", "pause_interrupted_run", "person_answer", "settled_answers"]

IN_DOUBT = "in_doubt"
RESOLUTIONS = ("rerun", "done", "failed")


def in_doubt_batch(rt: AgentRuntime, run_id: str, message, doubts: list[InDoubtCall], allowed=(),
                   denied=(), finished=(), reused=()) -> PendingApprovalBatch:
    """The paused batch for ``doubts``; ``allowed``, ``denied`` and ``finished`` (answered
    already: ran before a pause, or settled by a person) are the batch's other calls.

    ``reused``: ids of ``allowed`` calls whose result an earlier process committed (they
    finished before the crash and will never run again). Each item's ``detail`` carries
    them as ``reused_calls``, so a view tells them from calls that never started."""
    now = rt._clock()
    detail = {"reused_calls": list(reused)} if reused else {}
    items = tuple(
        PendingApprovalItem(approval_id=d.item_id, tool_call=d.call,
                            risk_level=rt._offered_tools().risk_of(d.call.name) or ToolRisk.SAFE, reason=_why(d),
                            created_at=now, started_at=d.started_at, attempts=d.attempts, kind=IN_DOUBT,
                            detail=dict(detail))
        for d in doubts)
    return PendingApprovalBatch(batch_id=rt._new_id("batch"), run_id=run_id, items=items, model_message=message,
                                created_at=now, allowed_calls=tuple(allowed), denied_calls=tuple(denied),
                                finished_calls=tuple(finished), kind=IN_DOUBT)


def _waiting_batch(rt: AgentRuntime, run_id: str, message, waiting: list[WaitingCall],
                   allowed: list) -> PendingApprovalBatch:
    """The paused batch for an interrupted run's calls that wait for a person elsewhere."""
    now = rt._clock()
    items = tuple(
        PendingApprovalItem(approval_id=rt._new_id("approval"), tool_call=w.call,
                            risk_level=rt._offered_tools().risk_of(w.call.name) or ToolRisk.SAFE, reason=w.reason,
                            created_at=now, kind=w.kind, detail=dict(w.detail or {}))
        for w in waiting)
    kind = next((item.kind for item in items if item.kind != "tool"), "tool")
    return PendingApprovalBatch(batch_id=rt._new_id("batch"), run_id=run_id, items=items, model_message=message,
                                created_at=now, allowed_calls=tuple(allowed), kind=kind)


def _why(doubt: InDoubtCall) -> str:
    if doubt.started_at is None:
        return (f"{doubt.call.name}: the run was interrupted before this call was answered, and nothing "
                "records whether it ran. Rerun it, or say what it did (mark done / mark failed)")
    return (f"{doubt.call.name} started but the process ended before its result was saved "
            f"({doubt.attempts} attempt(s)); it may or may not have run. Rerun it, or say what it did")


def interrupted(state) -> bool:
    """True if the saved state is of a run a crash cut short: running, not paused for a
    person, not suspended (a running run has no stop reason yet; one whose approval
    batch was just resolved still says ``awaiting_approval``, with no batch left)."""
    return (state.is_running and state.pending_approval is None and not state.not_resumable
            and bool(state.current_run_id) and state.last_stop_reason in (None, "awaiting_approval"))


def last_assistant(history):
    """The last assistant message (the one whose calls are unanswered), or None."""
    for message in reversed(history):
        if message.role == "assistant":
            return message
    return None


async def pause_interrupted_run(rt: AgentRuntime) -> bool:
    """After a restore: if a crash interrupted a run and left calls in doubt, pause it for a
    person at once (DESIGN §13: they are listed as soon as the session is restored).

    Returns True if the run is now paused for in-doubt calls.
    """
    state = rt.state
    if not interrupted(state):
        return False
    calls = unanswered_calls(state.history)
    if not calls:
        return False
    run_id, message = state.current_run_id, last_assistant(state.history)
    doubts, runnable, _ = await rt._invocations.classify_unanswered(run_id, calls, state.current_loop_count)
    # Calls whose work waits for a person elsewhere (a sub-agent paused for its own
    # approvals or in-doubt calls) are listed at once too, as their extension's items.
    waiting = await rt._extensions.waiting_calls(run_id, calls) if rt._extensions else []
    claimed = {w.call.id for w in waiting}
    if any(d.call.id not in claimed for d in doubts):
        # The runnable calls whose result was committed before the crash are reused, not run:
        # the batch says which, so the chat reads them "reused" (never "waits for your decision").
        recorded = await rt._invocations.known_results(run_id, runnable, state.current_loop_count)
        reused = [call.id for call in runnable if recorded.get(call.id) is not None]
        batch = in_doubt_batch(rt, run_id, message, doubts, runnable, reused=reused)  # (one kind of decision a batch)
        reason = IN_DOUBT
    elif waiting:
        batch = _waiting_batch(rt, run_id, message, waiting, [c for c in runnable if c.id not in claimed])
        reason = rt._extensions.kind(batch.kind).suspend_reason
    else:
        return False  # resume() continues the run from its operations
    error = await freeze_for_approval(rt, None, batch, reason=reason)
    if error is not None:
        raise error
    # No run ends here to commit what the pause announced (a run's end does): it is
    # committed now, or a kernel that dies while the person decides loses it from the outbox.
    await rt._invocations.flush()
    return True


async def apply_in_doubt_decision(rt: AgentRuntime, item_id: str, resolution: str,
                                  text: str | None) -> ApprovalDecisionResult:
    """Record a person's decision on one in-doubt call; the last one continues the run.

    Like an approval decision (DESIGN §8), it is saved before it is acknowledged: in a
    mandatory save that consumes the batch when it is the last decision, and that carries
    the operation's record of it (durable store) in the same commit. A failed save (or a
    process killed before it) leaves the item pending, its operation in doubt.
    """
    try:
        await rt.load()
    except ArkError as exc:
        return ApprovalDecisionResult.failure(item_id, exc)
    state = rt.state
    batch = state.pending_approval
    item = batch.find(item_id) if batch is not None and batch.kind == IN_DOUBT else None
    if item is None:
        known = await rt._invocations.operation_state(item_id) if item_id.startswith("op_") else None
        if known is not None:
            return ApprovalDecisionResult.failure(item_id, ArkError(
                ErrorLayer.STORAGE, ErrorCode.OPERATION_NOT_IN_DOUBT,
                f"operation {item_id!r} of session {rt.session_id!r} is not in doubt (its record says {known}): only a call "
                "listed by controller.list_in_doubt() waits for a person's decision"))
        return ApprovalDecisionResult.failure(item_id, ArkError(
            ErrorLayer.STORAGE, ErrorCode.OPERATION_NOT_FOUND,
            f"no in-doubt call with id {item_id!r} in session {rt.session_id!r} (unknown, or already decided and "
            "continued); controller.list_in_doubt() lists the open ones"))
    if state.not_resumable:
        return ApprovalDecisionResult.failure(item_id, ArkError(
            ErrorLayer.STORAGE, ErrorCode.NOT_RESUMABLE,
            f"session {rt.session_id!r} is marked not resumable, so its in-doubt calls cannot be decided"))
    if not item.is_pending():
        if item.resolution == resolution and (resolution == "rerun" or item.result_text == text):
            return _result(item_id, resolution, batch.all_decided())  # the same decision again: idempotent
        return ApprovalDecisionResult.failure(item_id, ArkError(
            ErrorLayer.STORAGE, ErrorCode.OPERATION_NOT_IN_DOUBT,
            f"in-doubt call {item_id!r} was already decided ({item.resolution}); the first decision stands"))
    try:
        records = await rt._invocations.record_in_doubt_decision(item, resolution, text)
    except ArkError as exc:
        return ApprovalDecisionResult.failure(item_id, exc)
    verdict = ApprovalDecision.APPROVED if resolution == "rerun" else ApprovalDecision.DENIED
    decided = item.decide(verdict, reason=None if resolution == "rerun" else f"marked {resolution} by a person",
                          at=rt._clock()).model_copy(update={"resolution": resolution, "result_text": text})
    batch = batch.with_item(decided)
    all_decided = batch.all_decided()
    # The last decision's save consumes the batch: a restore never offers it again.
    candidate = state.model_copy(update={"pending_approval": None if all_decided else batch})
    saved = await persist(rt, None, "in_doubt_resolved" if all_decided else "in_doubt_decision", mandatory=True,
                          candidate=candidate, run_id=batch.run_id, operations=records)
    if not saved.ok:
        error = save_error(saved.error)
        return ApprovalDecisionResult.failure(item_id, ArkError(
            error.layer, error.code, f"the decision on in-doubt call {item_id!r} was not recorded, so the call "
            f"still waits: {error.message}", error.retryability))
    rt._emit(EventTypes.APPROVAL_DECIDED, {
        "batch_id": batch.batch_id, "approval_id": item_id, "decision": verdict.value, "resolution": resolution,
        "deny_reason": decided.deny_reason, "all_decided": all_decided, "kind": IN_DOUBT}, run_id=batch.run_id)
    if not all_decided:
        await rt._invocations.flush()  # announced while it waits for the next decision (see apply_decision)
        return _result(item_id, resolution, False)
    rt._emit(EventTypes.APPROVAL_RESOLVED, lambda: {
        "batch_id": batch.batch_id, "items": [i.model_dump(mode="json") for i in batch.items], "kind": IN_DOUBT},
        run_id=batch.run_id)
    rt._continue_after_approval(batch)
    return _result(item_id, resolution, True)


def _result(item_id: str, resolution: str, all_decided: bool) -> ApprovalDecisionResult:
    return ApprovalDecisionResult(ok=True, approval_id=item_id, decision=resolution, all_decided=all_decided)


class InDoubtKind(ApprovalKind):
    """Pending items of kind ``in_doubt``: announced one ``operation.in_doubt`` each, decided
    only through ``controller.rerun / mark_done / mark_failed``; a rerun runs again, a call
    marked done or failed is answered with what the person recorded."""

    name = IN_DOUBT
    suspend_reason = IN_DOUBT
    resume_reason = "in_doubt_resolved"
    how_to_decide = ("each may or may not have run: decide each with runtime.controller.rerun, mark_done or "
                     "mark_failed (controller.list_in_doubt() lists them)")

    def __init__(self, emit) -> None:
        self._emit = emit

    def announce(self, batch: PendingApprovalBatch, items: tuple[PendingApprovalItem, ...]) -> None:
        for item in items:
            self._emit(EventTypes.OPERATION_IN_DOUBT, lambda item=item: {
                "operation_id": item.approval_id, "call": item.tool_call.model_dump(mode="json"),
                "started_at": item.started_at, "attempts": item.attempts, "batch_id": batch.batch_id},
                run_id=batch.run_id)

    def refuse_decision(self, item: PendingApprovalItem) -> ArkError:
        return ArkError(ErrorLayer.RUNTIME, ErrorCode.APPROVAL_NOT_FOUND,
                        f"{item.approval_id!r} is an in-doubt call, not an approval: decide it with controller.rerun, "
                        "controller.mark_done or controller.mark_failed")

    def blocks_input_error(self, batch: PendingApprovalBatch) -> ArkError:
        names = ", ".join(item.tool_call.name for item in batch.items if item.is_pending())
        return ArkError(ErrorLayer.SECURITY, ErrorCode.PENDING_APPROVAL_BLOCKS_INPUT,
                        f"a crash interrupted the last run while tool calls ran ({names}); whether they took effect "
                        "is unknown, so a person decides each first: runtime.controller.list_in_doubt(), then "
                        "rerun / mark_done / mark_failed (or runtime.cancel() to end that run); then send the input")

    def resolve(self, batch: PendingApprovalBatch, answer) -> Resolution:
        allowed, settled = settled_answers(batch)
        return Resolution(run=tuple(allowed), answered=tuple(batch.denied_calls), settled=tuple(settled))


def settled_answers(batch: PendingApprovalBatch) -> tuple[list, list[DeniedCall]]:
    """A decided in-doubt batch: the calls to run (reruns and the batch's other allowed
    calls) and the calls a person answered (done / failed)."""
    allowed = list(batch.allowed_calls)
    settled: list[DeniedCall] = []
    for item in batch.items:
        answer = person_answer(item)
        if answer is None:  # (rerun)
            allowed.append(item.tool_call)
        else:
            settled.append(answer)
    return allowed, settled


def person_answer(item: PendingApprovalItem) -> DeniedCall | None:
    """The answer a person gave an in-doubt call (marked done or failed); None for one
    still pending or to be rerun."""
    if item.resolution == "done":
        return DeniedCall(call=item.tool_call, result=ToolResult.from_text(item.result_text or ""),
                          reason="marked done", hook="person")
    if item.resolution == "failed":
        return DeniedCall(call=item.tool_call, result=ToolResult.from_text(
            item.result_text or "marked failed", is_error=True, error_code=ErrorCode.TOOL_FAILED.value),
            reason="marked failed", hook="person")
    return None
