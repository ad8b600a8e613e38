"""The invocation pipeline: the phases one operation goes through (seed 004 §1.1, §2).

:class:`InvocationPipeline` is the part of :class:`~arknb.durable.InvocationBus` that
moves an operation from ``prepared`` to ``completed``, committing each step before the
next, and continues an operation a previous process left unfinished (DESIGN §13's
recovery table). The bus is its facade: assembly, requests, waiting, in-doubt resolution.
"""

from __future__ import annotations

import asyncio
import contextvars
import secrets
from dataclasses import dataclass
from typing import Any, Callable

from arknb.domain import ArkError, ErrorCode, ErrorLayer, invalid_argument

from ._waiters import WaitRegistry
from .operation import MODEL_CALL, Attempt, HookRecord, Operation, OperationPhase, OperationStatus
from .requests import PROCEED, EventRequest, Interceptor, PendingOperationRef, RequestHandler
from .store import Commit, Lease, OperationStore

__all__ = ["RECOVERY_LIMIT", "Handler", "InvocationPipeline", "OperationCommitter", "attempt_open", "close_last",
           "crash_looping", "current_operation", "open_attempt", "ref_of"]

OperationCommitter = Callable[[tuple[Operation, ...], bool], Any]
"""``await commit(operations, sync)``: how the bus writes; the default commits them alone.
The runtime passes one that adds the session's pending events (and state) to the transaction."""

current_operation: contextvars.ContextVar[str | None] = contextvars.ContextVar("arknb_operation", default=None)


@dataclass(frozen=True, slots=True)
class Handler:
    handler: RequestHandler
    idempotent: bool | Callable[[EventRequest], bool]
    sync: bool

    def may_run_again(self, request: EventRequest) -> bool:
        flag = self.idempotent
        return bool(flag(request)) if callable(flag) else bool(flag)



