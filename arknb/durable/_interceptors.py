"""The runtime's phases as the invocation bus's interceptors, recorded hook by hook.

A model call's request phase is ``before_model_call`` and its response phase
``after_model_call``; a tool call's request phase is the runtime's planning
(``before_tool_call``, then the approval policy and a person's approval) and its
response phase ``after_tool_call``. Each finished hook's name and decision is recorded
in the operation's ``hook_progress`` (DESIGN §13) through an :class:`OperationProgress`:
it stages the record, and commits what is staged only when the next hook is about to
run, so the last hook of a phase rides the commit that ends the phase (``executing``,
``completed``) and a phase with one hook costs no commit of its own. Such a commit is
not synced: it survives the process being killed, and the WAL (or PostgreSQL's) order
makes it durable with the next synced commit, before anything that depends on it.

A restore continues a phase from its records: the hooks recorded are skipped, the
value starts as they left it, and a recorded short-circuit (a deny, a defer, an abort)
stands without its hook being called again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from arknb.domain import AgentMessage, ArkError, ErrorCode, ErrorLayer, ModelRequest, ModelResponse, ToolCall, ToolResult
from arknb.domain.invocation import HookAbort, ModelOutcome

from .operation import HookRecord, Operation, OperationPhase, OperationStatus
from .requests import EventRequest, Interception

if TYPE_CHECKING:
    from .runtime_seam import DurableInvocations

__all__ = ["APPROVAL", "APPROVAL_POLICY", "ModelInterceptor", "OperationProgress", "ToolInterceptor", "call_of",
           "deferral", "deny_reason", "model_outcome", "planned_phase", "recorded_abort", "response_json",
           "tool_answer", "tool_result"]

APPROVAL_POLICY = "approval_policy"  # the runtime's built-in policy, recorded after the user hooks
APPROVAL = "approval"                # a person's approval of a deferred call

# The decisions that end a request phase: nothing after them runs.
_FINAL_REQUEST = frozenset({"deny", "defer", "abort", "respond"})


class OperationProgress:
    """An ``arknb.hooks.HookProgress`` over one operation's phase (see the module docstring;
    the pipeline and this class meet only structurally: durable does not import hooks).

    ``encode(value)`` gives the operation's changed fields for the slot's value after a
    rewrite (the effective input or result); it is called only when a hook rewrote.
    """

    __slots__ = ("_seam", "_base", "_phase", "_slot", "_encode", "_done", "records", "changes", "source")

    def __init__(self, seam: DurableInvocations, operation: Operation, phase: str, slot: str,
                 encode: Callable[[Any], dict[str, Any]]) -> None:
        self._seam = seam
        self._base = operation
        self._phase = phase
        self._slot = slot
        self._encode = encode
        self._done = {record.hook for record in operation.records(phase) if record.hook is not None}
        self.records: list[HookRecord] = []          # what this process recorded, in order
        self.changes: dict[str, Any] = {}            # the effective value's fields, if a hook rewrote it
        self.source: str | None = None               # the hook whose rewrite made that value

    def recorded(self, hook: str) -> bool:
        return hook in self._done

    async def before_hook(self, hook: str) -> None:
        # The hooks before this one must not run again if the process dies in it.
        await self._seam.flush_staged()

    def after_hook(self, step: Any, value: Any) -> None:  # an arknb.hooks.HookStep
        self.records.append(HookRecord(slot=self._slot, action=step.action, phase=self._phase, hook=step.hook,
                                       reason=step.reason, injected=step.injected,
                                       detail=getattr(step, "detail", None)))
        if step.action == "rewrite":
            self.source = step.hook
            self.changes = self._encode(value)
        self._seam.stage(self.current())

    def current(self) -> Operation:
        """The operation with what this progress recorded (not committed)."""
        changes = {"hook_progress": self._base.hook_progress + tuple(self.records), **self.changes}
        return self._base.copy_with(changes)


def recorded_abort(operation: Operation, slot: str) -> HookAbort:
    """The abort a hook of ``slot`` recorded in ``operation``, raised again on a restore
    (the hook is not called a second time)."""
    record = next((r for r in reversed(operation.hook_progress) if r.action == "abort"), None)
    hook = record.hook if record is not None else None
    slot = record.slot if record is not None else slot
    if operation.error is not None and operation.error.code == ErrorCode.HOOK_ABORT:
        return HookAbort(operation.error.to_error(), slot, hook)
    return HookAbort(ArkError(ErrorLayer.SECURITY, ErrorCode.HOOK_ABORT, f"hook {hook!r} aborted the run in {slot}"),
                     slot, hook)


def call_of(payload: Any) -> ToolCall:
    """The tool call a tool operation's input holds (``{"call": ..., "turn": n}``)."""
    return ToolCall.model_validate(payload["call"])


def response_json(response: ModelResponse, raw_text: str, raw_reasoning: str) -> dict:
    return {"response": response.model_dump(mode="json"), "raw_text": raw_text, "raw_reasoning": raw_reasoning}


