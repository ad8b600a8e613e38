"""The loop driver: one run from start to its single terminal outcome (DESIGN §7).

A run is ``_drive``: optional new input through before_run, then turns until a turn
returns a final :class:`NextStep`. Every way out (completion, stop, abort, cancel,
failure, approval, suspend) goes through ``_finish`` so the terminal save, the terminal
event and ``after_run`` happen exactly once, and ``finally`` releases the active run.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..domain import AgentMessage, ArkError, ErrorCode, ErrorLayer, FinishReason, ToolCall, ToolResult, ToolRisk
from ..events import EventTypes
from ..events.envelope import flat_payload
from ..hooks import (
    AfterRunHookContext, BeforeRunAction, BeforeRunHookContext, HookSlot, TurnCompletionAction,
    TurnCompletionHookContext,
)
from ..hooks.pipeline import jsonable
from ..domain.invocation import CallsInDoubt
from ..state import DeniedCall, PendingApprovalBatch, PendingApprovalItem
from ._approvals import awaiting_approval_error, build_batch, freeze_for_approval
from ._model_call import HookAbort, abort_error, call_model
from ._persistence import autosave, persist_terminal, save_error
from ._redaction import learn_model_secrets
from ._in_doubt import IN_DOUBT, in_doubt_batch, interrupted, last_assistant, pause_interrupted_run, person_answer
from ._tool_batch import (BatchPlan, Deferred, announce_reused, call_payload, execute_batch, plan_batch,
                          result_payload, tool_message, unanswered_calls)
from .result import AgentRunResult, NextStep, StopReason

if TYPE_CHECKING:
    from ._context import RunContext
    from .runtime import AgentRuntime

__all__ = ["drive"]

_log = logging.getLogger("arknb.runtime")


class _InputRefused(Exception):
    """Control-flow signal: new input cannot start a run yet; nothing was changed."""

    def __init__(self, error: ArkError) -> None:
        super().__init__(error.message)
        self.error = error


async def drive(rt: AgentRuntime, ctx: RunContext, *, new_input: tuple[AgentMessage, ...] | None = None,
                resume_batch: PendingApprovalBatch | None = None, resume_reason: str | None = None,
                cancel_paused: bool = False, paused: PendingApprovalBatch | None = None) -> AgentRunResult:
    """Run until a terminal outcome; never raises for run failures (they are in the result).

    With ``cancel_paused`` the run only ends a paused run (awaiting approval, in doubt,
    suspended or interrupted; ``paused`` is its batch) as cancelled.

    Raises:
        ArkError: ``pending_approval_blocks_input`` for new input to a session whose
            interrupted run has calls only a person can answer (nothing is changed).
    """
    try:
        if cancel_paused:
            ctx.cancel_requested = True
            ctx.cancel.cancel("cancelled by user while paused")
            await _answer_cancelled(rt, ctx, paused)
            return await _finish(rt, ctx, StopReason.CANCELLED, error=ctx.cancel.error())
        try:
            step = await _start(rt, ctx, new_input, resume_batch, resume_reason)
            while step.kind == NextStep.RUN_AGAIN:
                step = await _turn(rt, ctx)
        except _InputRefused as refused:
            raise refused.error from None
        except HookAbort as abort:
            return await _finish(rt, ctx, StopReason.ABORTED, error=abort.error,
                                 extra={"slot": abort.slot, "hook": abort.hook})
        except asyncio.CancelledError:
            asyncio.current_task().uncancel()
            if not ctx.cancel_requested:
                # Not our Stop: the task itself was cancelled (asyncio.run ending with the run
                # still active, or task.cancel()). End the run as cancelled so it is saved
                # ended, never left saved mid-run (DESIGN §14 "Lifecycle"), then let the
                # cancellation go on.
                ctx.cancel_requested = True
                ctx.cancel.cancel("the run's task was cancelled (is its event loop shutting down?)")
                await _finish(rt, ctx, StopReason.CANCELLED, error=ctx.cancel.error())
                raise
            return await _finish(rt, ctx, StopReason.CANCELLED, error=ctx.cancel.error())
        except ArkError as exc:
            if exc.code == ErrorCode.CANCELLED and ctx.cancel_requested:
                return await _finish(rt, ctx, StopReason.CANCELLED, error=exc)
            return await _finish(rt, ctx, StopReason.FAILED, error=exc)
        except Exception as exc:  # a bug or an unexpected failure: report it, keep the session consistent
            error = ArkError(ErrorLayer.RUNTIME, ErrorCode.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
            return await _finish(rt, ctx, StopReason.FAILED, error=error)
        return await _settle(rt, ctx, step)
    finally:
        rt._release(ctx)


async def _start(rt: AgentRuntime, ctx: RunContext, new_input, resume_batch, resume_reason) -> NextStep:
    # Before anything of the run exists: the input, a hook's output or a tool's result
    # may hold a key the model resolves only at its first request (DESIGN §9).
    await learn_model_secrets(rt)
    await rt._extensions.restored()  # a restored session's extensions hear of it before its first run
    state = rt.state
    if resume_reason == "suspend" and resume_batch is None and interrupted(state):
        # Resumed before the session was loaded, and it turned out to be interrupted by a
        # crash rather than suspended: the same run goes on where its operations stand.
        ctx.run_id, ctx.turn, ctx.continued = state.current_run_id, state.current_loop_count, True
        resume_reason = "interrupted"
    # A crash right after an approval batch resolved: its decisions are the resolved records.
    resolving = state.last_stop_reason == "awaiting_approval" and state.pending_approval is None
    previous = rt.state.current_run_id
    if new_input is not None and rt.state.not_resumable:
        _close_stale_run(rt)
    elif new_input is not None and interrupted(state) and unanswered_calls(state.history):
        # Never an unpaired call to the model: the interrupted run's calls are answered
        # first, as resume() would answer them (issue 10 item 7).
        await _pair_interrupted(rt, ctx, resolving)
    # A running run has no stop reason yet: a state saved so (is_running, no stop reason,
    # no pending batch) was interrupted by a crash, not suspended.
    rt._set_state(is_running=True, current_run_id=ctx.run_id, current_loop_count=ctx.turn, last_error=None,
                  last_stop_reason=None)
    if resume_reason is not None:
        rt._emit(EventTypes.AGENT_RESUMED, {"reason": resume_reason, "previous_run_id": previous})
    else:
        rt._emit(EventTypes.AGENT_STARTED, lambda: {"input": jsonable(new_input or ()), "resumed": False})
    if new_input is not None:
        rt._set_state(run_output=ctx.output.saved())  # so a restored pause asks for the same (DESIGN §17)
        rt.loop_detector.reset()
        if rt._pipeline.has(HookSlot.BEFORE_RUN):
            decision = await rt._pipeline.before_run(BeforeRunHookContext(
                session_id=rt.session_id, run_id=ctx.run_id, state=rt.state, input=new_input))
            if decision.action is BeforeRunAction.ABORT:
                raise abort_error("before_run", decision.hook, decision.reason, decision.error)
            if decision.input is not None:
                rt._check_model_takes(decision.input)  # a rewritten input is checked as the original was
                new_input = decision.input
        rt._append_history(new_input)
        await autosave(rt, ctx, "after_user_input")
    if resume_batch is not None:
        if ctx.cancel_requested:
            # Stopped before it began (e.g. Stop pressed while the last decision was saved):
            # the decided calls do not run; _finish answers them as not executed.
            raise ctx.cancel.error()
        # The last decision's save recorded the batch as consumed before this run began:
        # a restore after a crash never offers (and so never runs) these calls again.
        return await _run_decided_batch(rt, ctx, resume_batch)
    if resume_reason is not None:
        # A run interrupted without a clean checkpoint may have unanswered calls: the
        # seam tells which ran (operations) and which a person must decide.
        return await _continue_unanswered(rt, ctx, resolving and resume_reason == "interrupted")
    return NextStep.run_again()


async def _plan_unanswered(rt: AgentRuntime, ctx: RunContext, calls, resolving: bool):
    """The unanswered calls of an interrupted run: (message, in doubt, plan, allowed)."""
    message = last_assistant(rt.state.history)
    doubts, runnable, unplanned = await rt._invocations.classify_unanswered(ctx.run_id, calls, ctx.turn)
    plan = await plan_batch(rt, ctx, message, calls=unplanned) if unplanned else BatchPlan(rt._new_id("batch"))
    if resolving and plan.deferred:
        # The batch these calls froze in was decided just before the crash: its recorded
        # decisions stand (an approved call that never started runs now, never asked again).
        _apply_resolved(rt, plan)
    return message, doubts, plan, runnable + plan.allowed


async def _pair_interrupted(rt: AgentRuntime, ctx: RunContext, resolving: bool) -> None:
    """Answer the calls a crash left unanswered before new input starts a run: under the
    interrupted run's id (its operations are keyed by it), the way resume() answers them.
    If a person must decide one (in doubt, or awaiting approval) the input is refused
    and nothing changes: resume() continues that run, then the input can be sent."""
    state = rt.state
    new_run, new_turn = ctx.run_id, ctx.turn
    ctx.run_id, ctx.turn, ctx.continued = state.current_run_id, state.current_loop_count, True
    try:
        calls = unanswered_calls(state.history)
        message, doubts, plan, allowed = await _plan_unanswered(rt, ctx, calls, resolving)
        if doubts or plan.deferred:
            await rt._invocations.flush()  # what planning recorded stays recorded
            names = ", ".join(call.name for call in calls)
            raise _InputRefused(ArkError(
                ErrorLayer.SECURITY, ErrorCode.PENDING_APPROVAL_BLOCKS_INPUT,
                f"session {rt.session_id!r}: the run a crash interrupted left tool calls ({names}) that a person "
                "must decide first (an approval, or a call that may have run); call runtime.resume() (or "
                "runtime.controller.list_pending_approvals()), decide them, then send the input again"))
        try:
            outcome = await execute_batch(rt, ctx, plan.batch_id, message, allowed, plan.denied)
        except CallsInDoubt:
            # Found only now (a restored call that began and left no result): a person decides.
            await pause_interrupted_run(rt)
            raise _InputRefused(ArkError(
                ErrorLayer.SECURITY, ErrorCode.PENDING_APPROVAL_BLOCKS_INPUT,
                f"session {rt.session_id!r}: a tool call of the interrupted run may or may not have run; decide it "
                "(runtime.controller.list_in_doubt()), then send the input again")) from None
        if outcome.deferred:
            # A call run again handed itself to a person (ToolContext.defer: a delegation whose
            # child now waits for a decision): the interrupted run pauses for it as resume()
            # would pause, and the input waits. Dropped, the call would stay unanswered.
            pause = BatchPlan(batch_id=plan.batch_id, denied=list(plan.denied), deferred=outcome.deferred)
            batch = build_batch(rt, ctx, pause, message, finished=outcome.finished)
            error = await freeze_for_approval(rt, ctx, batch, reason=rt._extensions.kind(batch.kind).suspend_reason)
            raise _InputRefused(error or rt._extensions.blocks_input_error(batch))
    finally:
        ctx.run_id, ctx.turn, ctx.continued = new_run, new_turn, False


async def _answer_cancelled(rt: AgentRuntime, ctx: RunContext, paused: PendingApprovalBatch | None) -> None:
    """Cancelling a paused or interrupted run answers each open call with what is known of
    it: a denial keeps its result, a call that may have run says so, a finished one (an
    operation's result) keeps it, and only a call that never started is "not executed"."""
    calls = unanswered_calls(rt.state.history)
    if not calls:
        return
    recorded = await rt._invocations.known_results(rt.state.current_run_id or ctx.run_id, calls,
                                                   rt.state.current_loop_count)
    known: dict[str, ToolResult] = {
        call_id: result if result is not None else ToolResult.from_text(
            "cancelled while its outcome was unknown: the process ended while this call ran",
            is_error=True, error_code=ErrorCode.CANCELLED.value)
        for call_id, result in recorded.items()}
    announced: set[str] = set()
    if paused is not None:
        for item in (*paused.denied_calls, *paused.finished_calls):  # denied, or ran before the batch paused
            known.setdefault(item.call.id, item.result)
            announced.add(item.call.id)  # (tool.denied / tool.after when it was decided or ran)
        if paused.kind == IN_DOUBT:  # (close_run completes the operations of the undecided ones indeterminate)
            for item in paused.items:
                announced.add(item.tool_call.id)  # (its card follows the person's decision)
                answer = person_answer(item)
                if answer is not None:  # marked done or failed before the cancel: that answer stands
                    known[item.tool_call.id] = answer.result
                    continue
                known[item.tool_call.id] = ToolResult.from_text(
                    "cancelled while its outcome was unknown: the process ended while this call ran, and the run "
                    "was cancelled before anyone said whether it had run", is_error=True,
                    error_code=ErrorCode.CANCELLED.value)
    answers = []
    for call in calls:
        result = known.get(call.id) or ToolResult.from_text(
            "not executed: the run was cancelled before this call ran", is_error=True,
            error_code=ErrorCode.NOT_EXECUTED.value)
        answers.append(tool_message(call, result))
        if recorded.get(call.id) is not None and call.id not in announced:
            _announce_recorded(rt, paused, call, result)
    rt._append_history(answers)


def _announce_recorded(rt: AgentRuntime, paused: PendingApprovalBatch | None, call, result: ToolResult) -> None:
    """Tell the chat and the timeline what a cancelled run answers a call with from its
    operation's record (a result committed by an earlier process): its card would say
    "not executed" otherwise, of a call that ran."""
    batch_id = paused.batch_id if paused is not None else None
    if result.error_code == ErrorCode.TOOL_DENIED.value:
        rt._emit(EventTypes.TOOL_DENIED, lambda: flat_payload(
            call=call_payload(call), result=result_payload(result), reason=result.text, batch_id=batch_id))
        return
    announce_reused(rt, call, result, batch_id)


async def _continue_unanswered(rt: AgentRuntime, ctx: RunContext, resolving: bool = False) -> NextStep:
    calls = unanswered_calls(rt.state.history)
    if not calls:
        return NextStep.run_again()
    message, doubts, plan, allowed = await _plan_unanswered(rt, ctx, calls, resolving)
    if doubts:
        # Never a silent "unknown" answer: the calls whose fate is unknown go to a person.
        return NextStep.await_approval(in_doubt_batch(rt, ctx.run_id, message, doubts, allowed, plan.denied))
    if plan.deferred:
        plan.allowed = allowed
        return NextStep.await_approval(build_batch(rt, ctx, plan, message))
    return await _execute_and_complete(rt, ctx, plan.batch_id, message, allowed, plan.denied)


def _apply_resolved(rt: AgentRuntime, plan: BatchPlan) -> None:
    decided = {record.call_id: record for record in rt.state.resolved_approvals}
    still: list[Deferred] = []
    for deferred in plan.deferred:
        call = deferred.call
        record = decided.get(call.id)
        if record is None or record.tool_name != call.name or deferred.ran:
            still.append(deferred)
            continue
        # The recorded decision, answered by the item's own kind (a rejected plan reads as one).
        item = PendingApprovalItem(approval_id=record.approval_id, tool_call=call, risk_level=deferred.risk,
                                   reason=deferred.reason, created_at=0.0, decision=record.decision,
                                   deny_reason=record.deny_reason, kind=deferred.kind,
                                   detail=dict(deferred.detail or {}))
        result = rt._extensions.answer(item)
        if result is None:
            plan.allowed.append(call)
        else:
            plan.denied.append(DeniedCall(call=call, result=result, reason=record.deny_reason or "denied by the user",
                                          hook="approval"))
    plan.deferred = still


async def _close_operations(rt: AgentRuntime, ctx: RunContext, reason: StopReason, error: ArkError | None) -> None:
    """Complete what the run's operations left open, within the save time limit: the run's
    own ending matters more (its terminal save reports a failing store)."""
    closing = rt._invocations.close_run(rt.state.current_run_id or ctx.run_id, reason.value,
                                        error.info() if error else None)
    try:
        await asyncio.wait_for(closing, rt.save_timeout)
    except (ArkError, asyncio.TimeoutError) as exc:
        _log.warning("could not complete the open operations of run %s: %r", ctx.run_id, exc)


def _close_stale_run(rt: AgentRuntime) -> None:
    """New input to a session marked not resumable: its last run can never continue, so it
    ends here (a frozen batch is dropped, its calls answered as not executed) and the
    session goes on; the next save records it as resumable again."""
    rt._set_state(pending_approval=None)
    rt._answer_unanswered("not executed: the session was marked not resumable (a save failed) before this "
                          "call could run")
    rt._set_state(not_resumable=False)


async def _turn(rt: AgentRuntime, ctx: RunContext) -> NextStep:
    if ctx.cancel_requested:
        raise ctx.cancel.error()
    if ctx.suspend_requested:
        # A safe checkpoint: every tool call in history has its result (seed 003 §4.3).
        return NextStep.stop(StopReason.SUSPENDED)
    if ctx.turn >= rt.max_turns:
        return NextStep.stop(StopReason.MAX_TURNS, error=ArkError(
            ErrorLayer.RUNTIME, ErrorCode.MAX_TURNS, f"the run reached max_turns={rt.max_turns}"))
    ctx.turn += 1
    rt._set_state(current_loop_count=ctx.turn, total_loop_count=rt.state.total_loop_count + 1)
    response = await call_model(rt, ctx)
    message = _note_finish(rt, ctx, response)
    rt._append_history((message,), usage=response.usage)
    await autosave(rt, ctx, "after_model_text")
    if message.tool_calls and not ctx.output.answers(message):
        cut = _cut_call(message) if ctx.truncated else None
        if cut is not None:
            return _end_cut_reply(rt, ctx, message, cut)
        hit = rt.loop_detector.observe(message.tool_calls)
        if hit is not None:
            return await _on_loop(rt, ctx, message, hit)
        plan = await plan_batch(rt, ctx, message)
        if plan.deferred:
            return NextStep.await_approval(build_batch(rt, ctx, plan, message))
        return await _execute_and_complete(rt, ctx, plan.batch_id, message, plan.allowed, plan.denied)
    return await _complete_turn(rt, ctx, message, has_tools=False)


async def _execute_and_complete(rt, ctx, batch_id, message, allowed, denied, settled=()) -> NextStep:
    try:
        outcome = await execute_batch(rt, ctx, batch_id, message, allowed, denied, settled)
    except CallsInDoubt as doubt:
        # A restored run found calls that began and left no result: a person decides.
        doubtful = {d.call.id for d in doubt.calls}
        others = [c for c in allowed if c.id not in doubtful]
        # What a person settled stays settled (a denial would record its operation denied).
        return NextStep.await_approval(in_doubt_batch(rt, ctx.run_id, message, doubt.calls, others, denied,
                                                      finished=settled))
    if outcome.deferred:
        # A call handed itself to a person while it ran (ToolContext.defer): pause the batch
        # like an approval, keeping what the other calls returned.
        plan = BatchPlan(batch_id=batch_id, denied=list(denied), deferred=outcome.deferred)
        return NextStep.await_approval(build_batch(rt, ctx, plan, message, finished=outcome.finished))
    if outcome.stop:
        await _turn_completed_event(rt, ctx, message, "stop")
        await autosave(rt, ctx, "after_tool_batch")
        return NextStep.stop(StopReason.STOPPED, message=message)
    step = await _complete_turn(rt, ctx, message, has_tools=True)
    if step.kind == NextStep.RUN_AGAIN:
        await autosave(rt, ctx, "after_tool_batch")
    return step


def _note_finish(rt: AgentRuntime, ctx: RunContext, response) -> AgentMessage:
    """An answer cut at max_tokens is said so (DESIGN §17): the run's result is marked
    truncated if its final answer is, ``llm.truncated`` tells the chat and the timeline,
    and the message is saved marked (``truncated``), so a restored chat marks it too."""
    ctx.truncated = response.finish_reason is FinishReason.LENGTH
    if not ctx.truncated:
        return response.message
    rt._emit(EventTypes.LLM_TRUNCATED, lambda: flat_payload(
        turn=ctx.turn, finish_reason=response.finish_reason.value, max_tokens=rt.config.max_tokens,
        output_tokens=response.usage.output_tokens if response.usage.reported else None))
    return response.message.model_copy(update={"truncated": True})


def _cut_call(message: AgentMessage) -> ToolCall | None:
    """The call a reply cut at max_tokens stopped inside (arguments not a whole JSON object)."""
    for call in reversed(message.tool_calls):
        try:
            call.arguments
        except ArkError:
            return call
    return None


def _end_cut_reply(rt: AgentRuntime, ctx: RunContext, message: AgentMessage, cut: ToolCall) -> NextStep:
    """A reply cut inside a tool call (DESIGN §17): no call of it runs, none is shown to a
    person for approval; the cut one is answered as such, the others as not executed, and
    the run ends truncated, saying which call was cut and how to avoid it."""
    limit = f"max_tokens={rt.config.max_tokens}" if rt.config.max_tokens else "the server's token limit"
    why = (f"the reply was cut at {limit} (finish reason length) inside tool call "
           f"{cut.name!r} ({cut.id}): its arguments are incomplete JSON, so it was not run")
    answers = []
    for call in message.tool_calls:
        is_cut = call.id == cut.id
        result = ToolResult.from_text(
            f"not executed: {why}" if is_cut else "not executed: the reply was cut at max_tokens", is_error=True,
            error_code=(ErrorCode.TOOL_CALL_TRUNCATED if is_cut else ErrorCode.NOT_EXECUTED).value)
        answers.append(tool_message(call, result))
        # Refused by the runtime, as a hook refuses a call: the chat's card and the timeline say why.
        rt._emit(EventTypes.TOOL_DENIED, lambda call=call, result=result: flat_payload(
            call=call_payload(call), result=result_payload(result), reason=result.text, hook=None, batch_id=None))
    rt._append_history(answers)
    return NextStep.stop(StopReason.COMPLETED, message=message, error=ArkError(
        ErrorLayer.TOOL, ErrorCode.TOOL_CALL_TRUNCATED, f"{why}; no call of that reply ran. Raise "
        "ModelConfig.max_tokens (or ask for fewer or shorter calls) and run again"))


async def _complete_turn(rt: AgentRuntime, ctx: RunContext, message: AgentMessage, *, has_tools: bool) -> NextStep:
    action = "accept"
    # The answer is settled first (a typed one is validated, its final_result call paired
    # with its result), so the turn's hooks see a consistent history.
    step = NextStep.run_again() if has_tools else await ctx.output.settle(rt, ctx, message)
    if step.kind == NextStep.RUN_AGAIN and not has_tools:
        action = "output_retry"
    if rt._pipeline.has(HookSlot.ON_TURN_COMPLETION):
        await rt._invocations.flush_staged()  # a record held back is committed before user code runs
        decision = await rt._pipeline.on_turn_completion(TurnCompletionHookContext(
            session_id=rt.session_id, run_id=ctx.run_id, state=rt.state, message=message, turn=ctx.turn))
        if decision.action is TurnCompletionAction.ABORT:
            raise abort_error("on_turn_completion", decision.hook, decision.reason, decision.error)
        if decision.action is TurnCompletionAction.CONTINUE_RUN:
            action = "continue_run"
            step = NextStep.run_again()
            if decision.messages:
                rt._append_history(decision.messages)
    await _turn_completed_event(rt, ctx, message, action)
    return step


async def _turn_completed_event(rt, ctx, message, action) -> None:
    rt._emit(EventTypes.TURN_COMPLETED, lambda: flat_payload(turn=ctx.turn, message=jsonable(message), action=action))


async def _on_loop(rt: AgentRuntime, ctx: RunContext, message: AgentMessage, hit) -> NextStep:
    explanation = await rt.loop_detector.explain(hit, rt.state.history)
    rt._emit(EventTypes.LOOP_DETECTED, {"signature": hit.signature, "tool": hit.tool, "count": hit.count,
                                        "window": hit.window, "threshold": hit.threshold, "message": explanation,
                                        "mode": rt.loop_detector.on_detect})
    if rt.loop_detector.on_detect == "ask":
        plan = BatchPlan(batch_id=rt._new_id("batch"))
        tools = rt._offered_tools()
        for call in message.tool_calls:
            plan.deferred.append(Deferred(call, f"loop detected: {explanation}. Approve to continue, deny to stop.",
                                          tools.risk_of(call.name) or ToolRisk.SAFE, "loop"))
        return NextStep.await_approval(build_batch(rt, ctx, plan, message))
    rt._answer_unanswered("not executed: loop_detected")
    return NextStep.stop(StopReason.LOOP_DETECTED, error=ArkError(ErrorLayer.RUNTIME, ErrorCode.LOOP_DETECTED,
                                                                   explanation))


async def _run_decided_batch(rt: AgentRuntime, ctx: RunContext, batch: PendingApprovalBatch) -> NextStep:
    # The batch's kind says how it continues (an ApprovalKind entry, never a branch here).
    resolution = rt._extensions.resolve(batch)
    if resolution.stop is not None:
        reason, error = resolution.stop
        rt._answer_unanswered(resolution.stop_text)
        return NextStep.stop(reason, error=error)
    if resolution.replan:
        plan = await plan_batch(rt, ctx, batch.model_message)
        if plan.deferred:
            return NextStep.await_approval(build_batch(rt, ctx, plan, batch.model_message))
        return await _execute_and_complete(rt, ctx, plan.batch_id, batch.model_message, plan.allowed, plan.denied)
    allowed, denied = list(resolution.run), list(resolution.answered)
    settled = list(resolution.settled) + list(batch.finished_calls)
    covered = {c.id for c in allowed} | {s.call.id for s in settled} | {d.call.id for d in denied}
    rest = [c for c in unanswered_calls(rt.state.history) if c.id not in covered]
    if rest:  # calls a crash left unplanned (an in-doubt batch): their hooks and approvals run now
        plan = await plan_batch(rt, ctx, batch.model_message, calls=rest)
        allowed += plan.allowed
        denied += plan.denied
        if plan.deferred:
            # The pause carries what a person settled as settled (never as a denial: its
            # operation would be recorded denied), with what ran before the batch paused.
            plan.allowed, plan.denied = allowed, denied
            return NextStep.await_approval(build_batch(rt, ctx, plan, batch.model_message, finished=settled))
    return await _execute_and_complete(rt, ctx, batch.batch_id, batch.model_message, allowed, denied, settled)


async def _settle(rt: AgentRuntime, ctx: RunContext, step: NextStep) -> AgentRunResult:
    if step.kind == NextStep.AWAIT_APPROVAL:
        reason = rt._extensions.kind(step.batch.kind).suspend_reason  # "awaiting_approval", "in_doubt", ...
        error = await freeze_for_approval(rt, ctx, step.batch, reason=reason)
        if error is not None:
            return await _finish(rt, ctx, StopReason.FAILED, error=error, saved_already=False)
        return await _finish(rt, ctx, StopReason.AWAITING_APPROVAL, error=awaiting_approval_error(
            step.batch, rt._extensions.kind(step.batch.kind).how_to_decide),
                             saved_already=True)
    if step.stop_reason is StopReason.SUSPENDED:
        rt._set_state(is_running=True, last_stop_reason=StopReason.SUSPENDED.value)
        saved = await persist_terminal(rt, ctx, reason="suspend")
        if not saved.ok:
            return await _finish(rt, ctx, StopReason.FAILED, error=save_error(saved.error), saved_already=False,
                                 persisted=False)
        rt._emit(EventTypes.AGENT_SUSPENDED, {"reason": "suspend", "batch_id": None})
        return await _finish(rt, ctx, StopReason.SUSPENDED, saved_already=True)
    return await _finish(rt, ctx, step.stop_reason, error=step.error, final_message=step.message, output=step.output)


_TERMINAL_EVENTS = {
    StopReason.COMPLETED: EventTypes.AGENT_SUCCESS,
    StopReason.STOPPED: EventTypes.AGENT_SUCCESS,
    StopReason.MAX_TURNS: EventTypes.AGENT_ERROR,
    StopReason.LOOP_DETECTED: EventTypes.AGENT_ERROR,
    StopReason.FAILED: EventTypes.AGENT_ERROR,
    StopReason.CANCELLED: EventTypes.AGENT_CANCELLED,
    StopReason.ABORTED: EventTypes.AGENT_ABORTED,
}


async def _finish(rt: AgentRuntime, ctx: RunContext, reason: StopReason, *, error: ArkError | None = None,
                  final_message: AgentMessage | None = None, saved_already: bool = False, persisted: bool = True,
                  extra: dict | None = None, output: Any = None) -> AgentRunResult:
    """The one terminal path: state, mandatory save, terminal event, after_run (exactly once)."""
    ctx.finishing = True
    if reason is StopReason.CANCELLED:
        rt._answer_unanswered("not executed: the run was cancelled")
    elif not reason.resumable:
        # Seed 003 §4.3: a checkpoint only with every call paired (e.g. an abort in before_tool_call).
        rt._answer_unanswered(f"not executed: the run ended {reason.value}")
    if not reason.resumable and reason is not StopReason.COMPLETED:
        # Ended for good: no operation of the run stays open (a completed run leaves none).
        await _close_operations(rt, ctx, reason, error)
    rt._set_state(is_running=reason.resumable, last_error=error.info() if error else None,
                  last_stop_reason=reason.value)
    if not saved_already:
        # A cancelled run ends promptly: it does not wait for a save the storage still owes.
        saved = await persist_terminal(rt, ctx, run_error=error.info() if error else None,
                                       hurry=reason is StopReason.CANCELLED)
        persisted = persisted and saved.ok
        if not saved.ok and error is None:
            # The run reached its end but could not record it: the result says so (and the
            # session is now marked not resumable).
            error = save_error(saved.error)
    result = AgentRunResult(run_id=ctx.run_id, stop_reason=reason, final_message=final_message, error=error,
                            usage=ctx.usage, turns=ctx.turn, session_id=rt.session_id, persisted=persisted,
                            output=output, truncated=ctx.truncated and final_message is not None)
    event_type = _TERMINAL_EVENTS.get(reason)
    if event_type is not None:
        payload = result.to_dict()
        payload.update(extra or {})
        if reason is StopReason.CANCELLED:
            payload["reason"] = ctx.cancel.reason
        rt._emit(event_type, payload)
    # The terminal event follows the terminal save: the seam commits what is still pending.
    await rt._invocations.flush()
    if not ctx.after_run_done:
        ctx.after_run_done = True
        if rt._pipeline.has(HookSlot.AFTER_RUN):
            await rt._pipeline.after_run(AfterRunHookContext(session_id=rt.session_id, run_id=ctx.run_id,
                                                             state=rt.state, result=result))
            # What the observers announced (a diagnostic) is committed, and so heard, before
            # the run's task ends (a durable store's listeners hear events once committed).
            await rt._invocations.flush()
    return result
