"""Pending items as AG-UI interrupts, and resume entries as controller decisions (DESIGN §18).

Every pending item a person decides — an approval, an in-doubt call, a plan review, a
detected loop, an MCP elicitation, a graph's human step, or the item of any other
``ApprovalKind`` — becomes one ``Interrupt`` with a readable ``message``, the call's
``toolCallId`` and arguments (in ``metadata["arknb"]``) and a ``responseSchema`` for its
resume payload. A ``resume`` entry is checked against that schema and then decided
through the runtime's controller, exactly as the chat's buttons do (same idempotency,
same ``approval_already_resolved``). ``status: "cancelled"`` denies or cancels.

Each kind is an :class:`InterruptKind` in a table (:func:`register_interrupt_kind`);
a kind the table does not know is decided as an approval (``{"approved": bool}``),
which is what its ``ApprovalKind`` accepts through ``controller.approve/deny``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import jsonschema
from ag_ui.core import Interrupt, ResumeEntry

from arknb.controller import AgentController
from arknb.domain import ArkError, ErrorCode, ErrorLayer
from arknb.state import ApprovalDecisionResult, PendingApprovalItem

__all__ = ["APPROVAL_SCHEMA", "ELICITATION", "IN_DOUBT_SCHEMA", "InterruptKind", "decide", "interrupt_kind", "register_interrupt_kind",
           "to_interrupt", "validate_payload"]

CANCELLED_REASON = "cancelled by the client"
ELICITATION = "elicitation"
"""The kind of a tool server's question asked mid-call: the run waits, still running, for its answer."""

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}
IN_DOUBT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"resolution": {"enum": ["rerun", "done", "failed"]}, "text": {"type": "string"}},
    "required": ["resolution"],
}

Decider = Callable[[AgentController, PendingApprovalItem, ResumeEntry], Awaitable[ApprovalDecisionResult]]


@dataclass(frozen=True, slots=True)
class InterruptKind:
    """How the pending items of one kind travel over AG-UI.

    Attributes:
        kind: ``PendingApprovalItem.kind`` this entry serves.
        reason: the interrupt's ``reason``.
        schema: the item's resume payload schema (``responseSchema``).
        message: the readable prompt for the item.
        decide: applies a (validated) resume entry through the controller.
    """

    kind: str
    reason: str
    schema: Callable[[PendingApprovalItem], dict[str, Any]]
    message: Callable[[PendingApprovalItem], str]
    decide: Decider


def _call_text(item: PendingApprovalItem) -> str:
    call = item.tool_call
    return f"{call.name}({call.arguments_json or '{}'})"


async def _decide_approval(controller: AgentController, item: PendingApprovalItem,
                           entry: ResumeEntry) -> ApprovalDecisionResult:
    payload = entry.payload if isinstance(entry.payload, dict) else {}
    if entry.status == "resolved" and payload.get("approved") is True:
        return await controller.approve(item.approval_id)
    reason = payload.get("reason") if entry.status == "resolved" else CANCELLED_REASON
    return await controller.deny(item.approval_id, reason or None)


async def _decide_in_doubt(controller: AgentController, item: PendingApprovalItem,
                           entry: ResumeEntry) -> ApprovalDecisionResult:
    if entry.status == "cancelled":
        return await controller.mark_failed(item.approval_id, CANCELLED_REASON)
    payload = entry.payload
    resolution, text = payload["resolution"], payload.get("text")
    if resolution == "rerun":
        return await controller.rerun(item.approval_id)
    if resolution == "done":
        return await controller.mark_done(item.approval_id, text or "done (recorded by the client)")
    return await controller.mark_failed(item.approval_id, text or "failed (recorded by the client)")


def _controller_method(controller: AgentController, name: str, kind: str) -> Callable[..., Any]:
    method = getattr(controller, name, None)
    if not callable(method):
        raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                       f"this runtime's controller has no {name}(): it cannot answer a {kind!r} item")
    return method


async def _decide_elicitation(controller: AgentController, item: PendingApprovalItem,
                              entry: ResumeEntry) -> ApprovalDecisionResult:
    action = "cancel" if entry.status == "cancelled" else entry.payload["action"]
    if action == "accept":
        return await _controller_method(controller, "answer_elicitation", item.kind)(
            item.approval_id, entry.payload.get("content") or {})
    return await _controller_method(controller, f"{action}_elicitation", item.kind)(item.approval_id)


async def _decide_human(controller: AgentController, item: PendingApprovalItem,
                        entry: ResumeEntry) -> ApprovalDecisionResult:
    if entry.status == "cancelled":
        return await controller.deny(item.approval_id, CANCELLED_REASON)
    return await _controller_method(controller, "answer_human", item.kind)(item.approval_id, entry.payload["value"])


