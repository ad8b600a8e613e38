"""Tool phase: plan the batch through before_tool_call, then run it, then after_tool_call.

Planning decides each call (seed 000 §5, §8): user hooks first, then the built-in
approval policy, which defers registered dangerous tools and lets unknown tools through
so the registry can answer ``tool_not_found`` (seed 000 §10.1). Any defer freezes the
whole batch: no call of it runs until every deferred call is decided.

Both halves are phase objects handed to the runtime's invocation seam, which runs
them in line (:class:`~arknb.runtime._invocation.DirectInvocations`) or as durable
operations that record each hook's decision (``arknb.durable``): a
:class:`ToolPlanning` decides calls one by one (:meth:`ToolPlanning.decide`), a
:class:`ToolBatch` executes the allowed calls and answers every call of the batch in
index order through its response hooks (:meth:`ToolBatch.respond`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, NamedTuple

from ..domain import AgentMessage, ArkError, ErrorCode, ErrorLayer, Role, ToolCall, ToolResult, ToolRisk
from ..domain.invocation import CALL_DEFERRED, HookAbort, ToolAnswer
from ..events import EventTypes
from ..events.envelope import flat_payload, freeze_payload
from ..hooks import (
    HookSlot, HookStep, ToolCallAction, ToolCallHookContext, ToolResultAction, ToolResultHookContext,
)
from ..hooks.pipeline import jsonable
from ..state import DeniedCall
from ..tools import ToolContext
from ._context import OfRun
from ._model_call import abort_error

if TYPE_CHECKING:
    from ..hooks import HookProgress
    from ._context import RunContext
    from .runtime import AgentRuntime

__all__ = ["APPROVAL_POLICY", "BatchPlan", "BatchOutcome", "Deferred", "RAN_BEFORE_PAUSE", "ToolBatch", "ToolPlanning",
           "announce_reused", "execute_batch", "plan_batch", "tool_message", "unanswered_calls"]

APPROVAL_POLICY = "approval_policy"
"""The name the built-in approval policy's decisions are recorded under (it runs after the user hooks)."""
RAN_BEFORE_PAUSE = "ran_before_pause"
"""The ``hook`` of a settled call that ran before its batch paused (another call of the
batch deferred itself): its answer is kept in ``PendingApprovalBatch.finished_calls``."""


class Deferred(NamedTuple):
    """A call planning deferred to a person, and the kind of item it becomes."""

    call: ToolCall
    reason: str
    risk: ToolRisk
    kind: str = "tool"
    detail: dict | None = None
    ran: bool = False
    """True for a call that ran and deferred itself before a crash saved no pause for it:
    a decision recorded for an earlier pause of the same call does not answer it."""


@dataclass(slots=True)
class BatchPlan:
    """What planning decided for one batch."""

    batch_id: str
    allowed: list[ToolCall] = field(default_factory=list)
    denied: list[DeniedCall] = field(default_factory=list)
    deferred: list[Deferred] = field(default_factory=list)


@dataclass(slots=True)
class BatchOutcome:
    """What running a batch produced.

    ``deferred`` lists calls that handed themselves to a person while running
    (``ToolContext.defer``); then nothing entered history and ``finished`` holds the
    answers of the batch's other calls, for the pending batch.
    """

    stop: bool = False
    stop_reason: str | None = None
    deferred: list[Deferred] = field(default_factory=list)
    finished: list[DeniedCall] = field(default_factory=list)


class _Deferrals:
    """Collects the calls of one batch that deferred themselves while running."""

    __slots__ = ("calls",)

    def __init__(self) -> None:
        self.calls: dict[str, tuple[str, str, dict | None]] = {}

    def add(self, call_id: str, reason: str, kind: str, detail: dict | None) -> ToolResult:
        self.calls[call_id] = (reason, kind, detail)
        # What the tool returns; it never reaches the model (the call waits for a person).
        return ToolResult.from_text(f"deferred: {reason}", is_error=True, error_code=CALL_DEFERRED)


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
    if result.structured_content is not None:  # an MCP tool's structuredContent, beside the text (DESIGN §15)
        return flat_payload(text=result.text, is_error=result.is_error, error_code=result.error_code,
                            stop=result.stop, structured_content=freeze_payload(result.structured_content))
    return flat_payload(text=result.text, is_error=result.is_error, error_code=result.error_code, stop=result.stop)


