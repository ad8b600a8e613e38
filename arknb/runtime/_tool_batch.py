"""Tool phase: plan the batch through before_tool_call, then run it, then after_tool_call.

Planning decides each call (seed 000 §5, §8): user hooks first, then the built-in
approval policy, which defers registered dangerous tools and lets unknown tools through
so the registry can answer ``tool_not_found`` (seed 000 §10.1). Any defer freezes the
whole batch: no call of it runs until every deferred call is decided.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, NamedTuple

from ..domain import AgentMessage, ErrorCode, Role, ToolCall, ToolResult, ToolRisk
from ..events import EventTypes
from ..events.envelope import flat_payload
from ..hooks import HookSlot, ToolCallAction, ToolCallHookContext, ToolResultAction, ToolResultHookContext
from ..hooks.pipeline import jsonable
from ..state import DeniedCall
from ..tools import ToolContext
from ._model_call import abort_error

if TYPE_CHECKING:
    from ._context import RunContext
    from .runtime import AgentRuntime

__all__ = ["BatchPlan", "BatchOutcome", "Deferred", "ToolBatch", "plan_batch", "execute_batch", "tool_message"]

APPROVAL_POLICY = "approval_policy"


class Deferred(NamedTuple):
    """A call planning deferred to a person, and the kind of item it becomes."""

    call: ToolCall
    reason: str
    risk: ToolRisk
    kind: str = "tool"
    detail: dict | None = None


@dataclass(slots=True)
class BatchPlan:
    """What planning decided for one batch."""

    batch_id: str
    allowed: list[ToolCall] = field(default_factory=list)
    denied: list[DeniedCall] = field(default_factory=list)
    deferred: list[Deferred] = field(default_factory=list)


@dataclass(slots=True)
class BatchOutcome:
    """What running a batch produced."""

    stop: bool = False
    stop_reason: str | None = None


def tool_message(call: ToolCall, result: ToolResult) -> AgentMessage:
    """The history message answering ``call``."""
    contents = result.contents if result.contents else (ToolResult.from_text("").contents)
    return AgentMessage.model_construct(role=Role.TOOL, contents=contents, tool_call_id=call.id, tool_calls=(),
                                        reasoning=(), is_error=result.is_error)


# Payloads are built frozen (flat_payload: every value a scalar or frozen already), so
# publishing them costs no walk: tool events come once per call.
def call_payload(call: ToolCall) -> dict:
    return flat_payload(id=call.id, name=call.name, arguments_json=call.arguments_json, index=call.index)


def result_payload(result: ToolResult) -> dict:
    return flat_payload(text=result.text, is_error=result.is_error, error_code=result.error_code, stop=result.stop)


async def plan_batch(rt: AgentRuntime, ctx: RunContext, message: AgentMessage,
                     calls: Iterable[ToolCall] | None = None) -> BatchPlan:
    """Run before_tool_call for every call of ``message`` (or only ``calls``), then the approval policy."""
    plan = BatchPlan(batch_id=rt._new_id("batch"))
    pipeline = rt._pipeline
    hooked = pipeline.has(HookSlot.BEFORE_TOOL_CALL)
    tools = rt._offered_tools()
    definitions = tools.definitions() if hooked else ()
    for call in (message.tool_calls if calls is None else calls):
        if hooked:
            decision = await pipeline.before_tool_call(ToolCallHookContext(
                session_id=rt.session_id, run_id=ctx.run_id, state=rt.state, call=call, model_message=message,
                available_tools=definitions, batch_id=plan.batch_id))
            action = decision.action
            call = decision.call or call  # as rewritten by the hooks, also when denied or deferred
            if action is ToolCallAction.ABORT:
                raise abort_error("before_tool_call", decision.hook, decision.reason, decision.error)
            if action is ToolCallAction.DENY:
                result = decision.synthetic_result or ToolResult.from_text(
                    f"tool_denied: {decision.reason or 'denied by policy'}", is_error=True)
                if result.error_code is None:
                    result = result.model_copy(update={"error_code": ErrorCode.TOOL_DENIED.value})
                plan.denied.append(DeniedCall(call=call, result=result, reason=decision.reason, hook=decision.hook))
                continue
            if action is ToolCallAction.DEFER:
                plan.deferred.append(Deferred(call, decision.reason or f"deferred by hook {decision.hook!r}",
                                              tools.risk_of(call.name) or ToolRisk.SAFE,
                                              decision.kind or "tool", decision.detail))
                continue
        # The built-in approval policy runs after the user hooks (DESIGN §7).
        if rt.require_approval and tools.risk_of(call.name) is ToolRisk.DANGEROUS:
            reason = f"{call.name} is a dangerous tool and needs approval"
            rt._emit(EventTypes.HOOK_DECISION, lambda: {
                "slot": "before_tool_call", "hook": APPROVAL_POLICY, "action": "defer", "reason": reason,
                "before": jsonable(call), "after": None, "call_id": call.id})
            plan.deferred.append(Deferred(call, reason, ToolRisk.DANGEROUS))
        else:
            plan.allowed.append(call)
    return plan


async def execute_batch(rt: AgentRuntime, ctx: RunContext, batch_id: str, model_message: AgentMessage,
                        allowed: Iterable[ToolCall], denied: Iterable[DeniedCall],
                        settled: Iterable[DeniedCall] = ()) -> BatchOutcome:
    """Run the allowed calls concurrently (through the invocation seam), then
    after_tool_call per result in call order, then append every answer to history (one
    per call of ``model_message``). ``settled`` calls are answered with the result a
    person recorded for them.

    Raises:
        CallsInDoubt: the seam found calls whose fate is unknown (after a crash).
    """
    allowed = list(allowed)
    answers: dict[str, tuple[ToolCall, ToolResult]] = {}
    for item in denied:
        answers[item.call.id] = (item.call, item.result)
        rt._emit(EventTypes.TOOL_DENIED, lambda item=item: flat_payload(
            call=call_payload(item.call), result=result_payload(item.result), reason=item.reason,
            hook=item.hook, batch_id=batch_id))
    for item in settled:
        # A person recorded what became of an in-doubt call (DESIGN §13): its answer, not a run.
        answers[item.call.id] = (item.call, item.result)
        rt._emit(EventTypes.TOOL_AFTER, lambda item=item: flat_payload(
            call=call_payload(item.call), result=result_payload(item.result), batch_id=batch_id,
            duration_ms=0.0, settled_by=item.hook))
    if allowed:
        batch = ToolBatch(rt, ctx, batch_id, allowed, model_message)
        for call in batch.calls:
            batch.started[call.id] = time.perf_counter()
            rt._emit(EventTypes.TOOL_BEFORE, lambda call=call: flat_payload(call=call_payload(call), batch_id=batch_id))
        results = await rt._invocations.run_tools(batch)
        for call, result in zip(batch.calls, results, strict=True):
            answers[call.id] = (call, result)

    outcome = BatchOutcome()
    injected: list[AgentMessage] = []
    pipeline = rt._pipeline
    hooked = pipeline.has(HookSlot.AFTER_TOOL_CALL)
    appended: list[AgentMessage] = []
    # Answers follow the calls' index order (DESIGN §6), whatever order the model listed them in.
    for original in sorted(model_message.tool_calls, key=lambda c: c.index):
        call, result = answers.get(original.id, (original, None))
        if result is None:
            # Should not happen: every call is allowed, denied or deferred-and-decided.
            result = ToolResult.from_text("tool call was not executed", is_error=True, error_code=ErrorCode.NOT_EXECUTED.value)
        if hooked:
            decision = await pipeline.after_tool_call(ToolResultHookContext(
                session_id=rt.session_id, run_id=ctx.run_id, state=rt.state, call=call, result=result,
                batch_id=batch_id))
            if decision.action is ToolResultAction.ABORT:
                # The answers so far enter history; the run's terminal path answers the rest.
                rt._append_history(appended)
                raise abort_error("after_tool_call", decision.hook, decision.reason, decision.error)
            result = decision.result or result
            injected.extend(decision.injected_messages)
            if decision.action is ToolResultAction.STOP:
                outcome.stop = True
                outcome.stop_reason = decision.reason
        if result.stop:
            outcome.stop = True
        appended.append(tool_message(call, result))
    # Tool answers stay contiguous after the assistant message; injected messages follow them.
    rt._append_history(appended + injected)
    return outcome


class ToolBatch:
    """The calls of one batch that may run, and how to run them, for the invocation seam.

    ``calls`` are in index order; a seam returns one result per call in that order.
    """

    __slots__ = ("rt", "ctx", "batch_id", "calls", "started", "_state", "_message", "_tools")

    def __init__(self, rt: AgentRuntime, ctx: RunContext, batch_id: str, calls: Iterable[ToolCall],
                 model_message: AgentMessage | None = None) -> None:
        self.rt = rt
        self.ctx = ctx
        self.batch_id = batch_id
        self.calls = tuple(sorted(calls, key=lambda c: c.index))
        self.started: dict[str, float] = {}
        self._state = rt.state
        self._message = model_message
        self._tools = rt._offered_tools()  # the user's and the extensions' tools, as offered for this batch

    def original(self, call: ToolCall) -> ToolCall:
        """The call as the model made it (``call`` may be a hook's rewrite with the same id)."""
        if self._message is not None:
            for made in self._message.tool_calls:
                if made.id == call.id:
                    return made
        return call

    @property
    def run_id(self) -> str:
        return self.ctx.run_id

    @property
    def turn(self) -> int:
        return self.ctx.turn

    def context(self, call: ToolCall, idempotency_key: str | None = None) -> ToolContext:
        """The call's ToolContext; its idempotency key is the same in every process
        (``{session_id}:{run_id}:{call_id}`` unless the seam gives one)."""
        rt, ctx = self.rt, self.ctx
        key = idempotency_key or f"{rt.session_id}:{ctx.run_id}:{call.id}"
        return ToolContext(session_id=rt.session_id, run_id=ctx.run_id, state=self._state, batch_id=self.batch_id,
                           call_id=call.id, cancel=ctx.cancel, idempotency_key=key)

    def on_result(self, call: ToolCall, result: ToolResult, *, reused: bool = False) -> None:
        """Announce a finished call (``tool.after``); ``reused``: its result was committed
        by an earlier process and the tool did not run again."""
        started = self.started.get(call.id, time.perf_counter())
        if reused:
            self.rt._emit(EventTypes.TOOL_AFTER, lambda: flat_payload(
                call=call_payload(call), result=result_payload(result), batch_id=self.batch_id,
                duration_ms=0.0, reused=True))
            return
        self.rt._emit(EventTypes.TOOL_AFTER, lambda: flat_payload(
            call=call_payload(call), result=result_payload(result), batch_id=self.batch_id,
            duration_ms=round((time.perf_counter() - started) * 1000, 3)))

    async def execute_all(self) -> list[ToolResult]:
        """Run every call concurrently in this process (the direct seam)."""
        return await self._tools.execute_batch(self.calls, self.context, on_result=self.on_result)

    async def execute_one(self, call: ToolCall, *, idempotency_key: str | None = None) -> ToolResult:
        """Run one call; the run's cancellation token cancels it."""
        task = asyncio.ensure_future(self._tools.execute(call, self.context(call, idempotency_key)))
        remove = self.ctx.cancel.on_cancel(task.cancel)
        try:
            result = await task
        finally:
            remove()
        self.on_result(call, result)
        return result


def unanswered_calls(history: tuple[AgentMessage, ...]) -> list[ToolCall]:
    """Tool calls of the last assistant message that have no answer yet."""
    answered: set[str] = set()
    for message in reversed(history):
        if message.role == "tool":
            answered.add(message.tool_call_id)
        elif message.role == "assistant":
            return [c for c in message.tool_calls if c.id not in answered]
        else:
            return []
    return []
