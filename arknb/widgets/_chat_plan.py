"""The chat's todo list: the planner's current plan, kept for the ``plan`` trait.

The plan is durable (a view that opens later, or a kernel restart followed by a new
chat on the restored runtime, must show it), so it travels in a synced trait, not in
messages. It is small (at most 50 items) and changes only when ``write_todos`` runs,
so the trait is simply replaced on each ``plan.updated``.

The value is ``{}`` before any plan, else ``{"version", "items": [{"content",
"status"}], "approved", "mode"}`` (``approved`` is meaningful in review mode).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..events import EventTypes
from ..state import PLAN_SLICE, plan_of

__all__ = ["PlanPanel"]


class PlanPanel:
    """The current plan as the front end shows it."""

    __slots__ = ("value",)

    def __init__(self, value: dict[str, Any] | None = None) -> None:
        self.value: dict[str, Any] = value or {}

    @classmethod
    def from_state(cls, state: Any) -> PlanPanel:
        """The plan a (restored) state holds; nothing for a state without one or a slice
        that is not a plan (the runtime reports that one itself)."""
        extensions = getattr(state, "extensions", None)
        if not isinstance(extensions, Mapping):
            return cls()
        try:
            plan = plan_of(dict(extensions))
        except Exception:  # a corrupt slice: the runtime refuses it where it matters
            return cls()
        if plan is None:
            return cls()
        slice_ = extensions.get(PLAN_SLICE) or {}
        return cls({**plan.to_json_dict(), "approved": bool(slice_.get("approved")), "mode": None})

    def apply(self, event: Any) -> bool:
        """Fold a ``plan.updated`` event; True when the plan changed."""
        etype = event.get("type") if isinstance(event, Mapping) else getattr(event, "type", None)
        if etype != EventTypes.PLAN_UPDATED:
            return False
        payload = (event.get("payload") if isinstance(event, Mapping) else event.payload) or {}
        plan = payload.get("plan")
        if not isinstance(plan, Mapping):
            return False
        items = [{"content": str(i.get("content") or ""), "status": str(i.get("status") or "pending")}
                 for i in plan.get("items") or () if isinstance(i, Mapping)]
        value = {"version": plan.get("version"), "items": items, "approved": bool(payload.get("approved")),
                 "mode": payload.get("mode")}
        if value == self.value:
            return False
        self.value = value
        return True