def announce_reused(rt: AgentRuntime, call: ToolCall, result: ToolResult, batch_id: str | None) -> None:
    """Publish ``tool.after`` for a call answered with the result an earlier process
    committed (``reused``: the tool did not run again here)."""
    rt._emit(EventTypes.TOOL_AFTER, lambda: flat_payload(
        call=call_payload(call), result=result_payload(result), batch_id=batch_id, duration_ms=0.0, reused=True))


async def plan_batch(rt: AgentRuntime, ctx: RunContext, message: AgentMessage,
                     calls: Iterable[ToolCall] | None = None) -> BatchPlan:
    """Run before_tool_call for every call of ``message`` (or only ``calls``), then the
    approval policy, through the invocation seam (which records each decision on a durable store)."""
    await rt.tools.refresh()  # a resumed batch may run before any model call connected the sources
    planning = ToolPlanning(rt, ctx, message, calls)
    await rt._invocations.plan_tools(planning)
    return planning.plan


class ToolPlanning(OfRun):
    """The request phase of one batch's calls, for the invocation seam.

    A seam calls :meth:`decide` for each call of :attr:`calls` in order, or, for a call
    whose decision an earlier process recorded, :meth:`allow`, :meth:`deny` or
    :meth:`defer` with that decision (no hook runs again).
    """

    __slots__ = ("rt", "ctx", "message", "calls", "plan", "_tools", "_definitions")

    def __init__(self, rt: AgentRuntime, ctx: RunContext, message: AgentMessage,
                 calls: Iterable[ToolCall] | None = None) -> None:
        self.rt = rt
        self.ctx = ctx
        self.message = message
        self.calls = tuple(message.tool_calls if calls is None else calls)
        self.plan = BatchPlan(batch_id=rt._new_id("batch"))
        self._tools = rt._offered_tools()  # the user's and the extensions' tools, as offered for this batch
        self._definitions = None

    @property
    def continued(self) -> bool:
        return self.ctx.continued

    async def decide(self, call: ToolCall, progress: HookProgress | None = None) -> ToolCall | DeniedCall | Deferred:
        """Run before_tool_call on ``call`` (the hooks ``progress`` recorded are skipped and
        ``call`` is then as they left it), then the approval policy; the decision is added
        to :attr:`plan` and returned.

        Raises:
            HookAbort: a hook aborted the run.
        """
        rt, ctx, plan, tools = self.rt, self.ctx, self.plan, self._tools
        pipeline = rt._pipeline
        if pipeline.has(HookSlot.BEFORE_TOOL_CALL):
            if self._definitions is None:
                self._definitions = tools.definitions()
            decision = await pipeline.before_tool_call(ToolCallHookContext(
                session_id=rt.session_id, run_id=ctx.run_id, state=rt.state, call=call, model_message=self.message,
                available_tools=self._definitions, batch_id=plan.batch_id), progress)
            action = decision.action
            call = decision.call or call  # as rewritten by the hooks, also when denied or deferred
            if action is ToolCallAction.ABORT:
                raise abort_error("before_tool_call", decision.hook, decision.reason, decision.error)
            if action is ToolCallAction.DENY:
                result = decision.synthetic_result or ToolResult.from_text(
                    f"tool_denied: {decision.reason or 'denied by policy'}", is_error=True)
                if result.error_code is None:
                    result = result.model_copy(update={"error_code": ErrorCode.TOOL_DENIED.value})
                return self.deny(call, result, decision.reason, decision.hook)
            if action is ToolCallAction.DEFER:
                return self.defer(call, decision.reason or f"deferred by hook {decision.hook!r}",
                                  decision.kind or "tool", decision.detail)
        # The built-in approval policy runs after the user hooks (DESIGN §7).
        if rt.require_approval and tools.risk_of(call.name) is ToolRisk.DANGEROUS:
            reason = f"{call.name} is a dangerous tool and needs approval"
            entry = tools.get(call.name)
            if entry is not None and entry.source:  # the card names where the call goes (DESIGN §15)
                reason = f"{call.name} ({entry.source}) is a dangerous tool and needs approval"
            rt._emit(EventTypes.HOOK_DECISION, lambda: {
                "slot": "before_tool_call", "hook": APPROVAL_POLICY, "action": "defer", "reason": reason,
                "before": jsonable(call), "after": None, "call_id": call.id})
            if progress is not None:
                progress.after_hook(HookStep(APPROVAL_POLICY, "defer", reason), call)
            detail = entry.source_detail if entry is not None else None
            return self.defer(call, reason, detail=detail, risk=ToolRisk.DANGEROUS)
        if progress is not None:
            progress.after_hook(HookStep(APPROVAL_POLICY, "proceed"), call)
        return self.allow(call)

    def allow(self, call: ToolCall) -> ToolCall:
        """Add ``call`` as allowed to run."""
        self.plan.allowed.append(call)
        return call

    def deny(self, call: ToolCall, result: ToolResult, reason: str | None, hook: str | None) -> DeniedCall:
        """Add ``call`` as denied with the synthetic ``result``."""
        denied = DeniedCall(call=call, result=result, reason=reason, hook=hook)
        self.plan.denied.append(denied)
        return denied

    def defer(self, call: ToolCall, reason: str, kind: str = "tool", detail: dict | None = None, *,
              risk: ToolRisk | None = None, ran: bool = False) -> Deferred:
        """Add ``call`` as deferred to a person, as an item of ``kind`` (an approval kind's
        name, with its ``detail``); ``ran``: the call deferred itself while it ran, in a
        process that ended before its pause was saved."""
        deferred = Deferred(call, reason, risk or self._tools.risk_of(call.name) or ToolRisk.SAFE, kind, detail,
                            ran)
        self.plan.deferred.append(deferred)
        return deferred