def _plan_message(item: PendingApprovalItem) -> str:
    plan = item.detail.get("plan") if isinstance(item.detail, dict) else None
    items = plan.get("items") if isinstance(plan, dict) else None
    steps = "; ".join(str(step.get("content", step)) if isinstance(step, dict) else str(step)
                      for step in items or ())
    return f"Approve this plan? {steps}" if steps else f"Approve the proposed plan? ({item.reason})"


_KINDS: dict[str, InterruptKind] = {}
_APPROVAL = InterruptKind(
    kind="tool", reason="approval", schema=lambda item: APPROVAL_SCHEMA,
    message=lambda item: f"Approve {_call_text(item)}? {item.reason}", decide=_decide_approval)


def register_interrupt_kind(entry: InterruptKind) -> None:
    """Add (or replace) how items of ``entry.kind`` become interrupts and are resumed."""
    _KINDS[entry.kind] = entry


def interrupt_kind(kind: str) -> InterruptKind:
    """The entry for ``kind`` (an unknown kind is decided as an approval)."""
    return _KINDS.get(kind, _APPROVAL)


register_interrupt_kind(_APPROVAL)
register_interrupt_kind(InterruptKind(
    kind="plan", reason="plan_review", schema=lambda item: APPROVAL_SCHEMA, message=_plan_message,
    decide=_decide_approval))
register_interrupt_kind(InterruptKind(
    kind="loop", reason="loop_detected", schema=lambda item: APPROVAL_SCHEMA,
    message=lambda item: f"Continue although the same call repeats? {item.reason}", decide=_decide_approval))
register_interrupt_kind(InterruptKind(
    kind="in_doubt", reason="in_doubt", schema=lambda item: IN_DOUBT_SCHEMA,
    message=lambda item: (f"{_call_text(item)} may or may not have run (the process stopped while it ran): "
                          "run it again, or record that it was done or that it failed."),
    decide=_decide_in_doubt))
register_interrupt_kind(InterruptKind(
    kind="elicitation", reason="elicitation",
    schema=lambda item: {
        "type": "object",
        "properties": {"action": {"enum": ["accept", "decline", "cancel"]},
                       "content": dict(item.detail.get("schema") or item.detail.get("requested_schema")
                                       or {"type": "object"})},
        "required": ["action"]},
    message=lambda item: str(item.detail.get("message") or item.reason), decide=_decide_elicitation))
register_interrupt_kind(InterruptKind(
    kind="human", reason="human",
    schema=lambda item: {"type": "object", "properties": {"value": dict(item.detail.get("schema") or {})},
                         "required": ["value"]},
    message=lambda item: str(item.detail.get("ask") or item.detail.get("message") or item.reason),
    decide=_decide_human))


def to_interrupt(item: PendingApprovalItem, batch_id: str | None) -> Interrupt:
    """The interrupt a pending item becomes."""
    entry = interrupt_kind(item.kind)
    call = item.tool_call
    try:
        arguments: Any = json.loads(call.arguments_json or "{}")
    except ValueError:
        arguments = call.arguments_json
    detail = {"kind": item.kind, "tool": call.name, "arguments": arguments, "risk": str(item.risk_level.value),
              "batchId": batch_id, "detail": json.loads(json.dumps(dict(item.detail), default=str))}
    return Interrupt(id=item.approval_id, reason=entry.reason, message=entry.message(item),
                     tool_call_id=call.id or None, response_schema=json.loads(json.dumps(entry.schema(item))),
                     metadata={"arknb": detail})


def validate_payload(item: PendingApprovalItem, entry: ResumeEntry) -> None:
    """Check a resolved entry's payload against the item's schema.

    Raises:
        ArkError: ``agui_input_invalid`` naming the interrupt and each problem.
    """
    if entry.status == "cancelled":
        return
    schema = interrupt_kind(item.kind).schema(item)
    problems = [f"{'.'.join(map(str, e.path)) or 'payload'}: {e.message}"
                for e in jsonschema.validators.validator_for(schema)(schema).iter_errors(entry.payload)]
    if problems:
        raise ArkError(ErrorLayer.DECODE, ErrorCode.AGUI_INPUT_INVALID,
                       f"resume payload for interrupt {item.approval_id!r} does not match its responseSchema: "
                       + "; ".join(problems))


async def decide(controller: AgentController, item: PendingApprovalItem, entry: ResumeEntry) -> ApprovalDecisionResult:
    """Apply one validated resume entry through the controller."""
    return await interrupt_kind(item.kind).decide(controller, item, entry)