class InvocationPipeline:
    """The phases of operations, for one session's bus (see the module docstring)."""

    store: OperationStore
    session_id: str
    run_id: str
    lease: Lease | None
    _commit: OperationCommitter | None
    _clock: Callable[[], float]
    _handlers: dict[tuple[str, int], Handler]
    _interceptors: dict[str | None, Interceptor]
    _frozen: bool
    _closed: bool
    _waiters: WaitRegistry
    _running: dict[str, asyncio.Task]
    _failures: dict[str, BaseException]
    _known: dict[str, Operation]
    _known_ids: dict[str, Operation]
    _new_prefixes: tuple[str, ...]

    # -- the pipeline --------------------------------------------------------------------------

    async def _start(self, requests: list[EventRequest], *, concurrency: int | None = None
                     ) -> list[PendingOperationRef]:
        self._check_open()
        self._frozen = True  # the first request fixes the assembly
        refs: list[PendingOperationRef] = []
        # In the requests' order: ("run", op) to execute (or completed by its request
        # phase), ("recover", op) an unfinished operation to continue, None nothing to do.
        steps: list[tuple[str, Operation] | None] = []
        prepared: list[Operation] = []
        for request in requests:
            if not isinstance(request, EventRequest):
                raise invalid_argument(f"expected an EventRequest, got {type(request).__name__}")
            existing = self._known.get(request.purpose_key)
            if existing is None and not request.purpose_key.startswith(self._new_prefixes):
                existing = await self.store.find_operation(self.session_id, request.purpose_key)
            if existing is None:
                operation = await self._request_phase(self._new_operation(request), request)
            elif existing.completed or existing.operation_id in self._running:
                refs.append(ref_of(existing))
                steps.append(None)
                continue
            elif existing.phase in (OperationPhase.PREPARED, OperationPhase.REQUEST_HOOKS):
                # Its request phase began (hooks recorded so far): it goes on from there,
                # and its executing record joins the others' transaction.
                operation = await self._request_phase(existing, self._request_of(existing))
            else:
                refs.append(ref_of(existing))
                steps.append(("recover", existing))
                continue
            prepared.append(operation)
            refs.append(ref_of(operation))
            steps.append(("run", operation))
        if concurrency is not None:
            # With a limit a handler may wait for its turn: its attempt begins (and is
            # committed) when it gets one (_execute), so a process killed meanwhile leaves
            # it not started, run after a restore, never put to a person as in doubt.
            waiting = {op.operation_id: op.copy_with({"attempts": op.attempts[:-1]}) for op in prepared
                       if op.phase is OperationPhase.EXECUTING and attempt_open(op.attempts)}
            prepared = [waiting.get(op.operation_id, op) for op in prepared]
            steps = [step if step is None else (step[0], waiting.get(step[1].operation_id, step[1]))
                     for step in steps]
        if prepared:
            # One transaction for every request phase's outcome: a batch's executing
            # records are all committed before any of its handlers runs (DESIGN §13).
            await self._write(tuple(prepared), any(self._sync_for(op) for op in prepared))
        gate = _Gate(concurrency)
        previous: asyncio.Future | None = None
        # Response phases are chained in the requests' order, whatever order they finish in.
        for step in steps:
            if step is None:
                continue
            kind, operation = step
            if kind == "recover":
                previous = await self._recover(operation, previous, gate)
            elif operation.completed:
                self._waiters.signal(operation.operation_id)
            else:
                previous = self._spawn(operation, previous, gate)
        return refs

    def _new_operation(self, request: EventRequest) -> Operation:
        now = self._clock()
        operation_id = f"op_{secrets.token_hex(10)}"
        return Operation(operation_id=operation_id, session_id=self.session_id, run_id=self.run_id,
                         kind=request.event_type, schema_version=request.schema_version,
                         purpose_key=request.purpose_key, request_event_id=request.event_id,
                         raw_input=request.payload, effective_input=request.payload,
                         idempotency_key=f"{self.session_id}:{request.purpose_key}", created_at=now, updated_at=now)

    async def _request_phase(self, operation: Operation, request: EventRequest) -> Operation:
        """Resolve the handler and run the request phase; the result is not committed yet."""
        now = self._clock()
        missing = self._resolve(operation)
        if missing is not None:
            return operation.advance(OperationPhase.COMPLETED, at=now, status=OperationStatus.FAILED,
                                     error=missing.info())
        interceptor = self._interceptor(operation.kind)
        decision = PROCEED
        if interceptor is not None:
            # (Continuing a request phase a process left: the interceptor skips the steps
            # it finds recorded in hook_progress.)
            operation = operation.advance(OperationPhase.REQUEST_HOOKS, at=now)
            token = current_operation.set(operation.operation_id)
            try:
                decision = await interceptor.before(self._bound(request, operation), operation)
            finally:
                current_operation.reset(token)
        now = self._clock()
        hooks = operation.with_hooks(*_stamped(decision.records, "request"))
        if decision.status is not None:
            # A deny, a block or a hook's own answer: the handler never runs.
            return operation.advance(OperationPhase.COMPLETED, at=now, status=OperationStatus(decision.status),
                                     hook_progress=hooks, effective_result=decision.result,
                                     result_source=decision.source, error=decision.error)
        changes: dict[str, Any] = {"hook_progress": hooks}
        if decision.payload is not None:
            changes.update(effective_input=decision.payload, input_source=decision.source)
        return operation.advance(OperationPhase.EXECUTING, at=now, attempts=open_attempt(operation.attempts, now),
                                 **changes)

    def _spawn(self, operation: Operation, previous: asyncio.Future | None,
               gate: _Gate | None = None) -> asyncio.Future:
        """Run the handler and response phase of an ``executing`` operation as a task."""
        task = asyncio.get_running_loop().create_task(
            self._execute(operation, previous, gate or _Gate(None)),
            name=f"arknb-op-{operation.purpose_key}")
        self._running[operation.operation_id] = task
        task.add_done_callback(lambda t, op_id=operation.operation_id: self._settled(op_id, t))
        return task

    def _settled(self, operation_id: str, task: asyncio.Task) -> None:
        if self._running.get(operation_id) is task:
            del self._running[operation_id]
        if not task.cancelled() and task.exception() is not None:
            self._failures[operation_id] = task.exception()
        self._waiters.signal(operation_id)

    async def _execute(self, operation: Operation, previous: asyncio.Future | None, gate: _Gate) -> None:
        spec = self._handlers[(operation.kind, operation.schema_version)]
        request = self._bound(self._request_of(operation), operation)
        token = current_operation.set(operation.operation_id)
        try:
            async with gate:
                if not attempt_open(operation.attempts):
                    # Its turn under a concurrency limit: the attempt is on record before it runs.
                    now = self._clock()
                    operation = operation.copy_with({"updated_at": now,
                                                     "attempts": open_attempt(operation.attempts, now)})
                    await self._write((operation,), self._sync_for(operation))
                try:
                    raw = await spec.handler(request)
                    status, error = OperationStatus.SUCCEEDED, None
                except asyncio.CancelledError:
                    await self._cancelled(operation)
                    raise
                except ArkError as exc:
                    raw, status, error = None, OperationStatus.FAILED, exc.info()
                except Exception as exc:  # the handler's failure is the operation's result
                    raw, status, error = None, OperationStatus.FAILED, ArkError(
                        ErrorLayer.RUNTIME, ErrorCode.INTERNAL_ERROR,
                        f"handler of {operation.kind!r} raised {type(exc).__name__}: {exc}").info()
        finally:
            current_operation.reset(token)
        now = self._clock()
        operation = operation.advance(OperationPhase.RAW_SAVED, at=now, raw_result=raw, status=status, error=error,
                                      effective_result=raw, attempts=close_last(operation.attempts, now,
                                                                                 "ok" if error is None else "error"))
        await self._respond(operation, previous)

    async def _respond(self, operation: Operation, previous: asyncio.Future | None) -> None:
        """The response phase after a saved raw result: one at a time, in request order."""
        interceptor = self._interceptor(operation.kind)
        if interceptor is None:
            # Nothing can change the raw result: raw_saved and completed are one commit.
            done = operation.advance(OperationPhase.COMPLETED, at=self._clock())
            await self._write((done,), self._sync_for(done))
            return
        # A trivial response phase (no hook can change the result) is run at once and
        # committed with the raw result: one commit instead of two. Not while an earlier
        # call's response phase is still to come: this call would wait for it with its
        # result in memory only, so raw_saved is committed first. A finished sibling
        # survives a crash of the batch (DESIGN §13) whichever call of it finishes first.
        saved = not _trivial(interceptor, operation) or (previous is not None and not previous.done())
        if saved:
            await self._write((operation,), self._sync_for(operation))
        if previous is not None:
            await asyncio.wait({previous})
            if not previous.cancelled() and previous.exception() is not None:
                # An earlier response phase failed (a commit, a hook's exception): this one
                # stays raw_saved for a restore, and its waiter learns why.
                if not saved:
                    await self._write((operation,), self._sync_for(operation))
                raise previous.exception()
        await self._finish_response(operation, interceptor)

    async def _finish_response(self, operation: Operation, interceptor: Interceptor) -> None:
        operation = operation.advance(OperationPhase.RESPONSE_HOOKS, at=self._clock())
        token = current_operation.set(operation.operation_id)
        try:
            decision = await interceptor.after(self._request_of(operation), operation.raw_result, operation)
        finally:
            current_operation.reset(token)
        changes: dict[str, Any] = {"hook_progress": operation.with_hooks(*_stamped(decision.records, "response"))}
        if decision.result is not None:
            changes.update(effective_result=decision.result, result_source=decision.source)
        if decision.status is not None:
            changes.update(status=OperationStatus(decision.status), error=decision.error or operation.error)
        done = operation.advance(OperationPhase.COMPLETED, at=self._clock(), **changes)
        await self._write((done,), self._sync_for(done))

    async def _cancelled(self, operation: Operation) -> None:
        if self._closed:
            return  # the bus is going away, not the call: the record stays for a restore
        now = self._clock()
        error = ArkError(ErrorLayer.CANCELLED, ErrorCode.CANCELLED,
                         f"{operation.kind} {operation.purpose_key} was cancelled while it ran")
        # Its handler began: a tool's effect may have happened (a sync tool's thread even
        # runs on), so nobody can tell it failed; a model call has no effect to tell of.
        status = OperationStatus.INDETERMINATE if operation.outcome_unknown else OperationStatus.FAILED
        done = operation.advance(OperationPhase.COMPLETED, at=now, status=status, error=error.info(),
                                 attempts=close_last(operation.attempts, now, "cancelled"))
        try:
            await asyncio.shield(self._write((done,), self._sync_for(done)))
        except Exception:  # the record stays executing: a restore treats it as interrupted
            pass

    async def _recover(self, operation: Operation, previous: asyncio.Future | None,
                       gate: _Gate) -> asyncio.Future | None:
        """Continue an unfinished operation a previous process left in ``executing`` or a
        later phase (DESIGN §13's table; an unfinished request phase goes on in ``_start``)."""
        phase = operation.phase
        if phase is OperationPhase.EXECUTING:
            if operation.status is OperationStatus.INDETERMINATE:
                return previous  # already in doubt: a person decides
            spec = self._handlers.get((operation.kind, operation.schema_version))
            now = self._clock()
            started = attempt_open(operation.attempts)
            if spec is not None and (not started or (spec.may_run_again(self._request_of(operation))
                                                     and not crash_looping(operation))):
                # No attempt was under way (a person approved a rerun), or the handler is
                # idempotent (or side-effect free): a new attempt with the same key; an
                # interrupted one stays on record, marked incomplete.
                operation = operation.copy_with({
                    "updated_at": now,
                    "attempts": open_attempt(close_last(operation.attempts, now, "interrupted", complete=False), now)})
                await self._write((operation,), self._sync_for(operation))
                return self._spawn(operation, previous, gate)
            operation = operation.copy_with({"status": OperationStatus.INDETERMINATE, "updated_at": now})
            await self._write((operation,), self._sync_for(operation))
            self._waiters.signal(operation.operation_id)
            return previous
        # raw_saved / response_hooks: the handler is never run again.
        task = asyncio.get_running_loop().create_task(self._resume_response(operation, previous))
        self._running[operation.operation_id] = task
        task.add_done_callback(lambda t, op_id=operation.operation_id: self._settled(op_id, t))
        return task

    async def _resume_response(self, operation: Operation, previous: asyncio.Future | None) -> None:
        if previous is not None:
            await asyncio.wait({previous})
            if not previous.cancelled() and previous.exception() is not None:
                raise previous.exception()
        interceptor = self._interceptor(operation.kind)
        if interceptor is None:
            done = operation.advance(OperationPhase.COMPLETED, at=self._clock())
            await self._write((done,), self._sync_for(done))
            return
        # The interceptor runs only the response steps not yet recorded in hook_progress.
        await self._finish_response(operation, interceptor)

    # -- helpers -------------------------------------------------------------------------------

    def _resolve(self, operation: Operation) -> ArkError | None:
        if (operation.kind, operation.schema_version) in self._handlers:
            return None
        versions = sorted(v for (t, v) in self._handlers if t == operation.kind)
        if versions:
            return ArkError(ErrorLayer.CONFIG, ErrorCode.SCHEMA_UNSUPPORTED,
                            f"no handler for {operation.kind!r} schema version {operation.schema_version}; "
                            f"registered versions: {', '.join(map(str, versions))}")
        return ArkError(ErrorLayer.CONFIG, ErrorCode.REQUEST_HANDLER_MISSING,
                        f"no request handler registered for {operation.kind!r}")

    def _interceptor(self, kind: str) -> Interceptor | None:
        found = self._interceptors.get(kind)
        return found if found is not None else self._interceptors.get(None)

    def _sync_for(self, operation: Operation) -> bool:
        spec = self._handlers.get((operation.kind, operation.schema_version))
        return spec is None or spec.sync

    def _request_of(self, operation: Operation) -> EventRequest:
        return EventRequest(operation.kind, operation.schema_version, operation.effective_input,
                            operation.purpose_key, event_id=operation.request_event_id,
                            operation_id=operation.operation_id, idempotency_key=operation.idempotency_key)

    @staticmethod
    def _bound(request: EventRequest, operation: Operation) -> EventRequest:
        if request.operation_id == operation.operation_id:
            return request
        return EventRequest(request.event_type, request.schema_version, request.payload, request.purpose_key,
                            event_id=request.event_id, cause_id=request.cause_id,
                            operation_id=operation.operation_id, idempotency_key=operation.idempotency_key)

    async def _write(self, operations: tuple[Operation, ...], sync: bool) -> None:
        if self._commit is not None:
            await self._commit(operations, sync)
        else:
            await self.store.commit(Commit(session_id=self.session_id, operations=operations, lease=self.lease,
                                           sync=sync))
        for operation in operations:
            self._known[operation.purpose_key] = operation
            self._known_ids[operation.operation_id] = operation

    async def _read(self, ref: PendingOperationRef) -> Operation:
        operation = await self.store.get_operation(ref.operation_id)
        if operation is None:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.OPERATION_NOT_FOUND,
                           f"no operation {ref.operation_id} ({ref.purpose_key}) in {self.store!r}")
        return operation

    async def _in_doubt(self, operation_id: str) -> Operation:
        self._check_open()
        operation = await self.store.get_operation(operation_id)
        if operation is None or operation.session_id != self.session_id:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.OPERATION_NOT_FOUND,
                           f"no operation {operation_id!r} in session {self.session_id!r}")
        if not operation.in_doubt:
            state = f"{operation.phase.value}" + (f"/{operation.status.value}" if operation.status else "")
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.OPERATION_NOT_IN_DOUBT,
                           f"operation {operation_id} ({operation.purpose_key}) is {state}, not in doubt: "
                           "there is nothing for a person to decide")
        return operation

    def _check_open(self) -> None:
        if self._closed:
            raise ArkError(ErrorLayer.RUNTIME, ErrorCode.BUS_CLOSED,
                           f"the invocation bus of session {self.session_id!r} is closed; its operations stay "
                           "as committed and a restored runtime continues them")


