"""AgentController: the zero-state control plane (seed 000 §6).

The controller observes (``subscribe``, ``list_pending_approvals``,
``get_pending_plan_review``), publishes, and routes approval and plan-review decisions
to the runtime through the :class:`ApprovalHost` protocol.
It holds no runtime state and cannot change any: every decision goes through
``ApprovalHost.apply_approval_decision``, which validates it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, runtime_checkable

from .domain import ArkError, ErrorCode, ErrorLayer, Retryability, ToolCall, invalid_argument
from .events import AgentEvent, EventBus
from .state import (
    ApprovalDecision, ApprovalDecisionResult, PendingApprovalBatch, PendingApprovalItem, PendingPlanReview,
)

__all__ = ["AgentController", "ApprovalHost", "InDoubtHost", "InDoubtItem"]


@runtime_checkable
class ApprovalHost(Protocol):
    """What a controller needs from the runtime that owns the state (the runtime implements it)."""

    def get_pending_approval_batch(self) -> PendingApprovalBatch | None: ...

    async def apply_approval_decision(self, approval_id: str, decision: ApprovalDecision,
                                      deny_reason: str | None = None, *,
                                      batch_id: str | None = None) -> ApprovalDecisionResult:
        """Apply one decision; ok only once it is saved. With ``batch_id``, refuse an item
        that is not part of that (pending) batch."""
        ...


@runtime_checkable
class InDoubtHost(Protocol):
    """What a controller needs to resolve in-doubt calls (the runtime implements it)."""

    def get_pending_approval_batch(self) -> PendingApprovalBatch | None: ...

    async def apply_in_doubt_decision(self, item_id: str, resolution: str,
                                      text: str | None = None) -> ApprovalDecisionResult: ...


@dataclass(frozen=True, slots=True)
class InDoubtItem:
    """A call a crash left with an unknown fate (DESIGN §13): it may or may not have run.

    Attributes:
        operation_id: decide it with this id (``rerun``, ``mark_done``, ``mark_failed``).
        tool_call: the call as it was to run.
        started_at: when its last attempt started (None: unknown, e.g. with a file store).
        attempts: attempts on record.
    """

    operation_id: str
    tool_call: ToolCall
    started_at: float | None
    attempts: int


class AgentController:
    """Observe events, list pending approvals, approve or deny them.

    ``runtime.controller`` is already bound to its runtime.

    Example:
        >>> for item in runtime.controller.list_pending_approvals():      # doctest: +SKIP
        ...     await runtime.controller.approve(item.approval_id)
    """

    def __init__(self, event_bus: EventBus | None = None) -> None:
        self.bus = event_bus if event_bus is not None else EventBus()
        self._host: ApprovalHost | None = None

    def bind_approval_host(self, host: ApprovalHost) -> None:
        """Connect the runtime that applies decisions (called once by the runtime)."""
        if not isinstance(host, ApprovalHost):
            raise invalid_argument(f"bind_approval_host expects an ApprovalHost, got {type(host).__name__}")
        self._host = host

    # -- observation ----------------------------------------------------------------

    def subscribe(self, event_type: str, listener: Callable[[AgentEvent], Any]) -> Callable[[], None]:
        """Listen to one event type; returns the unsubscribe function."""
        return self.bus.subscribe(event_type, listener)

    def subscribe_all(self, listener: Callable[[AgentEvent], Any]) -> Callable[[], None]:
        """Listen to every event; returns the unsubscribe function."""
        return self.bus.subscribe("*", listener)

    def publish(self, event: AgentEvent) -> None:
        """Publish an event on the bus (listeners are isolated)."""
        self.bus.publish(event)

    def list_pending_approvals(self) -> list[PendingApprovalItem]:
        """Copies of the items still waiting for a decision (changing them changes nothing).

        They are the runtime's as loaded: for a session saved earlier, ``await
        runtime.load()`` first (a decision loads by itself). A sub-agent's pending
        approvals are listed here too, under namespaced ids (``{agent}/{approval_id}``,
        nesting further for its own sub-agents); decide them here like any other.
        A tool's server asking a person mid-call is listed too, as an item of kind
        ``"elicitation"`` (answered with ``answer/decline/cancel_elicitation``; DESIGN §15).
        """
        host = self._host
        if host is None:
            return []
        listing = getattr(host, "list_pending_approvals", None)
        if callable(listing):  # a host whose items may stand for others' (DESIGN §14)
            items = [item.model_copy(deep=True) for item in listing()]
        else:
            batch = host.get_pending_approval_batch()
            items = [] if batch is None else [item.model_copy(deep=True) for item in batch.items if item.is_pending()]
        return items + self.list_elicitations()

    def pending_batch(self) -> PendingApprovalBatch | None:
        """A copy of the whole pending batch (with decided items), or None."""
        batch = self._host.get_pending_approval_batch() if self._host is not None else None
        return batch.model_copy(deep=True) if batch is not None else None

    # -- elicitations (a tool's server asks a person mid-call; DESIGN §15) ------------

    def list_elicitations(self) -> list[PendingApprovalItem]:
        """The questions waiting for an answer: items of kind ``"elicitation"`` whose
        ``detail`` holds the ``message``, the form's ``schema``, the ``server`` and ``tool``."""
        listing = getattr(self._host, "list_elicitations", None)
        return list(listing()) if callable(listing) else []

    async def answer_elicitation(self, elicitation_id: str, content: dict[str, Any]) -> ApprovalDecisionResult:
        """Accept a question with the form's values (checked against its schema)."""
        return await self._elicit(elicitation_id, "accept", content)

    async def decline_elicitation(self, elicitation_id: str) -> ApprovalDecisionResult:
        """Decline a question (the server is told the person said no)."""
        return await self._elicit(elicitation_id, "decline", None)

    async def cancel_elicitation(self, elicitation_id: str) -> ApprovalDecisionResult:
        """Dismiss a question without a choice (the server is told it was cancelled)."""
        return await self._elicit(elicitation_id, "cancel", None)

    async def _elicit(self, elicitation_id: str, action: str, content: Any) -> ApprovalDecisionResult:
        apply = getattr(self._host, "apply_elicitation_answer", None)
        if not callable(apply):
            return ApprovalDecisionResult.failure(elicitation_id, ArkError(
                ErrorLayer.RUNTIME, ErrorCode.APPROVAL_HOST_MISSING, "no runtime is bound to this controller"))
        return await apply(elicitation_id, action, content)

    # -- decisions ------------------------------------------------------------------

    async def approve(self, approval_id: str, *, batch_id: str | None = None) -> ApprovalDecisionResult:
        """Approve one pending call; ``ok`` only once the decision is saved.

        Deciding twice while the batch is pending is an idempotent success; after the
        batch resolved it is ``approval_already_resolved`` carrying the decision that
        stands. A failed save returns ``ok=False`` (``state_save_failed``) and leaves the
        call pending: try again. ``batch_id`` (what a card shows) makes sure the decision
        lands only on that batch.
        """
        return await self._decide(approval_id, ApprovalDecision.APPROVED, None, batch_id)

    async def deny(self, approval_id: str, reason: str | None = None, *,
                   batch_id: str | None = None) -> ApprovalDecisionResult:
        """Deny one pending call; the model gets a ``tool_denied`` result carrying ``reason``.
        Saved before it is acknowledged, like :meth:`approve`."""
        if reason is not None and not isinstance(reason, str):
            raise invalid_argument(f"deny reason must be a string or None, got {type(reason).__name__}")
        return await self._decide(approval_id, ApprovalDecision.DENIED, reason, batch_id)

    async def approve_all(self) -> list[ApprovalDecisionResult]:
        """Approve every pending item (convenience for notebooks), loading a saved session first."""
        load = getattr(self._host, "load", None)
        if callable(load):
            await load()
        return [await self.approve(item.approval_id) for item in self.list_pending_approvals()]

    # -- plan review (seed 000 §6.3: every review goes through the ApprovalHost) -----------

    def get_pending_plan_review(self) -> PendingPlanReview | None:
        """The plan waiting for review (``PendingPlanReview``: the proposed plan, the plan it
        replaces, ids), or None. A copy: changing it changes nothing."""
        batch = self._host.get_pending_approval_batch() if self._host is not None else None
        return PendingPlanReview.from_batch(batch)

    async def approve_plan(self) -> ApprovalDecisionResult:
        """Approve the pending plan: the run continues and carries it out."""
        return await self._decide_plan(ApprovalDecision.APPROVED, None)

    async def reject_plan(self, reason: str | None = None) -> ApprovalDecisionResult:
        """Reject the pending plan; the model gets the rejection with ``reason`` as the
        ``write_todos`` result and can propose a revised plan."""
        if reason is not None and not isinstance(reason, str):
            raise invalid_argument(f"reject_plan reason must be a string or None, got {type(reason).__name__}")
        return await self._decide_plan(ApprovalDecision.DENIED, reason.strip() if reason and reason.strip() else None)

    async def _decide_plan(self, decision: ApprovalDecision, reason: str | None) -> ApprovalDecisionResult:
        if self._host is None:
            return ApprovalDecisionResult.failure("", ArkError(
                ErrorLayer.RUNTIME, ErrorCode.APPROVAL_HOST_MISSING,
                "this controller is not bound to a runtime, so it cannot apply decisions", Retryability.NEVER))
        review = self.get_pending_plan_review()
        if review is None:
            return ApprovalDecisionResult.failure("", ArkError(
                ErrorLayer.RUNTIME, ErrorCode.APPROVAL_NOT_FOUND,
                "no plan is waiting for review (plan_mode=PlanMode.REVIEW pauses when the model proposes one)"))
        # A plan review is a pending approval item of kind "plan": the same decision path,
        # idempotent and saved like any other (DESIGN §14).
        return await self._host.apply_approval_decision(review.approval_id, decision, reason)
    # -- in-doubt calls (DESIGN §13) ---------------------------------------------------

    def list_in_doubt(self) -> list[InDoubtItem]:
        """The calls waiting for a person to say what became of them, in batch order."""
        host = self._host
        listing = getattr(host, "list_pending_approvals", None)
        if callable(listing):  # also a sub-agent's, under namespaced ids (DESIGN §14)
            items = listing()
        else:
            batch = host.get_pending_approval_batch() if host is not None else None
            items = batch.items if batch is not None and batch.kind == "in_doubt" else ()
        return [InDoubtItem(item.approval_id, item.tool_call, item.started_at, item.attempts)
                for item in items if item.kind == "in_doubt" and item.is_pending()]

    async def rerun(self, operation_id: str) -> ApprovalDecisionResult:
        """Run the in-doubt call again (with the same ``ctx.idempotency_key``)."""
        return await self._resolve(operation_id, "rerun", None)

    async def mark_done(self, operation_id: str, result_text: str) -> ApprovalDecisionResult:
        """Record that the call ran: the model gets ``result_text`` as its result."""
        if not isinstance(result_text, str):
            raise invalid_argument(f"result_text must be a string, got {type(result_text).__name__}")
        return await self._resolve(operation_id, "done", result_text)

    async def mark_failed(self, operation_id: str, reason: str) -> ApprovalDecisionResult:
        """Record that the call did not succeed: the model gets an error result with ``reason``."""
        if not isinstance(reason, str):
            raise invalid_argument(f"reason must be a string, got {type(reason).__name__}")
        return await self._resolve(operation_id, "failed", reason)

    async def _resolve(self, operation_id: str, resolution: str, text: str | None) -> ApprovalDecisionResult:
        if not isinstance(operation_id, str) or not operation_id:
            raise invalid_argument(f"operation_id must be a non-empty string, got {operation_id!r}")
        host = self._host
        if not isinstance(host, InDoubtHost):
            return ApprovalDecisionResult.failure(operation_id, ArkError(
                ErrorLayer.RUNTIME, ErrorCode.APPROVAL_HOST_MISSING,
                "this controller is not bound to a runtime, so it cannot resolve in-doubt calls", Retryability.NEVER))
        return await host.apply_in_doubt_decision(operation_id, resolution, text)

    async def _decide(self, approval_id: str, decision: ApprovalDecision,
                      reason: str | None, batch_id: str | None) -> ApprovalDecisionResult:
        if not isinstance(approval_id, str) or not approval_id:
            raise invalid_argument(f"approval_id must be a non-empty string, got {approval_id!r}")
        if batch_id is not None and (not isinstance(batch_id, str) or not batch_id):
            raise invalid_argument(f"batch_id must be a non-empty string or None, got {batch_id!r}")
        if self._host is None:
            return ApprovalDecisionResult.failure(approval_id, ArkError(
                ErrorLayer.RUNTIME, ErrorCode.APPROVAL_HOST_MISSING,
                "this controller is not bound to a runtime, so it cannot apply decisions", Retryability.NEVER))
        if batch_id is None:  # hosts written before batch_id keep working
            return await self._host.apply_approval_decision(approval_id, decision, reason)
        return await self._host.apply_approval_decision(approval_id, decision, reason, batch_id=batch_id)
