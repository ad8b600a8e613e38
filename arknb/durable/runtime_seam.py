"""DurableInvocations: the runtime's invocation seam on a durable store (DESIGN §13).

A durable store hands one to every runtime it serves (``store.invocations_for(scope)``).
It routes the runtime's model calls and tool batches through an
:class:`~arknb.durable.InvocationBus`, so each is an operation committed phase by
phase, and it commits the runtime's state saves and every event (but ``llm.chunk``)
in the same transactions: the outbox.

Commit points per turn (DESIGN §13), and which wait for the disk:

- model call ``executing``, and its ``raw_saved``+``completed`` (one commit when no
  ``after_model_call`` hook is registered: the response phase is then bookkeeping only):
  not synced. A model call has no side effects, so a record a power cut loses costs a
  repeated call, as the recovery table says; a killed process loses nothing, and the
  next synced commit (the tool batch's) carries them to the disk;
- the tool batch's ``executing`` rows: one synced commit before any tool runs;
- each tool's ``raw_saved``+``completed``: synced as the tool returns;
- the state saves after model text and after a tool batch: deferred to the next commit,
  because what they add is already durable in the operations (a restore rebuilds it
  from them); user input, approvals and terminal saves are committed at once, synced.

The phases themselves (hooks, the stream, the tools) are the runtime's own
(``ModelCall`` and ``ToolBatch`` objects it passes in); this module only decides what is
committed when, and what a restore does with what it finds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import weakref
from collections.abc import Mapping
from typing import Any

from arknb.domain import ArkError, ErrorCode, ErrorLayer, ModelRequest, ToolCall, ToolResult
from arknb.domain.invocation import CALL_DEFERRED, CallsInDoubt, HookAbort, InDoubtCall
from arknb.events import AgentEvent, EventTypes
from arknb.state import AgentState, DeniedCall

from ._interceptors import (
    APPROVAL, ModelInterceptor, OperationProgress, ToolInterceptor, call_of, deferral, deny_reason,
    model_outcome, planned_phase, recorded_abort, response_json, tool_answer, tool_result,
)
from ._outbox import kept_in_outbox
from .bus import InvocationBus
from .operation import HookRecord, Operation, OperationPhase, OperationStatus, purpose_key_for_model, \
    purpose_key_for_tool
from .requests import EventRequest
from .store import DEFAULT_LEASE_TTL, Commit, Lease, new_owner_id

__all__ = ["DurableInvocations", "MODEL_CALL", "TOOL_CALL"]

_log = logging.getLogger("arknb.durable")

MODEL_CALL = "model_call"
TOOL_CALL = "tool_call"

# Saves whose content is already durable in committed operations.
_REBUILDABLE_SAVES = frozenset({"after_model_text", "after_tool_batch"})


# The lease is this process's: every runtime of the process on a session shares it (the
# newest one owns the session within the process, DESIGN §7), and it is released when
# the last of them closes. Across processes it keeps one live owner per session.
_holders: dict[tuple[Any, str], int] = {}
_owner: tuple[int, str] | None = None


def process_owner() -> str:
    """This process's owner id (``host:pid:start:token``), made again after a fork."""
    global _owner
    pid = os.getpid()
    if _owner is None or _owner[0] != pid:
        _owner = (pid, new_owner_id())
    return _owner[1]


def _location(store: Any) -> Any:
    location = getattr(store, "location", None)
    return location if location is not None else ("object", id(store))


def _hold(key: tuple[Any, str]) -> None:
    _holders[key] = _holders.get(key, 0) + 1


def _let_go(key: tuple[Any, str]) -> bool:
    """One holder less; True if it was the last one (the lease may be released)."""
    left = _holders.get(key, 0) - 1
    if left > 0:
        _holders[key] = left
        return False
    _holders.pop(key, None)
    return True


async def _renew(ref: weakref.ref, ttl: float) -> None:
    """Renew a seam's lease every third of its life while the seam exists. The task holds
    the seam weakly: a runtime nobody closed and nobody holds is collected, and its
    lease then simply expires (or is freed at once when this process ends)."""
    while True:
        await asyncio.sleep(ttl / 3)
        seam = ref()
        if seam is None or not await seam._renew_once():
            return
        del seam