def tool_result(value: Any, error: Any = None) -> ToolResult:
    """A tool operation's stored result (or its error, for a handler that failed)."""
    if value is not None:
        return ToolResult.model_validate(value)
    if error is not None:
        return ToolResult.from_error(error.to_error())
    return ToolResult.from_text("no result was recorded", is_error=True, error_code=ErrorCode.NOT_EXECUTED.value)


def tool_answer(operation: Operation, call: ToolCall) -> tuple[ToolResult, ToolResult, tuple[AgentMessage, ...],
                                                               bool, HookAbort | None, str | None]:
    """What a completed tool operation answers: (result, raw, injected, stop, abort, source)."""
    result = tool_result(operation.effective_result, operation.error)
    raw = tool_result(operation.raw_result, operation.error) if operation.raw_result is not None else result
    records = operation.records("response")
    injected = tuple(AgentMessage.model_validate(m) for r in records for m in r.injected)
    stop = any(r.action == "stop" for r in records)
    abort = None
    if operation.status is OperationStatus.BLOCKED and any(r.action == "abort" for r in records):
        abort = recorded_abort(operation, "after_tool_call")
    source = next((r.hook for r in reversed(records) if r.action == "rewrite"), None)
    return result, raw, injected, stop, abort, source


class ModelInterceptor:
    """A model call's request phase (before_model_call) and response phase (after_model_call)."""

    def __init__(self, seam: DurableInvocations) -> None:
        self._seam = seam

    async def before(self, request: EventRequest, operation: Operation) -> Interception:
        call = self._seam.model_calls[request.purpose_key]
        payload = request.payload or {}
        raw_payload = operation.raw_input
        # Continuing after a crash: the request as the recorded hooks rewrote it.
        start = ModelRequest.model_validate(payload["request"]) if "request" in payload else None
        progress = OperationProgress(self._seam, operation, "request", "before_model_call",
                                     lambda value: {"effective_input": {**raw_payload,
                                                                        "request": value.model_dump(mode="json")},
                                                    "input_source": progress.source})
        try:
            model_request, responded = await call.before(progress, start)
        except HookAbort as abort:
            return Interception(records=tuple(progress.records), status=OperationStatus.BLOCKED.value,
                                error=abort.error.info(), source=abort.hook)
        records = tuple(progress.records)
        if responded is not None:
            return Interception(records=records, source=call.hook, payload={
                **payload, "responded": response_json(responded, responded.message.text,
                                                      responded.message.reasoning_text)})
        if progress.source is not None or start is not None:
            # Kept only when a hook rewrote it (else the runtime builds it from history).
            return Interception(records=records, payload={**payload, "request": model_request.model_dump(mode="json")},
                                source=progress.source or operation.input_source)
        changed = [c for c in model_request.context_changes if c.source != "system_prompt"]
        if changed:  # what made the request differ from the history (DESIGN §16), e.g. a skill's instructions
            return Interception(records=records, payload={**payload, "context": {
                "version": model_request.context_version, "changes": [c.model_dump(mode="json") for c in changed]}})
        return Interception(records=records)

    def response_is_trivial(self, operation: Operation) -> bool:
        call = self._seam.model_calls.get(operation.purpose_key)
        return call is not None and not call.has_response_hooks

    async def after(self, request: EventRequest, result: Any, operation: Operation) -> Interception:
        seam = self._seam
        call = seam.model_calls[request.purpose_key]
        call.hook = None
        if operation.status is OperationStatus.FAILED:
            # The model call itself failed (refused, 401, 429, an exhausted script): there
            # is no response for after_model_call to see, as on a memory store, and the
            # operation completes with the provider's error as it was recorded.
            seam.raw.pop(request.purpose_key, None)
            return Interception()
        live = seam.raw.pop(request.purpose_key, None)
        if live is not None:  # executed in this process: the objects themselves, not their JSON
            response, raw_text, raw_reasoning = live
        else:
            response = ModelResponse.model_validate(result["response"])
            raw_text, raw_reasoning = result.get("raw_text", ""), result.get("raw_reasoning", "")
        start = response
        if any(r.action == "rewrite" for r in operation.records("response")):
            # Continuing after a crash: the response as the recorded hooks rewrote it.
            start = ModelResponse.model_validate(operation.effective_result["response"])
        progress = OperationProgress(seam, operation, "response", "after_model_call",
                                     lambda value: {"effective_result": response_json(value, raw_text, raw_reasoning),
                                                    "result_source": progress.source})
        try:
            outcome = await call.after(start, raw_text, raw_reasoning, progress)
        except HookAbort as abort:
            return Interception(records=tuple(progress.records), status=OperationStatus.BLOCKED.value,
                                error=abort.error.info(), source=abort.hook)
        call.ran_after = True
        seam.outcomes[request.purpose_key] = outcome
        records = tuple(progress.records)
        if outcome.retry or outcome.response is not response:
            source = call.hook or progress.source or operation.result_source
            return Interception(records=records, source=source,
                                result={**response_json(outcome.response, raw_text, raw_reasoning),
                                        "retry": outcome.retry})
        return Interception(records=records)


