"""Planning: a todo list the model keeps, and plan review by a person (DESIGN §14).

``AgentRuntime(..., plan_mode=PlanMode.AUTO | PlanMode.REVIEW)`` installs a
:class:`PlanExtension` through the runtime's extension seam: the built-in
``write_todos`` tool, ``state.plan``, ``plan.updated`` events and, in review mode, a
pause for a person like a tool approval (``runtime.controller.get_pending_plan_review()``,
``approve_plan()``, ``reject_plan(reason)``).
"""

from ..state import PendingPlanReview, Plan, PlanItem, TodoStatus
from .extension import NOT_APPROVED, PlanExtension, plan_extension
from .mode import PlanMode
from .todos import MAX_TODOS, WRITE_TODOS, Todo

__all__ = ["MAX_TODOS", "NOT_APPROVED", "PendingPlanReview", "Plan", "PlanExtension", "PlanItem", "PlanMode",
           "TodoStatus", "Todo", "WRITE_TODOS", "plan_extension"]