class DurableInvocations:
    """The seam of one runtime on one durable store (see :mod:`arknb.runtime._invocation`)."""

    def __init__(self, store: Any, scope: Any, *, lease_ttl: float = DEFAULT_LEASE_TTL) -> None:
        self.store = store
        self.scope = scope
        self.session_id: str = scope.session_id
        self.owner = process_owner()
        self._lease_key = (_location(store), self.session_id)
        self.lease: Lease | None = None
        self.lease_ttl = float(lease_ttl)
        self.lost: ArkError | None = None
        self._open_lock = asyncio.Lock()
        self._renewer: asyncio.Task | None = None
        self._events: list[AgentEvent] = []
        self._pending: AgentState | None = None   # a deferred save (see save())
        self._stored: int | None = None           # the stored revision, as far as this seam knows
        # Operations changed but not written yet (hook records, planning decisions): they
        # ride the next commit of any kind (see OperationProgress).
        self._staged: dict[str, Operation] = {}
        self.model_calls: dict[str, Any] = {}
        self.tool_calls: dict[str, tuple[Any, ToolCall]] = {}
        # What handlers and response phases of this process produced, by purpose key, so
        # the next phase takes the objects instead of decoding the JSON just committed.
        self.raw: dict[str, tuple] = {}
        self.outcomes: dict[str, Any] = {}
        self.results: dict[str, ToolResult] = {}
        self.answers: dict[str, Any] = {}
        self._call_turns: dict[tuple[str, str], int] = {}  # (run, call id) -> the turn that used it first
        self.bus = InvocationBus(store, session_id=self.session_id, commit=self._commit_operations,
                                 clock=scope.clock)
        self.bus.register_handler(MODEL_CALL, 1, self._run_model, idempotent=True, sync=False)
        self.bus.register_handler(TOOL_CALL, 1, self._run_tool,
                                  idempotent=lambda request: scope.is_idempotent(call_of(request.payload).name))
        self.bus.set_interceptor(ModelInterceptor(self), event_type=MODEL_CALL)
        self.bus.set_interceptor(ToolInterceptor(self), event_type=TOOL_CALL)
        self.bus.freeze()
        # The outbox listens to every type but llm.chunk, type by type, so that the
        # runtime still skips building chunk events nobody else wants.
        self._unsubscribe = [scope.bus.subscribe(t, self._stage) for t in EventTypes.ALL if kept_in_outbox(t)]

    # -- ownership -------------------------------------------------------------------------

    async def open(self, *, takeover: bool = False) -> None:
        """Take the session's lease (``session_locked`` if a live owner holds it)."""
        async with self._open_lock:
            if self.lease is not None and not takeover:
                return
            first = self.lease is None
            self.lease = await self.store.acquire_lease(self.session_id, self.owner, ttl=self.lease_ttl,
                                                        takeover=takeover)
            if first:
                _hold(self._lease_key)
            self.bus.lease = self.lease
            self.lost = None
            if self._renewer is None:
                self._renewer = asyncio.get_running_loop().create_task(_renew(weakref.ref(self), self.lease_ttl),
                                                                       name="arknb-lease")

    async def _ensure_open(self) -> None:
        if self.lost is not None:
            raise self.lost
        if self.lease is None:
            await self.open()

    async def _renew_once(self) -> bool:
        """Extend the lease; False once it is lost (the renewing stops)."""
        lease = self.lease
        if lease is None:
            return True
        try:
            self.lease = await self.store.renew_lease(lease, ttl=self.lease_ttl)
            self.bus.lease = self.lease
        except ArkError as exc:
            if exc.code == ErrorCode.LEASE_LOST:
                self.lost = exc
                return False
            _log.warning("could not renew the lease of %s: %s", self.session_id, exc)
        return True

    async def aclose(self) -> None:
        """Release the lease (when no other runtime of this process uses it) and stop the
        bus (operations stay as committed)."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        with contextlib.suppress(Exception):
            await self.flush()
        await self.bus.close()
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(BaseException):
                await self._renewer
            self._renewer = None
        lease, self.lease = self.lease, None
        if lease is not None and _let_go(self._lease_key) and self.lost is None:
            with contextlib.suppress(Exception):
                await self.store.release_lease(lease)

    # -- commits ---------------------------------------------------------------------------

    def _stage(self, event: AgentEvent) -> None:
        if event.session_id == self.session_id:
            self._events.append(event)

    def stage(self, operation: Operation) -> None:
        """Keep ``operation`` to be written with the next commit (the bus knows it at once)."""
        self._staged[operation.operation_id] = operation
        self.bus.remember(operation)

    async def flush_staged(self) -> None:
        """Write the staged operations now (not synced: see OperationProgress), if any."""
        if self._staged:
            await self._commit(sync=False)

    async def _commit(self, *, state: AgentState | None = None, operations: tuple[Operation, ...] = (),
                      sync: bool = True, base: int | None = None) -> int | None:
        await self._ensure_open()
        if state is None and self._pending is not None:
            state, base = self._pending, self._stored  # a held-back save rides along
        staged, self._staged = self._staged, {}
        if staged:
            # Staged records ride along; a newer version of the same operation wins.
            for operation in operations:
                staged.pop(operation.operation_id, None)
            operations = (*staged.values(), *operations)
        operations = tuple(self._redacted(op) for op in operations)
        events, self._events = tuple(self._events), []
        try:
            revision = await self.store.commit(Commit(session_id=self.session_id, state=state, operations=operations,
                                                      events=events, lease=self.lease, sync=sync, base_revision=base))
        except BaseException as exc:
            self._events[:0] = events  # not written: they go with the next commit
            for operation in staged.values():
                self._staged.setdefault(operation.operation_id, operation)
            if isinstance(exc, ArkError) and exc.code == ErrorCode.LEASE_LOST:
                self.lost = exc
                self.scope.bus.publish(AgentEvent(EventTypes.RUNTIME_DETACHED, self.session_id, "", 0,
                                                  self.scope.clock(), {"reason": "lease_lost"}))
            if isinstance(exc, ArkError) and exc.code == ErrorCode.STATE_CONFLICT:
                self._pending, self._stored = None, None
            raise
        if state is not None:
            self._stored, self._pending = revision, None
        return revision

    def _redacted(self, operation: Operation) -> Operation:
        """``operation`` without the secrets the runtime knows (DESIGN §9: a key never
        reaches a store): its inputs, results, error and hook records (a reason, an injected
        message) hold what tools, models and hooks returned."""
        redact, where = self.scope.redact, f"operation {operation.purpose_key}"
        changes = {}
        for field in ("raw_input", "effective_input", "raw_result", "effective_result", "error", "hook_progress"):
            value = getattr(operation, field)
            if value is not None:
                clean = redact(value, where)
                if clean is not value:
                    changes[field] = clean
        return operation.copy_with(changes) if changes else operation

    async def _commit_operations(self, operations: tuple[Operation, ...], sync: bool) -> None:
        await self._commit(operations=operations, sync=sync)

    async def save(self, state: AgentState, *, reason: str, mandatory: bool) -> int | None:
        """Save the runtime's state. The saves after model text and after a tool batch add
        only what committed operations already hold, so they are held back and ride the
        next commit (the next operation's, or the next save's), which saves a transaction
        each. Under the session's lease this seam is the only writer: it returns the
        revision the save will have (``state.revision + 1``) and commits it with the base
        revision it last stored."""
        stored, pending = self._stored, self._pending
        expected = stored if pending is None else pending.revision + 1
        if stored is None or state.revision != expected:
            return await self._commit(state=state, sync=True)  # the store's compare-and-swap decides
        if not mandatory and reason in _REBUILDABLE_SAVES:
            self._pending = state
            return state.revision + 1
        return await self._commit(state=state, sync=True, base=stored)

    async def mark_not_resumable(self) -> None:
        if self.lost is not None:
            return  # the session is another owner's now: never touch its rows
        await self.store.mark_not_resumable(self.session_id)

    async def flush(self) -> None:
        """Commit the events and the deferred save still pending (after a terminal event)."""
        if (not self._events and self._pending is None and not self._staged) or self.lost is not None:
            return
        try:
            await self._commit(sync=True)
        except ArkError as exc:  # the run's result already says what failed; events wait for the next commit
            _log.warning("could not commit the outbox of %s: %s", self.session_id, exc)

    # -- model calls -------------------------------------------------------------------------

    def _run_started(self, run_id: str, continued: bool) -> None:
        if run_id != self.bus.run_id:
            self.bus.run_id = run_id
            if not continued:
                # A run id this process just made: none of its purpose keys exists yet.
                self.bus.assume_new(f"{run_id}:")

    async def model_call(self, call: Any) -> Any:
        purpose = purpose_key_for_model(call.run_id, call.turn, call.attempt)
        self._run_started(call.run_id, call.ctx.continued)
        call.ran_after = False
        self.model_calls[purpose] = call
        try:
            response = await self.bus.request(EventRequest(MODEL_CALL, 1, {"turn": call.turn, "attempt": call.attempt},
                                                           purpose))
        finally:
            self.model_calls.pop(purpose, None)
            self.raw.pop(purpose, None)
        if response.status != OperationStatus.SUCCEEDED:
            self.outcomes.pop(purpose, None)
            _raise_cancel(call.ctx)
            if response.status == OperationStatus.BLOCKED:
                # A hook aborted the run in this call (now, or in a process before this one:
                # the abort recorded stands, its hook is not called again).
                raise recorded_abort(await self._operation(response.operation_id), "before_model_call")
            raise _error_of(response)
        if call.ran_after:  # this process ran the response phase: its outcome, not a decoded copy
            return self.outcomes.pop(purpose)
        result = response.result  # committed by a process before this one: nothing runs again
        return call.reuse(model_outcome(result), result.get("raw_text", ""), result.get("raw_reasoning", ""))

    async def _run_model(self, request: EventRequest) -> dict:
        call = self.model_calls[request.purpose_key]
        payload = request.payload or {}
        if "responded" in payload:  # a before_model_call hook answered: no model request leaves
            return payload["responded"]
        model_request = ModelRequest.model_validate(payload["request"]) if "request" in payload else None
        task = asyncio.current_task()
        remove = call.ctx.cancel.on_cancel(task.cancel) if task is not None else (lambda: None)
        try:
            response, raw_text, raw_reasoning = await call.execute(model_request)
        finally:
            remove()
        self.raw[request.purpose_key] = (response, raw_text, raw_reasoning)  # the response phase reads these
        return response_json(response, raw_text, raw_reasoning)

    async def _operation(self, operation_id: str) -> Operation:
        operation = self.bus._known_ids.get(operation_id) or await self.store.get_operation(operation_id)
        if operation is None:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.OPERATION_NOT_FOUND,
                           f"operation {operation_id} of session {self.session_id!r} is missing from {self.store!r}")
        return operation

    async def _find(self, purpose: str, continued: bool) -> Operation | None:
        """The operation of ``purpose`` this process knows, or (in a continued run) the store's."""
        known = self.bus.known(purpose)
        if known is None and continued:
            known = await self.store.find_operation(self.session_id, purpose)
        return known

    # -- tool calls ------------------------------------------------------------------------------

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
            if operation is None:
                operation = self.bus.new_operation(EventRequest(
                    TOOL_CALL, 1, {"call": call.model_dump(mode="json"), "turn": planning.turn}, purpose))
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
            requests.append(EventRequest(TOOL_CALL, 1, {"call": original.model_dump(mode="json"), "turn": batch.turn},
                                         purpose))
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
        while _deferred(await self.store.find_operation(self.session_id, current)):
            attempt += 1
            current = f"{purpose}.a{attempt}"
        return current

    async def _run_tool(self, request: EventRequest) -> dict:
        batch, call = self.tool_calls[request.purpose_key]
        payload = request.payload["call"]
        effective = call if payload == call.model_dump(mode="json") else ToolCall.model_validate(payload)
        result = await batch.execute_one(effective, idempotency_key=request.idempotency_key)
        self.results[request.purpose_key] = result
        return result.model_dump(mode="json")

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
                started = bool(operation.attempts) and operation.attempts[-1].ended_at is None
                if operation.in_doubt or (started and not self.scope.is_idempotent(call.name)):
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

    async def record_in_doubt_decision(self, item: Any, resolution: str, text: str | None) -> None:
        operation_id = item.approval_id
        if not operation_id.startswith("op_"):
            return
        operation = await self.store.get_operation(operation_id)
        if operation is not None and not operation.in_doubt and _already(operation, resolution):
            return  # recorded before a state save that failed: the decision is being retried
        if resolution == "rerun":
            await self.bus.rerun(operation_id, start=False)
        elif resolution == "done":
            # The person's outcome stands for the raw result; after_tool_call runs on it
            # when the run continues, like on any other answer.
            await self.bus.settle(operation_id, status=OperationStatus.SUCCEEDED,
                                  result=ToolResult.from_text(text or "").model_dump(mode="json"), respond=True)
        else:
            error = ArkError(ErrorLayer.TOOL, ErrorCode.TOOL_FAILED, text or "marked failed by a person")
            await self.bus.settle(operation_id, status=OperationStatus.FAILED, error=error.info(), respond=True,
                                  result=ToolResult.from_text(text or "failed", is_error=True,
                                                              error_code=ErrorCode.TOOL_FAILED).model_dump(mode="json"))


    async def known_results(self, run_id: str, calls: list[ToolCall], turn: int) -> dict[str, ToolResult]:
        """What the operations tell of unanswered calls whose run is being cancelled: a
        result committed (the effective one, or the raw one whose response hooks did not
        finish), or that a call began and may have run."""
        known: dict[str, ToolResult] = {}
        for call in calls:
            operation = await self._find(await self._tool_purpose(run_id, call.id, turn, True), True)
            if operation is None or operation.phase.rank < OperationPhase.EXECUTING.rank:
                continue
            if operation.completed:
                known[call.id] = tool_answer(operation, call)[0]
            elif operation.phase.rank >= OperationPhase.RAW_SAVED.rank:
                known[call.id] = tool_result(operation.effective_result, operation.error)
            elif operation.attempts:
                known[call.id] = ToolResult.from_text(
                    "cancelled while its outcome was unknown: the process ended while this call ran",
                    is_error=True, error_code=ErrorCode.CANCELLED.value)
        return known

    async def abandon_in_doubt(self, batch: Any) -> None:
        """A cancelled run's in-doubt calls: completed as indeterminate (nobody decides them now)."""
        error = ArkError(ErrorLayer.CANCELLED, ErrorCode.CANCELLED, "the run was cancelled while this call was in doubt")
        for item in batch.items:
            if item.approval_id.startswith("op_"):
                with contextlib.suppress(ArkError):  # decided meanwhile, or unknown: nothing to abandon
                    await self.bus.settle(item.approval_id, status=OperationStatus.INDETERMINATE, error=error.info(),
                                          source="cancel")


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


def _error_of(response: Any) -> ArkError:
    if response.error is not None:
        return response.error.to_error()
    return ArkError(ErrorLayer.RUNTIME, ErrorCode.INTERNAL_ERROR,
                    f"operation {response.operation_id} ended {response.status} without an error")


def _raise_cancel(ctx: Any) -> None:
    if ctx.cancel.cancelled:
        raise ctx.cancel.error()


def _deferred(operation: Operation | None) -> bool:
    """True for a completed tool operation whose result is a deferral (``ToolContext.defer``)."""
    if operation is None or not operation.completed:
        return False
    result = operation.effective_result if operation.effective_result is not None else operation.raw_result
    return isinstance(result, Mapping) and result.get("error_code") == CALL_DEFERRED
