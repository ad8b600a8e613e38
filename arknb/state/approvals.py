"""Approvals as pure data: the frozen batch a run waits on (seed 000 §8.2).

A :class:`PendingApprovalBatch` is what ``AgentState.pending_approval`` holds while a
run is suspended in ``awaiting_approval``. It is saved with mandatory persistence and
read back by a reloaded runtime, so it holds only serialisable values: no callbacks,
executors, clients or secrets (seed 000 §8.2: "Never stores callbacks, executors, or
secrets"). Deciding an item never mutates anything; it returns a copy that the
runtime swaps into a new state.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from arknb.domain import (
    AgentMessage, ArkError, ErrorCode, ErrorInfo, ErrorLayer, ToolCall, ToolResult, ToolRisk,
    invalid_argument,
)

__all__ = [
    "RESOLVED_APPROVALS_KEPT", "ApprovalDecision", "ApprovalDecisionResult", "DeniedCall",
    "PendingApprovalBatch", "PendingApprovalItem", "ResolvedApproval",
]

# Non-finite floats are refused (as a saved document refuses them, DESIGN §8): a NaN
# time would be saved as null and the state could not be read back. Refusing them in the
# model also lets AgentState.from_json read a document in one parse (state/_finite.py).
_FROZEN = ConfigDict(frozen=True, allow_inf_nan=False)


class ApprovalDecision(StrEnum):
    """Where a human decision on one deferred tool call stands."""

    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"


class PendingApprovalItem(BaseModel):
    """One deferred tool call waiting for a human.

    ``tool_call`` is the call as rewritten by the hooks that ran before the defer, with
    the model's original call id (seed 000 §5.3).

    Example:
        >>> from arknb.domain import ToolCall
        >>> item = PendingApprovalItem(approval_id="a1", tool_call=ToolCall(id="c1", name="rm"),
        ...                            risk_level="dangerous", reason="dangerous tool", created_at=0.0)
        >>> item.decide("approved", at=1.0).decision
        <ApprovalDecision.APPROVED: 'approved'>
        >>> item.is_pending()
        True
    """

    model_config = _FROZEN

    approval_id: str
    tool_call: ToolCall
    risk_level: ToolRisk
    reason: str
    created_at: float
    decision: ApprovalDecision = ApprovalDecision.PENDING
    deny_reason: str | None = None
    decided_at: float | None = None
    kind: str = Field(default="tool", min_length=1)
    """What a person decides here: ``"tool"`` (run this call?), or the kind a runtime
    extension installed (``"plan"``: a plan review; DESIGN §14)."""
    detail: dict[str, Any] = Field(default_factory=dict)
    """JSON-ready data of the item's kind (for a plan review: the proposed plan)."""
    # An in-doubt item (batch kind "in_doubt", DESIGN §13): when the call last started,
    # how many attempts are on record, and what the person decided ("rerun": it runs
    # again, decision approved; "done" / "failed": answered with result_text, decision denied).
    started_at: float | None = None
    attempts: int = 0
    resolution: Literal["rerun", "done", "failed"] | None = None
    result_text: str | None = None

    def is_pending(self) -> bool:
        """True while no decision was made."""
        return self.decision is ApprovalDecision.PENDING

    def decide(self, decision: ApprovalDecision | str, *, reason: str | None = None,
               at: float) -> PendingApprovalItem:
        """A copy carrying ``decision`` (approved or denied), decided at ``at``.

        ``reason`` is kept as ``deny_reason`` for a denial and ignored for an approval.
        An item that is already decided is returned unchanged: the first decision stands
        (seed 000 §8.1: deciding twice is idempotent, never a second verdict).

        Raises:
            ArkError: ``invalid_argument`` if ``decision`` is not approved or denied.
        """
        try:
            verdict = ApprovalDecision(decision)
        except ValueError:
            raise invalid_argument(f"unknown approval decision {decision!r}; "
                                   "use 'approved' or 'denied'") from None
        if verdict is ApprovalDecision.PENDING:
            raise invalid_argument("an approval can only be decided as 'approved' or 'denied'")
        if not self.is_pending():
            return self
        return self.model_copy(update={
            "decision": verdict,
            "deny_reason": reason if verdict is ApprovalDecision.DENIED else None,
            "decided_at": float(at),
        })


class DeniedCall(BaseModel):
    """A call of the batch that a ``before_tool_call`` hook denied with a synthetic result,
    or one answered before the batch paused (``PendingApprovalBatch.finished_calls``).

    It does not run when the batch resumes; its ``result`` goes into history, in call
    order. For a call that ran before the pause, ``injected`` holds the messages its
    ``after_tool_call`` hooks added after the answers and ``stop`` whether one of them
    asked to end the run after this batch (optional fields within schema version 3).
    """

    model_config = _FROZEN

    call: ToolCall
    result: ToolResult
    reason: str | None = None
    hook: str | None = None
    injected: tuple[AgentMessage, ...] = ()
    stop: bool = False


