"""PlanExtension: plan mode as a runtime extension (DESIGN §14, seed 000 §6.3, 003 §9).

What it contributes through the seam:

* the built-in ``write_todos`` tool, which replaces ``state.plan`` and publishes
  ``plan.updated``;
* a system-prompt section: how to plan, and the current plan;
* a ``before_tool_call`` hook (``plan_mode``): in review mode a new plan is deferred to a
  person as a pending item of kind ``"plan"``, and until a plan is approved every call
  of a tool not declared ``read_only`` is denied with "plan not approved yet";
* the ``"plan"`` approval kind: ``plan.review_required`` after the mandatory save,
  ``plan.review_resolved`` after a decision, a rejection answered with its reason,
  ``pending_plan_review_blocks_input`` for new input while a review waits.

Its slice, ``state.extensions["plan"]``, holds the plan and whether a person approved
it (see :mod:`arknb.state.plan`).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from ..domain import ArkError, ErrorCode, ErrorLayer, ToolResult
from ..events import EventTypes
from ..hooks import AgentHook, ToolCallHookContext, ToolCallHookResult
from ..runtime.extensions import ApprovalKind, Extension, ExtensionScope
from ..state import (
    PLAN_KIND, PLAN_SLICE, AgentState, ApprovalDecision, PendingApprovalBatch, PendingApprovalItem, Plan, plan_of,
)
from ..tools import Tool, ToolContext, tool
from .mode import PlanMode
from .todos import MAX_TODOS, WRITE_TODOS, WRITE_TODOS_DESCRIPTION, Todo, items_of, parse_todos, render, summary

__all__ = ["PlanExtension", "NOT_APPROVED", "plan_extension"]

NOT_APPROVED = "plan not approved yet"
PROPOSED = "rejected_version"  # the slice's record of the newest rejected proposal's version


def next_version(state: AgentState) -> int:
    """The version the next plan gets: one past the current plan and past any proposal a
    reviewer rejected (a rejected version 1 makes the revised plan version 2)."""
    current = plan_of(state.extensions)
    rejected = (state.extensions.get(PLAN_SLICE) or {}).get(PROPOSED) or 0
    return max(current.version if current is not None else 0, rejected if isinstance(rejected, int) else 0) + 1

_AUTO_GUIDE = (
    "## Planning\n"
    "You keep a todo list with the `write_todos` tool. For a task with several steps, write the plan before "
    "you act, then keep it current as you work: one item in_progress at a time, completed as soon as it is "
    "done, cancelled if it no longer applies. Each call replaces the whole list, so always send every item; "
    "call it at most once per turn. A simple one-step request needs no list.")

_REVIEW_GUIDE = (
    "\nPlans are reviewed by a person here. Until a plan is approved only read-only tools run; any other call "
    f"is refused with \"{NOT_APPROVED}\". So investigate first with read-only tools, then propose your plan "
    "with `write_todos`: the run pauses until the reviewer decides. If the plan is rejected you get the "
    "reviewer's reason: revise the plan and propose it again. Once it is approved, carry it out. Changing "
    "only the statuses of the approved items needs no new review; adding, removing or rewording items does.")


def plan_extension(value: Any) -> PlanExtension | None:
    """What ``AgentRuntime(plan_mode=value)`` installs (None for ``PlanMode.OFF``)."""
    mode = PlanMode.parse(value)
    return None if mode is PlanMode.OFF else PlanExtension(mode)


class PlanExtension(Extension):
    """Plan mode (``AUTO`` or ``REVIEW``) as an extension; ``plan_mode=`` installs it.

    Example:
        >>> runtime = ark.AgentRuntime(model, tools=[...], plan_mode=ark.PlanMode.REVIEW)   # doctest: +SKIP
        >>> review = runtime.controller.get_pending_plan_review()                          # doctest: +SKIP
        >>> await runtime.controller.approve_plan()                                        # doctest: +SKIP
    """

    name = PLAN_SLICE

    def for_new_session(self) -> PlanExtension:
        return PlanExtension(self.mode)

    def __init__(self, mode: PlanMode | str = PlanMode.AUTO) -> None:
        mode = PlanMode.parse(mode)
        if mode is PlanMode.OFF:
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                           "PlanExtension needs PlanMode.AUTO or REVIEW; for no planning install nothing")
        self.mode = mode
        self._scope: ExtensionScope | None = None
        self._tool = self._build_tool()
        self._gate = _PlanGate(self)
        self._kind = _PlanReview(self)

    # -- the seam --------------------------------------------------------------------

    def setup(self, scope: ExtensionScope) -> None:
        self._scope = scope

    def tools(self, state: AgentState) -> tuple[Tool, ...]:
        return (self._tool,)

    def instructions(self, state: AgentState) -> str:
        text = _AUTO_GUIDE + (_REVIEW_GUIDE if self.mode is PlanMode.REVIEW else "")
        plan = plan_of(state.extensions)
        if plan is not None:
            status = ""
            if self.mode is PlanMode.REVIEW:
                status = " (approved)" if self.approved(state) else " (not approved)"
            text += f"\n\nCurrent plan, version {plan.version}{status}:\n{render(plan)}"
        return text

    def hooks(self) -> tuple[AgentHook, ...]:
        return (self._gate,)

    def approval_kinds(self) -> tuple[ApprovalKind, ...]:
        return (self._kind,)

    def on_restore(self, state: AgentState) -> None:
        plan_of(state.extensions)  # a slice that is not a plan fails here, naming it, not mid-run

    # -- the plan ----------------------------------------------------------------------

    def approved(self, state: AgentState) -> bool:
        """True when the current plan was approved by a person (review mode)."""
        slice_ = state.extensions.get(PLAN_SLICE) or {}
        return bool(slice_.get("approved")) and plan_of(state.extensions) is not None

    def needs_review(self, state: AgentState, items) -> bool:
        """Review mode only: True unless ``items`` only change statuses of the approved plan."""
        if self.mode is not PlanMode.REVIEW:
            return False
        current = plan_of(state.extensions)
        return not (current is not None and self.approved(state) and current.same_items(items))

    def _build_tool(self) -> Tool:
        extension = self

        @tool(name=WRITE_TODOS, description=WRITE_TODOS_DESCRIPTION, read_only=True)
        async def write_todos(
            todos: Annotated[list[Todo], Field(min_length=1, max_length=MAX_TODOS,
                                               description="The whole todo list, in the order to work on it.")],
            ctx: ToolContext,
        ) -> str | ToolResult:
            return await extension._apply(items_of(todos), ctx.call_id)

        return write_todos

    async def _apply(self, items, call_id: str) -> str | ToolResult:
        scope = self._scope
        state = scope.state
        current = plan_of(state.extensions)
        # In review mode a new plan only gets here once a person approved it (the gate
        # deferred it); an update of statuses only keeps the approval it had.
        new_plan = self.needs_review(state, items)
        approved = self.mode is PlanMode.REVIEW and (new_plan or self.approved(state))
        plan = Plan(version=next_version(state), items=items)
        # Saved before it is announced: the answer is recorded as the call's result, which a
        # restore reuses without running the call again, so the state must already hold the plan.
        saved = await scope.save_slice({"plan": plan.to_json_dict(), "approved": approved}, "plan_updated")
        if not saved.ok:
            return saved.refusal("the plan was not saved", "call write_todos again")
        change = "status" if current is not None and current.same_items(items) else "new"
        scope.emit(EventTypes.PLAN_UPDATED, lambda: {
            "plan": plan.to_json_dict(), "previous_version": current.version if current is not None else None,
            "change": change, "approved": approved, "mode": self.mode.value, "call_id": call_id})
        if self.mode is PlanMode.REVIEW and new_plan:
            return (f"The reviewer approved the plan (version {plan.version}, {summary(plan)}). Carry it out now, "
                    "keeping the statuses current with write_todos.")
        return f"Plan saved (version {plan.version}, {summary(plan)})."


class _PlanGate(AgentHook):
    """Defers new plans to a person and holds back non-read-only tools until one is approved."""

    name = "plan_mode"

    def __init__(self, extension: PlanExtension) -> None:
        self.ext = extension

    async def before_tool_call(self, ctx: ToolCallHookContext) -> ToolCallHookResult | None:
        call = ctx.call
        if call.name == WRITE_TODOS:
            parallel = sum(1 for c in ctx.model_message.tool_calls if c.name == WRITE_TODOS)
            if parallel > 1:
                # Each call replaces the whole list: two in one turn have no sensible order.
                return ToolCallHookResult.deny(ToolResult.from_text(
                    f"write_todos was called {parallel} times in one turn; nothing was changed. Call it once, "
                    "with the whole list.", is_error=True), "write_todos called more than once in a turn")
            if self.ext.mode is not PlanMode.REVIEW:
                return None
            items = parse_todos(call)
            if items is None or not self.ext.needs_review(ctx.state, items):
                return None  # invalid arguments are answered by the tool; a status update needs no review
            current = plan_of(ctx.state.extensions)
            proposed = Plan(version=next_version(ctx.state), items=items)
            return ToolCallHookResult.defer(
                "a new plan waits for review", kind=PLAN_KIND,
                detail={"plan": proposed.to_json_dict(),
                        "previous": current.to_json_dict() if current is not None else None})
        if self.ext.mode is not PlanMode.REVIEW or self.ext.approved(ctx.state):
            return None
        definition = next((d for d in ctx.available_tools if d.name == call.name), None)
        if definition is None or definition.read_only:
            return None  # an unknown tool is answered tool_not_found by the registry (seed 000 §10.1)
        return ToolCallHookResult.deny(ToolResult.from_text(
            f"{NOT_APPROVED}: {call.name} was not run. Until a reviewer approves a plan only read-only tools run; "
            "investigate with them, then propose your plan with write_todos.", is_error=True), NOT_APPROVED)


class _PlanReview(ApprovalKind):
    """Pending items of kind ``"plan"``: a proposed plan waiting for a person."""

    name = PLAN_KIND
    how_to_decide = "review the plan with runtime.controller.approve_plan() or reject_plan(reason)"

    def __init__(self, extension: PlanExtension) -> None:
        self.ext = extension

    def announce(self, batch: PendingApprovalBatch, items: tuple[PendingApprovalItem, ...]) -> None:
        for item in items:
            self.ext._scope.emit(EventTypes.PLAN_REVIEW_REQUIRED, lambda item=item: {
                "batch_id": batch.batch_id, "approval_id": item.approval_id, "call_id": item.tool_call.id,
                "plan": item.detail.get("plan"), "previous": item.detail.get("previous"), "reason": item.reason})

    async def on_decided(self, batch: PendingApprovalBatch, item: PendingApprovalItem) -> None:
        self.ext._scope.emit(EventTypes.PLAN_REVIEW_RESOLVED, lambda: {
            "batch_id": batch.batch_id, "approval_id": item.approval_id, "decision": item.decision.value,
            "reason": item.deny_reason, "plan": item.detail.get("plan")})

    def answer(self, item: PendingApprovalItem) -> ToolResult | None:
        if item.decision is ApprovalDecision.APPROVED:
            return None  # write_todos runs and saves the plan as approved
        self._remember_rejected(item)
        why = f"Reason: {item.deny_reason}" if item.deny_reason else "No reason was given."
        return ToolResult.from_text(
            f"The reviewer rejected this plan. {why}\nNothing was changed. Revise the plan and propose it again "
            "with write_todos; until a plan is approved only read-only tools run.",
            is_error=True, error_code=ErrorCode.TOOL_DENIED.value)

    def _remember_rejected(self, item: PendingApprovalItem) -> None:
        """A rejected proposal keeps its version number: the revised plan is the next one
        (saved with the rejection's answer, so a restored session numbers on from it)."""
        version = (item.detail.get("plan") or {}).get("version")
        scope = self.ext._scope
        if scope is None or not isinstance(version, int):
            return
        slice_ = dict(scope.slice or {})
        if version > (slice_.get(PROPOSED) or 0):
            scope.set_slice({**slice_, PROPOSED: version})

    def blocks_input_error(self, batch: PendingApprovalBatch) -> ArkError:
        return ArkError(ErrorLayer.SECURITY, ErrorCode.PENDING_PLAN_REVIEW_BLOCKS_INPUT,
                        "a plan waits for review: approve it with runtime.controller.approve_plan() or reject it "
                        "with runtime.controller.reject_plan(reason) before sending new input")
