"""The plan as saved data: the todo list the planner keeps, and a plan waiting for review.

These are the value types of DESIGN §14 ("Plan"). They live in the state package so the
state (``state.plan``) and the controller (``get_pending_plan_review()``) can read them
without importing the planner, which writes them through its extension slice.

The planner's slice is ``state.extensions["plan"]``::

    {"plan": {"version": 2, "items": [{"content": "...", "status": "pending"}, ...]},
     "approved": true, "approved_call": null}

A plan review is a pending approval item of kind ``"plan"`` whose ``detail`` holds the
proposed plan (and the plan it would replace).
"""

from __future__ import annotations

from collections import Counter
from enum import StrEnum
from typing import Any, Iterable

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from arknb.domain import ArkError, ErrorCode, ErrorLayer

from .approvals import PendingApprovalBatch, PendingApprovalItem

__all__ = ["PLAN_KIND", "PLAN_SLICE", "PendingPlanReview", "Plan", "PlanItem", "TodoStatus", "plan_of"]

PLAN_SLICE = "plan"
"""The planner extension's name: the key of its slice in ``state.extensions``."""

PLAN_KIND = "plan"
"""The kind of a pending approval item that is a plan review."""

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class TodoStatus(StrEnum):
    """Where one item of a plan stands."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


class PlanItem(BaseModel):
    """One step of a plan: what to do, and how far it got.

    Example:
        >>> PlanItem(content=" Read the logs ", status="in_progress").content
        'Read the logs'
    """

    model_config = _FROZEN

    content: str = Field(min_length=1, max_length=2000)
    status: TodoStatus = TodoStatus.PENDING

    @field_validator("content", mode="before")
    @classmethod
    def _strip(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value


class Plan(BaseModel):
    """A numbered version of the todo list (``state.plan``).

    ``version`` counts every change the planner applied in this session (1 is the first
    plan); ``items`` are in the model's order.

    Example:
        >>> plan = Plan(version=1, items=[PlanItem(content="look"), PlanItem(content="fix")])
        >>> plan.counts()["pending"], plan.same_items([PlanItem(content="fix", status="completed"),
        ...                                           PlanItem(content="look")])
        (2, True)
    """

    model_config = _FROZEN

    version: int = Field(ge=1)
    items: tuple[PlanItem, ...] = ()

    def same_items(self, items: Iterable[PlanItem]) -> bool:
        """True if ``items`` hold the same steps as this plan, whatever their statuses and
        order: an update of statuses only, which never needs a new review (DESIGN §14)."""
        return Counter(i.content for i in self.items) == Counter(i.content for i in items)

    def counts(self) -> dict[str, int]:
        """How many items have each status (every status is a key)."""
        counts = {status.value: 0 for status in TodoStatus}
        for item in self.items:
            counts[item.status.value] += 1
        return counts

    @property
    def finished(self) -> bool:
        """True when every item is completed or cancelled (and there is at least one)."""
        return bool(self.items) and all(i.status in (TodoStatus.COMPLETED, TodoStatus.CANCELLED) for i in self.items)

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON form saved in the slice and sent in events."""
        return self.model_dump(mode="json")


class PendingPlanReview(BaseModel):
    """A plan waiting for a person (what ``controller.get_pending_plan_review()`` returns).

    Attributes:
        approval_id: the pending item's id (``controller.approve(approval_id)`` works too).
        batch_id: the frozen tool batch the review belongs to.
        run_id: the run that paused.
        plan: the proposed plan.
        previous: the plan it would replace (None for a first plan).
        reason: why it waits.
        created_at: when the run paused.
    """

    model_config = ConfigDict(frozen=True)

    approval_id: str
    batch_id: str
    run_id: str
    plan: Plan
    previous: Plan | None = None
    reason: str = ""
    created_at: float = 0.0

    @classmethod
    def from_batch(cls, batch: PendingApprovalBatch | None) -> PendingPlanReview | None:
        """The first undecided plan review in ``batch``, or None."""
        if batch is None:
            return None
        for item in batch.items:
            if item.kind == PLAN_KIND and item.is_pending():
                return cls.from_item(batch, item)
        return None

    @classmethod
    def from_item(cls, batch: PendingApprovalBatch, item: PendingApprovalItem) -> PendingPlanReview:
        """The review an item of kind ``"plan"`` stands for."""
        try:
            plan = Plan.model_validate(item.detail["plan"])
            previous = item.detail.get("previous")
            previous = Plan.model_validate(previous) if previous is not None else None
        except (KeyError, TypeError, ValidationError) as exc:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                           f"the plan review {item.approval_id!r} holds no readable plan ({type(exc).__name__})") from None
        return cls(approval_id=item.approval_id, batch_id=batch.batch_id, run_id=batch.run_id, plan=plan,
                   previous=previous, reason=item.reason, created_at=item.created_at)


def plan_of(extensions: dict[str, Any]) -> Plan | None:
    """The plan held by the planner's slice of ``state.extensions`` (None: no plan yet).

    A state saved before plans existed has no slice, so it reads as no plan.

    Raises:
        ArkError: ``state_corrupt`` if the slice holds something that is not a plan.
    """
    slice_ = extensions.get(PLAN_SLICE)
    if not slice_:
        return None
    raw = slice_.get("plan") if isinstance(slice_, dict) else None
    if raw is None:
        return None
    try:
        return Plan.model_validate(raw)
    except ValidationError as exc:
        raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                       f"the saved plan (state.extensions['plan']) is not a plan: {exc.error_count()} problem(s), "
                       f"first at {'.'.join(str(p) for p in exc.errors()[0]['loc'])}") from None