async def execute_batch(rt: AgentRuntime, ctx: RunContext, batch_id: str, model_message: AgentMessage,
                        allowed: Iterable[ToolCall], denied: Iterable[DeniedCall],
                        settled: Iterable[DeniedCall] = ()) -> BatchOutcome:
    """Run the allowed calls concurrently (through the invocation seam), then
    after_tool_call per answer in call order, then append every answer to history (one
    per call of ``model_message``).

    ``settled`` calls are answered with a result known before this batch ran: one a
    person recorded for an in-doubt call (announced now as ``tool.after`` with
    ``settled_by``), or the answer a call gave before the batch paused (``hook`` is
    :data:`RAN_BEFORE_PAUSE`: announced and answered then, used as it is). If a call
    defers itself while running (``ToolContext.defer``), the outcome lists it in
    ``deferred``, the others' answers in ``finished``, and nothing enters history.

    Every call that ran keeps its real result: after an ``after_tool_call`` abort the
    answers enter history before the abort ends the run, and a cancelled batch answers
    a call that was still running as cancelled while running (seed 003 §4.3: history
    stays paired).

    Raises:
        CallsInDoubt: the seam found calls whose fate is unknown (after a crash).
        HookAbort: an ``after_tool_call`` hook aborted the run.
    """
    await rt.tools.refresh()
    batch = ToolBatch(rt, ctx, batch_id, allowed, model_message, denied, settled)
    for item in batch.denied:
        rt._emit(EventTypes.TOOL_DENIED, lambda item=item: flat_payload(
            call=call_payload(item.call), result=result_payload(item.result), reason=item.reason,
            hook=item.hook, batch_id=batch_id))
    for item in batch.settled:
        if item.hook == RAN_BEFORE_PAUSE:
            continue  # its tool.after was published when it ran
        # A person recorded what became of an in-doubt call (DESIGN §13): its answer, not a run.
        rt._emit(EventTypes.TOOL_AFTER, lambda item=item: flat_payload(
            call=call_payload(item.call), result=result_payload(item.result), batch_id=batch_id,
            duration_ms=0.0, settled_by=item.hook))
    for call in batch.calls:
        batch.started[call.id] = time.perf_counter()
        rt._emit(EventTypes.TOOL_BEFORE, lambda call=call: flat_payload(call=call_payload(call), batch_id=batch_id))
    try:
        answers = {answer.call.id: answer for answer in await rt._invocations.run_tools(batch)}
    except asyncio.CancelledError:
        # What ran keeps its result; what was still running says so (never "not executed").
        rt._append_history(batch.interrupted_answers())
        raise
    except ArkError as exc:
        # The batch failed midway (a commit the store refused, the lease lost): the run ends
        # failed, and the model is told of each call what this process knows, as after a
        # cancel: one told "not executed" of a call that ran would call it again.
        rt._append_history(batch.interrupted_answers(f"the run failed ({exc.code})", exc.code))
        raise
    outcome = BatchOutcome()
    deferrals = batch.deferrals.calls
    if deferrals and not any(answer.abort is not None for answer in answers.values()):
        # A call handed itself to a person: the batch pauses with the others' answers kept.
        tools = rt._offered_tools()
        denied_ids = {d.call.id for d in batch.denied}
        for call in batch.calls:
            if call.id in deferrals:
                reason, kind, detail = deferrals[call.id]
                outcome.deferred.append(Deferred(call, reason, tools.risk_of(call.name) or ToolRisk.SAFE, kind, detail))
        for call_id, answer in answers.items():
            if call_id not in deferrals and call_id not in denied_ids:
                outcome.finished.append(DeniedCall(call=answer.call, result=answer.result,
                                                   reason="ran before the batch paused", hook=RAN_BEFORE_PAUSE,
                                                   injected=answer.injected, stop=answer.stop))
        return outcome
    injected: list[AgentMessage] = []
    appended: list[AgentMessage] = []
    abort: HookAbort | None = None
    # Answers follow the calls' index order (DESIGN §6), whatever order the model listed them in.
    for original in sorted(model_message.tool_calls, key=lambda c: c.index):
        answer = answers.get(original.id)
        if answer is None:
            # Should not happen: every call is allowed, denied or deferred-and-decided.
            appended.append(tool_message(original, ToolResult.from_text(
                "tool call was not executed", is_error=True, error_code=ErrorCode.NOT_EXECUTED.value)))
            continue
        appended.append(tool_message(answer.call, answer.result))
        if abort is None and answer.abort is not None:
            abort = answer.abort
        injected.extend(answer.injected)
        if answer.stop:
            outcome.stop = True
    if abort is not None:
        # The answers enter history (the calls ran); the run's terminal path ends it aborted.
        rt._append_history(appended)
        raise abort
    # Tool answers stay contiguous after the assistant message; injected messages follow them.
    rt._append_history(appended + injected)
    return outcome


