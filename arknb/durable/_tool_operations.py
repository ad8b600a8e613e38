"""Tool calls on the durable seam: the planning, execution and in-doubt half of
:class:`~arknb.durable.runtime_seam.DurableInvocations` (DESIGN §13).

``ToolOperations`` is a base of ``DurableInvocations``: it uses the seam's bus, store,
commits and lookups (``self.bus``, ``self.store``, ``self._commit``, ``self._operation``,
``self._find``) and adds what a tool batch needs — each call's request phase recorded
hook by hook, the batch run through the bus, denials, answers recorded before a crash,
and the calls a person decides after one (in doubt).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arknb.domain import ArkError, ErrorCode, ErrorLayer, ToolCall, ToolResult
from arknb.domain.invocation import CALL_DEFERRED, CallsInDoubt, HookAbort, InDoubtCall
from arknb.state import DeniedCall

from ._interceptors import (
    APPROVAL, OperationProgress, call_of, deferral, deny_reason, planned_phase, recorded_abort, tool_answer,
    tool_result,
)
from ._pipeline import attempt_open, close_last, crash_looping
from .operation import (MODEL_CALL, TOOL_CALL, HookRecord, Operation, OperationPhase, OperationStatus,
                        purpose_key_for_tool)
from .requests import EventRequest

__all__ = ["MODEL_CALL", "TOOL_CALL", "ToolOperations"]


_SETTLE_S = 2.0
"""How long a run that ended waits for the calls it cancelled to end before completing what
they left open (one still running then, e.g. a hook that ignores cancellation, completes
its own record when it ends)."""


class ToolOperations:
    """The tool half of the durable seam (a base of ``DurableInvocations``)."""

    async def plan_tools(self, planning: Any) -> None:
        """The request phase of each call of a batch, recorded hook by hook: a decision an
        earlier process recorded stands (no hook runs again); an unfinished one goes on
        with the hooks not yet recorded."""
        self._run_started(planning.run_id, planning.continued)
        for call in planning.calls:
            purpose = await self._tool_purpose(planning.run_id, call.id, planning.turn, planning.continued)
            operation = await self._find(purpose, planning.continued)
            if operation is not None and _replay_plan(planning, operation):
                continue
            earlier = self._deferred_before.get(purpose) if operation is None else None
            if earlier is not None and not self.scope.is_idempotent(call.name):
                # The call ran and deferred itself, and no operation of its next attempt exists:
                # the pause's save commits one (prepare_next_attempts), so the process ended
                # between the deferral's commit and that save, and no person saw it. It waits
                # for one now: run again, it would run twice, and a tool would take its second
                # run for the approval it never had. (An idempotent one, e.g. delegate_task,
                # runs again: it picks up what it started and defers again as it stands now.)
                reason, kind, detail = _self_deferral(earlier)
                planning.defer(call_of(earlier.effective_input), reason, kind, detail, ran=True)
                continue
            if operation is None:
                operation = self.bus.new_operation(EventRequest(
                    TOOL_CALL, 1, self._input(call, planning.turn), purpose))
            operation = operation.advance(OperationPhase.REQUEST_HOOKS, at=self.scope.clock())
            raw_input = operation.raw_input
            progress = OperationProgress(self, operation, "request", "before_tool_call", lambda value: {
                "effective_input": {**raw_input, "call": value.model_dump(mode="json")},
                "input_source": progress.source})
            try:
                decided = await planning.decide(call_of(operation.effective_input), progress)
            except HookAbort as abort:
                # Recorded before the run ends (the terminal save carries it): a restore
                # meets the abort again without calling the hook.
                self.stage(progress.current().advance(OperationPhase.COMPLETED, at=self.scope.clock(),
                                                      status=OperationStatus.BLOCKED, error=abort.error.info(),
                                                      result_source=abort.hook))
                raise
            operation = progress.current()
            if isinstance(decided, DeniedCall):
                operation = _denied(operation, decided, self.scope.clock())
            self.stage(operation)

    async def run_tools(self, batch: Any) -> list:
        self._run_started(batch.run_id, batch.ctx.continued)
        continued = batch.ctx.continued
        requests = []
        purposes = {}
        for call in batch.order:
            purpose = purposes[call.id] = await self._tool_purpose(batch.run_id, call.id, batch.turn, continued)
            self.tool_calls[purpose] = (batch, call)
            given = batch.given_answer(call)
            if given is not None and not batch.is_settled(call):
                await self._deny(purpose, call, given, batch.turn, continued)
            original = batch.original(call)
            requests.append(EventRequest(TOOL_CALL, 1, self._input(original, batch.turn), purpose))
        if continued:
            await self._note_recorded_abort(batch, purposes)
        try:
            responses = await self.bus.request_many(requests)
        finally:
            for request in requests:
                self.tool_calls.pop(request.purpose_key, None)
        answers = []
        doubts = []
        try:
            for call, response in zip(batch.order, responses, strict=True):
                purpose = purposes[call.id]
                if response.status == OperationStatus.INDETERMINATE:
                    operation = await self._operation(response.operation_id)
                    doubts.append(InDoubtCall(call, response.operation_id, operation.started_at,
                                              len(operation.attempts)))
                    continue
                answer = self.answers.pop(purpose, None)
                if answer is None:  # completed by a process before this one: announced, never run again
                    _raise_cancel(batch.ctx)
                    answer = await self._recorded_answer(batch, call, response)
                answers.append(answer)
        finally:
            for request in requests:
                self.results.pop(request.purpose_key, None)
                self.answers.pop(request.purpose_key, None)
        if doubts:
            raise CallsInDoubt(doubts, {answer.call.id: answer.result for answer in answers})
        return answers

    def _input(self, call: ToolCall, turn: int) -> dict:
        """A tool operation's input: the call, its turn and, for a tool from a source (an MCP
        server), where the call goes (DESIGN §15: the server name is on record)."""
        payload = {"call": call.model_dump(mode="json"), "turn": turn}
        source = getattr(self.scope, "source_of", None)
        where = source(call.name) if source is not None else None
        if where:
            payload["source"] = where
        return payload

    async def _deny(self, purpose: str, call: ToolCall, given: Any, turn: int, continued: bool) -> None:
        """A denied call (by a hook, or by a person deciding its approval) is answered with
        its synthetic result through the response phase: its operation waits raw_saved."""
        operation = await self._find(purpose, continued)
        if operation is not None and (operation.status is OperationStatus.DENIED or operation.completed):
            return
        if operation is None:
            operation = self.bus.new_operation(EventRequest(
                TOOL_CALL, 1, {"call": call.model_dump(mode="json"), "turn": turn}, purpose))
        elif operation.records("request") and operation.records("request")[-1].action == "defer":
            operation = operation.copy_with({"hook_progress": operation.hook_progress + (HookRecord(
                slot="before_tool_call", action="deny", hook=APPROVAL, reason=given.reason),)})
        self.stage(_denied(operation, given, self.scope.clock()))

    async def _note_recorded_abort(self, batch: Any, purposes: dict[str, str]) -> None:
        """A restored batch: an abort an earlier process recorded in an answer's response
        hooks makes the later answers skip theirs, as it did then."""
        for call in batch.order:
            operation = await self._find(purposes[call.id], True)
            if operation is not None and operation.completed and operation.status is OperationStatus.BLOCKED \
                    and any(r.action == "abort" for r in operation.records("response")):
                batch.aborted = recorded_abort(operation, "after_tool_call")
                return

    async def _recorded_answer(self, batch: Any, call: ToolCall, response: Any) -> Any:
        operation = await self._operation(response.operation_id)
        result, raw, injected, stop, abort, source = tool_answer(operation, call)
        if operation.attempts and batch.given_answer(call) is None:
            batch.on_result(call, raw, reused=True)
        return batch.recorded_answer(call, result, raw, injected, stop, abort, source)

    async def _tool_purpose(self, run_id: str, call_id: str, turn: int, continued: bool) -> str:
        """The purpose key of a tool call: ``{run_id}:{call_id}`` (DESIGN §13), and, for a
        model that reuses a call id in a later turn of the same run, ``...:{call_id}.t{turn}``
        (else the later call would find the earlier one's result and never run)."""
        base = purpose_key_for_tool(run_id, call_id)
        key = (run_id, call_id)
        first = self._call_turns.get(key)
        if first is None:
            if continued:  # an earlier process may have used this id in an earlier turn of the run
                operation = self.bus.known(base) or await self.store.find_operation(self.session_id, base)
                first = _turn_of(operation) if operation is not None else None
            first = turn if first is None else first
            self._call_turns[key] = first
        purpose = base if first == turn else f"{base}.t{turn}"
        if not continued:
            return purpose
        # A call that deferred itself (ToolContext.defer: a sub-agent waiting for approvals)
        # committed that answer; run again once decided (under the same run id), each
        # attempt is an operation of its own: ``...:{call_id}.a1``, ``.a2``, ...
        attempt, current = 0, purpose
        while _deferred(operation := await self.store.find_operation(self.session_id, current)):
            attempt += 1
            current = f"{purpose}.a{attempt}"
            self._deferred_before[current] = operation
        return current

    async def prepare_next_attempts(self, state: Any) -> None:
        """Stage, with the save of ``state``'s pending batch, the next attempt's operation
        (``prepared``) of each item whose call deferred itself: the pause and the next
        attempt's intent are one commit (seed 004 §5), which tells a restore whether the
        deferral reached a person."""
        batch = state.pending_approval
        made = {call.id: call for call in batch.model_message.tool_calls}
        for item in batch.items:
            purpose = await self._tool_purpose(batch.run_id, item.tool_call.id, state.current_loop_count, True)
            if purpose in self._deferred_before and await self._find(purpose, True) is None:
                original = made.get(item.tool_call.id, item.tool_call)  # as the model made it, like run_tools
                self.stage(self.bus.new_operation(EventRequest(
                    TOOL_CALL, 1, {"call": original.model_dump(mode="json"), "turn": state.current_loop_count},
                    purpose)))

    async def _run_tool(self, request: EventRequest) -> dict:
        batch, call = self.tool_calls[request.purpose_key]
        payload = request.payload["call"]
        effective = call if payload == call.model_dump(mode="json") else ToolCall.model_validate(payload)
        result = await batch.execute_one(effective, idempotency_key=request.idempotency_key)
        self.results[request.purpose_key] = result
        answer = result.model_dump(mode="json")
        deferral = batch.deferrals.calls.get(effective.id)
        if deferral is not None:  # what a restore needs to ask the person, if the pause is not saved
            reason, kind, detail = deferral
            answer[_DEFERRAL] = {"reason": reason, "kind": kind, "detail": detail}
        return answer

    async def classify_unanswered(self, run_id: str, calls: list[ToolCall], turn: int
                                  ) -> tuple[list, list, list]:
        """After a crash: which unanswered calls (of ``turn``) are in doubt, which have
        operations to continue (reuse a result, run again idempotently, or run an approved
        call that never started), and which planning must decide (never planned, or planned
        only in part: their recorded hook decisions stand)."""
        in_doubt, runnable, unplanned = [], [], []
        for call in calls:
            purpose = await self._tool_purpose(run_id, call.id, turn, True)
            operation = await self._find(purpose, True)
            if operation is None or operation.phase.rank < OperationPhase.EXECUTING.rank \
                    or planned_phase(operation) in ("deny", "abort"):
                unplanned.append(call)  # planning replays what it recorded and runs the rest
                continue
            if operation.phase is OperationPhase.EXECUTING and not operation.completed:
                started = attempt_open(operation.attempts)
                # Run again by itself only if idempotent, and not after a crash loop (see
                # RECOVERY_LIMIT): the bus's recovery decides the same way.
                if operation.in_doubt or (started and (not self.scope.is_idempotent(call.name)
                                                       or crash_looping(operation))):
                    if not operation.in_doubt:
                        operation = operation.copy_with({"status": OperationStatus.INDETERMINATE,
                                                         "updated_at": self.scope.clock()})
                        await self._commit(operations=(operation,))
                    in_doubt.append(InDoubtCall(call_of(operation.effective_input),
                                                operation.operation_id, operation.started_at,
                                                len(operation.attempts)))
                    continue
            runnable.append(call_of(operation.effective_input))
        return in_doubt, runnable, unplanned

    async def record_in_doubt_decision(self, item: Any, resolution: str, text: str | None
                                       ) -> tuple[Operation, ...]:
        """The operation record of a person's decision on an in-doubt call, not written:
        the decision's state save carries it (``save(..., operations=)``), so the store
        holds both or neither. Written alone first, a process killed before the state save
        left a call the state still lists as in doubt whose operation no longer was, and
        the person's next decision was refused (or silently lost to the unacknowledged one).

        Raises:
            ArkError: ``operation_not_found``; ``operation_not_in_doubt``.
        """
        operation_id = item.approval_id
        if not operation_id.startswith("op_"):
            return ()
        operation = await self.store.get_operation(operation_id)
        if operation is not None and not operation.in_doubt and _already(operation, resolution):
            return ()  # a save that overran landed with it: the decision is being retried
        if resolution == "rerun":
            return (await self.bus.rerun_record(operation_id),)
        if resolution == "done":
            # The person's outcome stands for the raw result; after_tool_call runs on it
            # when the run continues, like on any other answer.
            return (await self.bus.settled_record(operation_id, status=OperationStatus.SUCCEEDED, respond=True,
                                                  result=ToolResult.from_text(text or "").model_dump(mode="json")),)
        error = ArkError(ErrorLayer.TOOL, ErrorCode.TOOL_FAILED, text or "marked failed by a person")
        return (await self.bus.settled_record(operation_id, status=OperationStatus.FAILED, error=error.info(),
                                              respond=True, result=ToolResult.from_text(
                                                  text or "failed", is_error=True,
                                                  error_code=ErrorCode.TOOL_FAILED).model_dump(mode="json")),)

    async def operation_state(self, operation_id: str) -> str | None:
        """What operation ``operation_id`` of this session is now (its status once
        completed, else its phase), or None if this session has no such operation."""
        operation = self.bus._known_ids.get(operation_id) or await self.store.get_operation(operation_id)
        if operation is None or operation.session_id != self.session_id:
            return None
        return operation.status.value if operation.status is not None else operation.phase.value

    async def known_results(self, run_id: str, calls: list[ToolCall], turn: int) -> dict[str, ToolResult | None]:
        """What the operations tell of unanswered calls whose run is being cancelled: a
        result committed (the effective one, or the raw one whose response hooks did not
        finish), or None for a call that began and left no result (it may have run)."""
        known: dict[str, ToolResult | None] = {}
        for call in calls:
            operation = await self._find(await self._tool_purpose(run_id, call.id, turn, True), True)
            if operation is None or operation.phase.rank < OperationPhase.EXECUTING.rank:
                continue
            if operation.completed:
                known[call.id] = tool_answer(operation, call)[0]
            elif operation.phase.rank >= OperationPhase.RAW_SAVED.rank:
                known[call.id] = tool_result(operation.effective_result, operation.error)
            elif operation.attempts:
                known[call.id] = None
        return known

    async def close_run(self, run_id: str, reason: str, error: Any) -> None:
        """Complete the operations run ``run_id`` left open when it ended for good
        (``reason``: cancelled, failed, aborted, ...; ``error``: the run's ``ErrorInfo`` or
        None), so that none of a finished run looks in flight: a saved result stands (its
        response hooks never ran), a call that began and left no result is
        ``indeterminate`` (nobody decides it now), one that never began (awaiting approval,
        a deferral's next attempt, a sibling of an aborted call) ``failed``. Pipelines of
        the run still running in this process (a response hook, a handler) are cancelled
        first, as the run no longer awaits them; the records ride the terminal save."""
        if self.lost is not None:
            return  # the session is another owner's now: never touch its rows
        operations = await self.store.list_operations(self.session_id, run_id=run_id)
        open_ids = {op.operation_id for op in operations if not op.completed}
        if open_ids & set(self.bus.running()):
            # What still runs of the run stops (a hook or handler it no longer awaits).
            running = await self.bus.cancel_running(open_ids, _SETTLE_S)
            operations = await self.store.list_operations(self.session_id, run_id=run_id)
        else:
            running = set()
        # The newest record of each: one staged (not written yet) is newer than its row.
        newest = {op.operation_id: op for op in operations}
        newest.update((op_id, op) for op_id, op in self._staged.items() if op.run_id == run_id)
        now = self.scope.clock()
        if error is None:
            error = ArkError(ErrorLayer.TOOL, ErrorCode.NOT_EXECUTED, f"not executed: the run ended {reason}").info()
        for operation in newest.values():
            if not operation.completed and operation.operation_id not in running:
                self.stage(_closed(operation, now, reason, error))


def _closed(operation: Operation, now: float, reason: str, error: Any) -> Operation:
    """``operation`` completed as its run ended (see ``ToolOperations.close_run``)."""
    if operation.phase.rank >= OperationPhase.RAW_SAVED.rank:
        return operation.advance(OperationPhase.COMPLETED, at=now)  # (its status came with the result)
    # A model call has no side effects: one that began and was cut off simply failed.
    return operation.advance(OperationPhase.COMPLETED, at=now, error=error, result_source="run_end",
                             status=OperationStatus.INDETERMINATE if operation.outcome_unknown
                             else OperationStatus.FAILED,
                             attempts=close_last(operation.attempts, now, f"the run ended {reason}", complete=False))


def _replay_plan(planning: Any, operation: Operation) -> bool:
    """Add the decision ``operation`` recorded to ``planning``; False if planning of it is
    unfinished (its remaining hooks must run).

    Raises:
        HookAbort: the planning of that call ended in a hook's abort.
    """
    outcome = planned_phase(operation)
    if outcome is None:
        return False
    call = call_of(operation.effective_input)
    if outcome == "abort":
        raise recorded_abort(operation, "before_tool_call")
    if outcome == "deny":
        reason, hook = deny_reason(operation)
        planning.deny(call, tool_result(operation.raw_result), reason, hook)
    elif outcome == "defer":
        reason, kind, detail = deferral(operation)
        planning.defer(call, reason, kind, detail)
    else:
        planning.allow(call)
    return True


def _denied(operation: Operation, denied: Any, at: float) -> Operation:
    """``operation`` raw_saved with a deny's synthetic result (it never executes)."""
    result = denied.result.model_dump(mode="json")
    error = ArkError(ErrorLayer.SECURITY, ErrorCode.TOOL_DENIED, denied.reason or "denied")
    if operation.phase is OperationPhase.PREPARED:
        operation = operation.advance(OperationPhase.REQUEST_HOOKS, at=at)
    return operation.advance(OperationPhase.RAW_SAVED, at=at, status=OperationStatus.DENIED, raw_result=result,
                             effective_result=result, result_source=denied.hook, error=error.info())


def _already(operation: Operation, resolution: str) -> bool:
    """True if ``operation`` already carries the person's ``resolution``."""
    if resolution == "rerun":
        return not operation.completed and operation.status is None
    expected = OperationStatus.SUCCEEDED if resolution == "done" else OperationStatus.FAILED
    return operation.status is expected and operation.result_source == "person"


def _turn_of(operation: Operation) -> int | None:
    value = operation.raw_input.get("turn") if isinstance(operation.raw_input, dict) else None
    return value if type(value) is int else None


def _raise_cancel(ctx: Any) -> None:
    if ctx.cancel.cancelled:
        raise ctx.cancel.error()


_DEFERRAL = "deferral"
"""The key of a deferred call's result JSON holding its (reason, kind, detail)."""


def _self_deferral(operation: Operation) -> tuple[str, str, dict | None]:
    """The (reason, item kind, detail) a call that deferred itself gave."""
    result = operation.raw_result if isinstance(operation.raw_result, Mapping) else {}
    recorded = result.get(_DEFERRAL) if isinstance(result.get(_DEFERRAL), Mapping) else {}
    reason = recorded.get("reason") or tool_result(result).text.removeprefix("deferred: ") or "deferred"
    detail = recorded.get("detail")
    return reason, recorded.get("kind") or "tool", dict(detail) if isinstance(detail, Mapping) else None


def _deferred(operation: Operation | None) -> bool:
    """True for a completed tool operation whose result is a deferral (``ToolContext.defer``)."""
    if operation is None or not operation.completed:
        return False
    result = operation.effective_result if operation.effective_result is not None else operation.raw_result
    return isinstance(result, Mapping) and result.get("error_code") == CALL_DEFERRED
