"""Elicitation: a tool source asks a person something mid-call (DESIGN §15).

An MCP server may ask, while one of its tools runs, for a few values (a form described by
a small JSON Schema). The running call asks through ``ToolContext.elicit``; this desk makes
the question a pending item of kind ``"elicitation"``: it is saved first (the state's
``extensions["elicitation"]`` slice, a mandatory save), then published as
``approval.required``, and the call waits until a person answers through the controller
(``answer_elicitation``, ``decline_elicitation``, ``cancel_elicitation``). New input is
refused while it waits. The desk is an extension the runtime installs when it has tool
sources; the loop never names it.

A live request cannot outlive its process: a restored session drops a question saved by a
process that died (its call is in doubt, DESIGN §13).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..domain import (
    AgentMessage, ArkError, ErrorCode, ErrorLayer, ModelConfig, ModelRequest, ToolCall, ToolRisk, invalid_argument,
)
from ..events import EventTypes
from ..state import AgentState, ApprovalDecision, ApprovalDecisionResult, PendingApprovalItem
from .extensions import Extension, ExtensionScope

__all__ = ["ELICITATION", "ElicitationDesk"]

ELICITATION = "elicitation"
_ACTIONS = ("accept", "decline", "cancel")
_DECISIONS = {"accept": ApprovalDecision.APPROVED, "decline": ApprovalDecision.DENIED,
              "cancel": ApprovalDecision.DENIED}


@dataclass(slots=True)
class _Question:
    item: PendingApprovalItem
    schema: dict[str, Any]
    answer: asyncio.Future = field(repr=False)


class ElicitationDesk(Extension):
    """The questions tool sources asked a person, each waiting for an answer."""

    name = ELICITATION

    def __init__(self) -> None:
        self._scope: ExtensionScope | None = None
        self._open: dict[str, _Question] = {}

    def setup(self, scope: ExtensionScope) -> None:
        self._scope = scope

    def on_restore(self, state: AgentState) -> None:
        # The process that asked is gone, and its request with it: forget the question.
        if state.extensions.get(ELICITATION) and self._scope is not None:
            self._scope.set_slice(None)

    def on_close(self, grace: float) -> None:
        for question in list(self._open.values()):
            if not question.answer.done():
                question.answer.set_result({"action": "cancel"})

    # -- asking -------------------------------------------------------------------------

    def pending(self) -> list[PendingApprovalItem]:
        """The questions waiting for a person (copies)."""
        return [q.item.model_copy(deep=True) for q in self._open.values() if not q.answer.done()]

    def blocks_input_error(self) -> ArkError | None:
        """The refusal new input gets while a question waits (None if none does)."""
        if not self._open:
            return None
        ids = ", ".join(self._open)
        return ArkError(ErrorLayer.SECURITY, ErrorCode.PENDING_APPROVAL_BLOCKS_INPUT,
                        f"a tool's server is asking a question ({ids}): answer it with "
                        "controller.answer_elicitation(id, content), decline_elicitation(id) or "
                        "cancel_elicitation(id) before sending new input")

    async def ask(self, call: ToolCall, message: str, schema: Mapping[str, Any],
                  detail: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Ask a person; returns ``{"action": "accept", "content": {...}}``, ``{"action":
        "decline"}`` or ``{"action": "cancel"}`` (also when the question cannot be saved)."""
        scope = self._scope
        if scope is None:
            return {"action": "decline"}
        question_id = scope.new_id("elicit")
        item = PendingApprovalItem(
            approval_id=question_id, tool_call=call, risk_level=ToolRisk.SAFE, reason=str(message),
            created_at=scope.clock(), kind=ELICITATION,
            detail={"message": str(message), "schema": dict(schema), **dict(detail or {})})
        answer: asyncio.Future = asyncio.get_running_loop().create_future()
        self._open[question_id] = _Question(item, dict(schema), answer)
        # Saved before it is announced (seed 000 §8.1): a chat that shows it can rely on it.
        saved = await scope.save_slice({"pending": [q.item.model_dump(mode="json") for q in self._open.values()]},
                                       "elicitation_required")
        if not saved.ok:
            self._open.pop(question_id, None)
            return {"action": "cancel"}
        scope.emit(EventTypes.APPROVAL_REQUIRED, {"batch_id": question_id, "items": [item.model_dump(mode="json")],
                                                  "kind": ELICITATION})
        try:
            return await answer
        finally:
            self._open.pop(question_id, None)
            rest = [q.item.model_dump(mode="json") for q in self._open.values()]
            scope.set_slice({"pending": rest} if rest else None)

    async def sample(self, call: ToolCall, messages: list, system: str | None, max_tokens: int | None,
                     detail: Mapping[str, Any] | None = None) -> str:
        """Ask the runtime's model for a tool's server (sampling, allowed per server); publishes
        ``tool.sampling``. The call is a model call like the loop's (``llm.before``/``llm.after``
        with purpose ``tool_sampling``, usage counted, secrets redacted)."""
        scope = self._scope
        if scope is None:
            raise ArkError(ErrorLayer.RUNTIME, ErrorCode.APPROVAL_HOST_MISSING, "the runtime is not set up")
        history = [AgentMessage.system(system)] if system else []
        for role, text in messages:
            history.append(AgentMessage.assistant(text) if role == "assistant" else AgentMessage.user(text))
        config = ModelConfig(max_tokens=max_tokens) if max_tokens else ModelConfig()
        response = await scope.call_model(ModelRequest(messages=tuple(history), tools=(), config=config),
                                          purpose="tool_sampling")
        text = response.message.text
        scope.emit(EventTypes.TOOL_SAMPLING, lambda: {
            "call_id": call.id, "name": call.name, **dict(detail or {}),
            "messages": [{"role": r, "text": t} for r, t in messages], "text": text})
        return text

    async def answer(self, question_id: str, action: str, content: Mapping[str, Any] | None) -> ApprovalDecisionResult:
        """Answer a waiting question (the controller's ``answer/decline/cancel_elicitation``)."""
        if action not in _ACTIONS:
            raise invalid_argument(f"an elicitation is answered with one of {_ACTIONS}, got {action!r}")
        question = self._open.get(question_id)
        if question is None or question.answer.done():
            waiting = ", ".join(self._open) or "none"
            return ApprovalDecisionResult.failure(question_id, ArkError(
                ErrorLayer.SECURITY, ErrorCode.APPROVAL_NOT_FOUND,
                f"no elicitation {question_id!r} is waiting (waiting: {waiting})"))
        values: dict[str, Any] | None = None
        if action == "accept":
            problem, values = _check(question.schema, content or {})
            if problem is not None:
                return ApprovalDecisionResult.failure(question_id, invalid_argument(
                    f"elicitation {question_id!r}: {problem}"))
        scope = self._scope
        decision = _DECISIONS[action]
        _settle(question.answer, {"action": action, **({"content": values} if values is not None else {})})
        if scope is not None:
            scope.emit(EventTypes.APPROVAL_DECIDED, {
                "batch_id": question_id, "approval_id": question_id, "decision": decision.value,
                "deny_reason": None if action == "accept" else action, "all_decided": True, "kind": ELICITATION,
                "action": action})
            decided = question.item.model_copy(update={"decision": decision, "decided_at": scope.clock(),
                                                       "deny_reason": None if action == "accept" else action})
            scope.emit(EventTypes.APPROVAL_RESOLVED, {"batch_id": question_id,
                                                      "items": [decided.model_dump(mode="json")]})
        return ApprovalDecisionResult.success(question_id, decision, True)