class _Gate:
    """At most ``limit`` handlers of one ``request_many`` run at once (None: no limit)."""

    __slots__ = ("_semaphore",)

    def __init__(self, limit: int | None) -> None:
        self._semaphore = asyncio.Semaphore(limit) if limit is not None else None

    async def __aenter__(self) -> None:
        if self._semaphore is not None:
            await self._semaphore.acquire()

    async def __aexit__(self, *exc: object) -> None:
        if self._semaphore is not None:
            self._semaphore.release()


def ref_of(operation: Operation) -> PendingOperationRef:
    return PendingOperationRef(operation.operation_id, operation.request_event_id, operation.session_id,
                               operation.purpose_key)


def attempt_open(attempts: tuple[Attempt, ...]) -> bool:
    """True if the last of ``attempts`` began and never ended (its handler was running)."""
    return bool(attempts) and attempts[-1].ended_at is None


def open_attempt(attempts: tuple[Attempt, ...], at: float) -> tuple[Attempt, ...]:
    """``attempts`` with a new one begun at ``at``."""
    return attempts + (Attempt(number=len(attempts) + 1, started_at=at),)


RECOVERY_LIMIT = 3
"""How many attempts in a row a crash may cut short before an idempotent handler is not
run again by itself: the next restore puts the call in doubt, for a person (a tool that
takes the process down with it would otherwise be run, and kill it, on every restore).
A model call has no side effects and no person to ask: it is always attempted again."""