class ToolBatch(OfRun):
    """One batch for the invocation seam: the calls that may run, how to run them, and
    how to answer every call of the batch (run, denied or settled) through after_tool_call.

    ``calls`` are the calls to execute, in index order; ``order`` is every call to
    answer, in index order, and a seam returns one :class:`ToolAnswer` per call of it.
    """

    __slots__ = ("rt", "ctx", "batch_id", "calls", "order", "given", "denied", "settled", "started", "began",
                 "finished", "responded", "aborted", "deferrals", "_state", "_message", "_tools")

    def __init__(self, rt: AgentRuntime, ctx: RunContext, batch_id: str, calls: Iterable[ToolCall],
                 model_message: AgentMessage | None = None, denied: Iterable[DeniedCall] = (),
                 settled: Iterable[DeniedCall] = ()) -> None:
        self.rt = rt
        self.ctx = ctx
        self.batch_id = batch_id
        self.calls = tuple(sorted(calls, key=lambda c: c.index))
        self.denied = tuple(denied)
        self.settled = tuple(settled)
        self.given: dict[str, DeniedCall] = {item.call.id: item for item in (*self.denied, *self.settled)}
        self.order = tuple(sorted((*self.calls, *(item.call for item in self.given.values())), key=lambda c: c.index))
        self.started: dict[str, float] = {}
        self.began: set[str] = set()                  # the calls whose tool was called (it may have had effects)
        self.finished: dict[str, ToolResult] = {}     # call id -> what the tool returned, as each returns
        self.responded: dict[str, ToolAnswer] = {}    # call id -> its answer once its response hooks ran
        self.aborted: HookAbort | None = None         # the first after_tool_call abort of the batch
        self.deferrals = _Deferrals()                 # the calls that hand themselves to a person (ToolContext.defer)
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
    def has_response_hooks(self) -> bool:
        """True if an after_tool_call hook may change an answer (else responding is bookkeeping)."""
        return self.rt._pipeline.has(HookSlot.AFTER_TOOL_CALL)

    def given_answer(self, call: ToolCall) -> DeniedCall | None:
        """The answer a denied or settled call of the batch has (None for a call to run)."""
        return self.given.get(call.id)

    def is_settled(self, call: ToolCall) -> bool:
        """True if a person recorded ``call``'s outcome (an in-doubt call marked done or failed)."""
        return any(item.call.id == call.id for item in self.settled)

    def context(self, call: ToolCall, idempotency_key: str | None = None) -> ToolContext:
        """The call's ToolContext; its idempotency key is the same in every process
        (``{session_id}:{run_id}:{call_id}`` unless the seam gives one)."""
        rt, ctx = self.rt, self.ctx
        key = idempotency_key or f"{rt.session_id}:{ctx.run_id}:{call.id}"
        return ToolContext(session_id=rt.session_id, run_id=ctx.run_id, state=self._state, batch_id=self.batch_id,
                           call_id=call.id, cancel=ctx.cancel, idempotency_key=key, on_defer=self.deferrals.add,
                           on_progress=self._progress, on_elicit=self._elicit if rt._elicitations else None,
                           on_sample=self._sample if rt._elicitations else None)

    async def _sample(self, call_id: str, messages: list, system: str | None, max_tokens: int | None,
                      detail: dict | None) -> str:
        call = next((c for c in self.calls if c.id == call_id), None)
        if call is None or self.rt._elicitations is None:
            raise ArkError(ErrorLayer.SECURITY, ErrorCode.TOOL_DENIED, "this call cannot use the model")
        return await self.rt._elicitations.sample(call, messages, system, max_tokens, detail)

    async def _elicit(self, call_id: str, message: str, schema: dict, detail: dict | None) -> dict:
        call = next((c for c in self.calls if c.id == call_id), None)
        if call is None or self.rt._elicitations is None:
            return {"action": "decline"}
        return await self.rt._elicitations.ask(call, message, schema, detail)

    def _progress(self, call_id: str, progress: float, total: float | None, message: str | None) -> None:
        name = next((c.name for c in self.calls if c.id == call_id), None)
        self.rt._emit(EventTypes.TOOL_PROGRESS, lambda: flat_payload(
            call_id=call_id, name=name, progress=progress, total=total, message=message, batch_id=self.batch_id))

    def on_result(self, call: ToolCall, result: ToolResult, *, reused: bool = False) -> None:
        """Announce a finished call (``tool.after``); ``reused``: its result was committed
        by an earlier process and the tool did not run again."""
        self.finished[call.id] = result
        started = self.started.get(call.id, time.perf_counter())
        if reused:
            announce_reused(self.rt, call, result, self.batch_id)
            return
        deferral = self.deferrals.calls.get(call.id)
        if deferral is not None:  # the call waits for a person: its tool.after says so
            self.rt._emit(EventTypes.TOOL_AFTER, lambda: flat_payload(
                call=call_payload(call), result=result_payload(result), batch_id=self.batch_id,
                duration_ms=round((time.perf_counter() - started) * 1000, 3),
                deferred=flat_payload(reason=deferral[0], kind=deferral[1])))
            return
        self.rt._emit(EventTypes.TOOL_AFTER, lambda: flat_payload(
            call=call_payload(call), result=result_payload(result), batch_id=self.batch_id,
            duration_ms=round((time.perf_counter() - started) * 1000, 3)))

    async def execute_all(self) -> list[ToolResult]:
        """Run every call concurrently in this process (the direct seam)."""
        self.began.update(call.id for call in self.calls)
        return await self._tools.execute_batch(self.calls, self.context, on_result=self.on_result)

    async def execute_one(self, call: ToolCall, *, idempotency_key: str | None = None) -> ToolResult:
        """Run one call; the run's cancellation token cancels it."""
        self.began.add(call.id)
        task = asyncio.ensure_future(self._tools.execute(call, self.context(call, idempotency_key)))
        remove = self.ctx.cancel.on_cancel(task.cancel)
        try:
            result = await task
        finally:
            remove()
        self.on_result(call, result)
        return result

    async def respond(self, call: ToolCall, raw: ToolResult, progress: HookProgress | None = None, *,
                      result: ToolResult | None = None, injected: Iterable[AgentMessage] = (),
                      source: str | None = None) -> ToolAnswer:
        """after_tool_call on one answer (seam: in index order, one at a time).

        Continuing an answer whose response hooks an earlier process began, a durable
        seam passes the ``progress`` that recorded them, the ``result`` and ``injected``
        messages they made and the ``source`` hook of that result (recorded hooks are
        skipped). After an abort in the batch, later answers skip their hooks: the run
        ends, and each keeps its real result.
        """
        result = raw if result is None else result
        injected = tuple(injected)
        stop = False
        abort = None
        pipeline = self.rt._pipeline
        given = self.given.get(call.id)
        # A call that deferred itself is answered when it runs again; one that ran before its
        # batch paused was answered then: neither goes through the response hooks now.
        unhooked = call.id in self.deferrals.calls or (given is not None and given.hook == RAN_BEFORE_PAUSE)
        if given is not None and given.hook == RAN_BEFORE_PAUSE:  # what its hooks said then
            injected += given.injected
            stop = given.stop
        if self.aborted is None and not unhooked and pipeline.has(HookSlot.AFTER_TOOL_CALL):
            rt, ctx = self.rt, self.ctx
            decision = await pipeline.after_tool_call(ToolResultHookContext(
                session_id=rt.session_id, run_id=ctx.run_id, state=rt.state, call=call, result=result,
                batch_id=self.batch_id), progress)
            if decision.action is ToolResultAction.ABORT:
                abort = self.aborted = abort_error("after_tool_call", decision.hook, decision.reason, decision.error)
                if decision.result is not None:  # the result as it stood before the aborting hook
                    result = decision.result
            else:
                if decision.result is not None and decision.result is not result:
                    result, source = decision.result, decision.hook or source
                injected += decision.injected_messages
                stop = decision.action is ToolResultAction.STOP
        answer = ToolAnswer(call=call, result=result, raw=raw, injected=injected if abort is None else (),
                            stop=stop or result.stop, abort=abort, source=source)
        self.responded[call.id] = answer
        return answer

    def recorded_answer(self, call: ToolCall, result: ToolResult, raw: ToolResult, injected: Iterable[AgentMessage],
                        stop: bool, abort: HookAbort | None, source: str | None) -> ToolAnswer:
        """The answer an earlier process completed (nothing runs again); an abort it
        recorded makes the later answers of the batch skip their hooks."""
        if abort is not None and self.aborted is None:
            self.aborted = abort
        answer = ToolAnswer(call=call, result=result, raw=raw, injected=tuple(injected) if abort is None else (),
                            stop=stop or result.stop, abort=abort, source=source)
        self.responded[call.id] = answer
        return answer

    def interrupted_answers(self, why: str = "the run was cancelled",
                            code: str = ErrorCode.CANCELLED.value) -> list[AgentMessage]:
        """History messages for a batch that ended midway (``why``: cancelled, or failed with
        error ``code``): an answered call keeps its answer, a finished one its result, a
        running one says the run ended while it ran, and one that never started says so."""
        messages = []
        for call in self.order:
            answer = self.responded.get(call.id)
            given = self.given.get(call.id)
            if answer is not None:
                result = answer.result
            elif call.id in self.finished:
                result = self.finished[call.id]
            elif given is not None:
                result = given.result
            elif call.id in self.began:
                verb = "cancelled" if code == ErrorCode.CANCELLED.value else "interrupted"
                result = ToolResult.from_text(
                    f"{verb} while running: {why} before this call returned, so it may "
                    "have had part of its effect", is_error=True, error_code=code)
            else:
                result = ToolResult.from_text(f"not executed: {why} before this call started",
                                              is_error=True, error_code=ErrorCode.NOT_EXECUTED.value)
            messages.append(tool_message(call, result))
        return messages


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