class ToolInterceptor:
    """A tool call's request phase was the runtime's planning, recorded hook by hook in
    :meth:`~arknb.durable.runtime_seam.DurableInvocations.plan_tools`; here a deferred
    call's approval is recorded before it runs. Its response phase is ``after_tool_call``."""

    def __init__(self, seam: DurableInvocations) -> None:
        self._seam = seam

    async def before(self, request: EventRequest, operation: Operation) -> Interception:
        _, call = self._seam.tool_calls[request.purpose_key]
        records: tuple[HookRecord, ...] = ()
        planned = operation.records("request")
        if planned and planned[-1].action == "defer":
            # The runtime runs a deferred call only once a person approved it.
            records = (HookRecord(slot="before_tool_call", action="approve", hook=APPROVAL),)
        effective = call.model_dump(mode="json")
        if effective == request.payload["call"]:
            return Interception(records=records)
        # A call planned in memory (an approval batch saved before its operations existed).
        return Interception(records=records, payload={**request.payload, "call": effective},
                            source=operation.input_source or "before_tool_call")

    def response_is_trivial(self, operation: Operation) -> bool:
        entry = self._seam.tool_calls.get(operation.purpose_key)
        return entry is not None and not entry[0].has_response_hooks

    async def after(self, request: EventRequest, result: Any, operation: Operation) -> Interception:
        seam = self._seam
        batch, call = seam.tool_calls[request.purpose_key]
        if batch.ctx.cancel.cancelled:
            raise batch.ctx.cancel.error()  # the run is being cancelled: the answer stays raw
        raw = seam.results.pop(request.purpose_key, None)
        if raw is None:
            raw = tool_result(result, operation.error)
            if operation.attempts and batch.given_answer(call) is None:
                # The result an earlier process saved (the tool does not run again): announced
                # now, after this batch's tool.before, as a completed one is (reused).
                batch.on_result(call, raw, reused=True)
        records = operation.records("response")
        start = raw
        source = None
        if any(r.action == "rewrite" for r in records):
            start = tool_result(operation.effective_result)
            source = next(r.hook for r in reversed(records) if r.action == "rewrite")
        injected = tuple(AgentMessage.model_validate(m) for r in records for m in r.injected)
        if batch.aborted is not None:
            answer = await batch.respond(call, raw, result=start, injected=injected, source=source)
            seam.answers[request.purpose_key] = answer
            return Interception(records=(HookRecord(
                slot="after_tool_call", action="skipped", phase="response",
                reason=f"hook {batch.aborted.hook!r} aborted the run ({batch.aborted.slot})"),))
        progress = OperationProgress(seam, operation, "response", "after_tool_call",
                                     lambda value: {"effective_result": value.model_dump(mode="json"),
                                                    "result_source": progress.source})
        answer = await batch.respond(call, raw, progress, result=start, injected=injected, source=source)
        seam.answers[request.purpose_key] = answer
        changed = answer.result is not raw
        out = Interception(records=tuple(progress.records),
                           result=answer.result.model_dump(mode="json") if changed else None,
                           source=(progress.source or source or answer.source) if changed else None)
        if answer.abort is not None:
            # Seed 004 §2: a response-phase deny cannot undo the call: raw and reason are both kept.
            return Interception(records=out.records, result=out.result, source=out.source,
                                status=OperationStatus.BLOCKED.value, error=answer.abort.error.info())
        return out


def model_outcome(result: dict) -> ModelOutcome:
    return ModelOutcome(ModelResponse.model_validate(result["response"]), retry=bool(result.get("retry")))


def planned_phase(operation: Operation) -> str | None:
    """How a tool operation's planning ended: ``allow``, ``deny``, ``defer``, ``abort``, or
    None while it is unfinished (its remaining hooks still run)."""
    if operation.status is OperationStatus.DENIED and not operation.attempts:
        return "deny"
    if operation.phase.rank >= OperationPhase.EXECUTING.rank:
        if operation.status is OperationStatus.BLOCKED and any(
                r.action == "abort" for r in operation.records("request")):
            return "abort"
        return "allow"
    records = operation.records("request")
    if not records:
        return None
    last = records[-1]
    if last.action in _FINAL_REQUEST:
        return last.action
    if last.hook in (APPROVAL_POLICY, APPROVAL):
        return "allow"
    return None


def deny_reason(operation: Operation) -> tuple[str | None, str | None]:
    """The (reason, hook) of a recorded deny."""
    for record in reversed(operation.records("request")):
        if record.action == "deny":
            return record.reason, record.hook
    return None, operation.result_source


def deferral(operation: Operation) -> tuple[str, str, dict | None]:
    """The (reason, item kind, detail) of a recorded defer."""
    for record in reversed(operation.records("request")):
        if record.action == "defer":
            detail = record.detail if isinstance(record.detail, dict) else {}
            return (record.reason or f"deferred by hook {record.hook!r}", detail.get("kind") or "tool",
                    detail.get("detail"))
    return "deferred", "tool", None