def _settle(future: asyncio.Future, value: dict[str, Any]) -> None:
    """Resolve ``future`` from any thread: a front end's message may be handled on a thread and
    loop of its own (ipykernel 7 handles comm messages off the main loop), and a future set
    from there would not wake the loop the asking call waits on."""
    loop = future.get_loop()
    try:
        here = asyncio.get_running_loop()
    except RuntimeError:
        here = None

    def settle() -> None:
        if not future.done():
            future.set_result(value)

    if here is loop:
        settle()
    else:
        loop.call_soon_threadsafe(settle)


def _check(schema: Mapping[str, Any], content: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """Check ``content`` against an elicitation schema (flat object of primitives)."""
    if not isinstance(content, Mapping):
        return "content must be a mapping of field names to values", {}
    properties = schema.get("properties") or {}
    values: dict[str, Any] = {}
    for name in schema.get("required") or ():
        if name not in content or content[name] in (None, ""):
            return f"the field {name!r} is required", {}
    for name, value in content.items():
        spec = properties.get(name)
        if spec is None:
            return f"the form has no field {name!r} (fields: {', '.join(properties) or 'none'})", {}
        kind = spec.get("type")
        if value is None:
            continue
        if kind == "integer":
            if isinstance(value, str) and value.strip().lstrip("-").isdigit():
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int):
                return f"{name!r} must be a whole number", {}
        elif kind == "number":
            if isinstance(value, str):
                try:
                    value = float(value)
                except ValueError:
                    return f"{name!r} must be a number", {}
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return f"{name!r} must be a number", {}
        elif kind == "boolean":
            if not isinstance(value, bool):
                return f"{name!r} must be true or false", {}
        elif kind == "string" and not isinstance(value, str):
            return f"{name!r} must be text", {}
        if "enum" in spec and value not in spec["enum"]:
            return f"{name!r} must be one of {spec['enum']}", {}
        values[name] = value
    return None, values