def crash_looping(operation: Operation) -> bool:
    """True if the last :data:`RECOVERY_LIMIT` attempts of ``operation`` (the one under way
    included) were all cut short by a crash, with no person's rerun in between."""
    if operation.kind == MODEL_CALL:
        return False
    cut_short = 0
    for attempt in reversed(operation.attempts):
        if attempt.ended_at is not None and attempt.outcome != "interrupted":
            break
        cut_short += 1
    return cut_short >= RECOVERY_LIMIT


def close_last(attempts: tuple[Attempt, ...], at: float, outcome: str, *, complete: bool = True
                ) -> tuple[Attempt, ...]:
    """``attempts`` with the last one ended (if it is still open)."""
    if not attempt_open(attempts):
        return attempts
    return attempts[:-1] + (attempts[-1].ended(at, outcome, complete=complete),)



def _stamped(records: tuple[HookRecord, ...], phase: str) -> tuple[HookRecord, ...]:
    return tuple(r if r.phase == phase else r.model_copy(update={"phase": phase}) for r in records)


def _trivial(interceptor: Interceptor, operation: Operation) -> bool:
    """True if the interceptor says its response phase cannot change this operation's result."""
    check = getattr(interceptor, "response_is_trivial", None)
    return bool(check(operation)) if callable(check) else False