class PendingApprovalBatch(BaseModel):
    """A frozen tool batch: nothing of it runs until every item is decided (seed 000 §8.1).

    Attributes:
        batch_id: id of the tool batch (shared with the tools' ``ToolContext``).
        run_id: the run that was suspended.
        items: one item per deferred call.
        model_message: the assistant message that asked for the calls (needed to resume).
        created_at: when the batch froze.
        allowed_calls: calls the hooks let through; they run only after all items are decided.
        denied_calls: calls a hook denied with a synthetic result.
        finished_calls: calls that already ran when another call of the batch deferred
            itself while running (``ToolContext.defer``), or whose outcome a person
            recorded (an in-doubt call marked done or failed): their results, kept as
            they came, answer them when the batch resumes (they never run twice).
    """

    model_config = _FROZEN

    batch_id: str
    run_id: str
    items: tuple[PendingApprovalItem, ...]
    model_message: AgentMessage
    created_at: float
    allowed_calls: tuple[ToolCall, ...] = ()
    denied_calls: tuple[DeniedCall, ...] = ()
    finished_calls: tuple[DeniedCall, ...] = ()
    kind: str = Field(default="tool", min_length=1)
    """``tool``: dangerous or deferred calls; ``loop``: a detected loop waiting for
    continue (approve) or stop (deny); ``in_doubt``: calls a crash left with an unknown
    fate, waiting for rerun / mark_done / mark_failed (DESIGN §13); or the kind of an
    extension's item in the batch (``plan``: a plan review). Each kind is an entry the
    runtime looks up (an ``ApprovalKind``), never a branch in the loop."""

    @model_validator(mode="after")
    def _check_unique_ids(self) -> PendingApprovalBatch:
        ids = [item.approval_id for item in self.items]
        if len(ids) != len(set(ids)):
            raise ValueError("approval ids in one batch must be unique")
        return self

    def all_decided(self) -> bool:
        """True when every item is decided; False for an empty batch (seed 000 §8.2)."""
        return bool(self.items) and all(not item.is_pending() for item in self.items)

    def pending_items(self) -> list[PendingApprovalItem]:
        """The items still waiting, in batch order (a new list each call)."""
        return [item for item in self.items if item.is_pending()]

    def find(self, approval_id: str) -> PendingApprovalItem | None:
        """The item with ``approval_id``, or None."""
        for item in self.items:
            if item.approval_id == approval_id:
                return item
        return None

    def with_item(self, item: PendingApprovalItem) -> PendingApprovalBatch:
        """A copy with the item of the same ``approval_id`` replaced by ``item``.

        Raises:
            ArkError: ``approval_not_found`` if no item has that id.
        """
        if self.find(item.approval_id) is None:
            raise ArkError(ErrorLayer.RUNTIME, ErrorCode.APPROVAL_NOT_FOUND,
                           f"approval {item.approval_id!r} is not part of batch {self.batch_id!r}")
        items = tuple(item if old.approval_id == item.approval_id else old for old in self.items)
        return self.model_copy(update={"items": items})


RESOLVED_APPROVALS_KEPT = 64
"""How many decisions of resolved batches a state remembers (``AgentState.resolved_approvals``)."""


class ResolvedApproval(BaseModel):
    """The decision recorded for one item of a batch that has resolved.

    A state keeps the last :data:`RESOLVED_APPROVALS_KEPT` of them, so a decision that
    arrives after its batch resolved (a second click, a stale card, a retry after a
    restart) is answered with ``approval_already_resolved`` and the decision that
    stands, rather than ``approval_not_found``.
    """

    model_config = _FROZEN

    approval_id: str
    batch_id: str
    call_id: str
    tool_name: str
    decision: ApprovalDecision
    deny_reason: str | None = None
    decided_at: float | None = None

    @classmethod
    def of_batch(cls, batch: PendingApprovalBatch) -> tuple[ResolvedApproval, ...]:
        """One record per item of a fully decided ``batch``, in batch order."""
        return tuple(cls(approval_id=item.approval_id, batch_id=batch.batch_id, call_id=item.tool_call.id,
                         tool_name=item.tool_call.name, decision=item.decision, deny_reason=item.deny_reason,
                         decided_at=item.decided_at)
                     for item in batch.items)


class ApprovalDecisionResult(BaseModel):
    """What ``controller.approve/deny`` returns (seed 000 §8.3).

    ``all_decided`` tells a UI when to close the approval card: only then does the run
    resume. A second decision on the same id is a success with the standing decision.
    """

    model_config = _FROZEN

    ok: bool
    approval_id: str
    decision: str
    all_decided: bool
    error: ErrorInfo | None = None

    @classmethod
    def success(cls, approval_id: str, decision: ApprovalDecision | str,
                all_decided: bool) -> ApprovalDecisionResult:
        """A decision that was applied (or was already in place)."""
        return cls(ok=True, approval_id=approval_id, decision=str(ApprovalDecision(decision)),
                   all_decided=all_decided)

    @classmethod
    def failure(cls, approval_id: str, error: ArkError) -> ApprovalDecisionResult:
        """A decision that could not be applied (e.g. ``approval_not_found``)."""
        return cls(ok=False, approval_id=approval_id, decision="error", all_decided=False,
                   error=error.info())

    @classmethod
    def already_resolved(cls, record: ResolvedApproval) -> ApprovalDecisionResult:
        """A decision that came after its batch resolved: not applied (``ok=False``, error
        ``approval_already_resolved``); ``decision`` is the one that stands."""
        error = ArkError(ErrorLayer.RUNTIME, ErrorCode.APPROVAL_ALREADY_RESOLVED,
                         f"approval {record.approval_id!r} ({record.tool_name}) was already decided "
                         f"{record.decision.value} and its batch {record.batch_id!r} has resolved; "
                         "nothing was changed and nothing runs again")
        return cls(ok=False, approval_id=record.approval_id, decision=record.decision.value,
                   all_decided=True, error=error.info())
