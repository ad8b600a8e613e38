"""DurableInvocations: the runtime's invocation seam on a durable store (DESIGN §13).

A durable store hands one to every runtime it serves (``store.invocations_for(scope)``).
It routes the runtime's model calls and tool batches through an
:class:`~arknb.durable.InvocationBus`, so each is an operation committed phase by
phase, and it commits the runtime's state saves and every event (but ``llm.chunk``)
in the same transactions: the outbox.

Commit points per turn (DESIGN §13), and which wait for the disk:

- model call ``executing``: not synced. A model call has no side effects, so a record a
  power cut loses costs a repeated call, as the recovery table says; a killed process
  loses nothing, and the next synced commit (the tool batch's) carries it to the disk;
- its ``raw_saved``+``completed`` (one record when no ``after_model_call`` hook is
  registered: the response phase is then bookkeeping only): staged, so it rides the
  commit of what the response starts (the tool batch's ``executing`` records, an
  approval's pending batch, the terminal save), and it is flushed before any hook runs;
- the tool batch's ``executing`` rows: one synced commit before any tool runs;
- each tool's ``raw_saved``+``completed``: synced as the tool returns (also a call's
  deferral, ``ToolContext.defer``);
- a pending batch's save carries, for each call that deferred itself, its next attempt's
  operation (``prepared``): a restore that finds a deferral without one knows the
  process ended before the pause was saved, and asks the person (an idempotent tool
  runs again instead);
- the state saves after model text and after a tool batch: deferred to the next commit,
  because what they add is already durable in the operations (a restore rebuilds it
  from them); user input, approvals and terminal saves are committed at once, synced;
- a person's decision on an in-doubt call: its operation record (rerun chosen, or the
  person's outcome) commits in the transaction of the state save that records the
  decision, so a restore finds both or neither;
- a run that ends for good before completing (cancelled, failed, aborted) completes the
  operations it left open (``close_run``), with the terminal save: none of a finished
  run stays looking in flight.

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
from typing import Any

from arknb.domain import ArkError, ErrorCode, ErrorLayer, ModelRequest, ToolCall, ToolResult
from arknb.events import AgentEvent, EventTypes
from arknb.state import AgentState

from ._interceptors import ModelInterceptor, ToolInterceptor, call_of, model_outcome, recorded_abort, response_json
from ._outbox import kept_in_outbox
from ._tool_operations import MODEL_CALL, TOOL_CALL, ToolOperations, _raise_cancel
from .bus import InvocationBus
from .operation import Operation, OperationPhase, OperationStatus, purpose_key_for_model
from .requests import EventRequest
from .store import DEFAULT_LEASE_TTL, Commit, Lease, new_owner_id

__all__ = ["DurableInvocations", "MODEL_CALL", "TOOL_CALL"]

_log = logging.getLogger("arknb.durable")


# The fields of an operation that hold what tools, models, hooks and people returned.
_REDACTED_FIELDS = ("raw_input", "effective_input", "raw_result", "effective_result", "error", "hook_progress")

# Seconds an announced event waits for a commit of the run to carry it to the outbox (and
# so to its listeners) before it is committed on its own.
_FLUSH_AFTER = 0.005

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


class DurableInvocations(ToolOperations):
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
        # Per unfinished operation, the values ``_redacted`` checked (and what it made of
        # them), with the number of secrets known then.
        self._checked: dict[str, tuple[int, dict[str, tuple[Any, Any]]]] = {}
        self.model_calls: dict[str, Any] = {}
        self.tool_calls: dict[str, tuple[Any, ToolCall]] = {}
        # What handlers and response phases of this process produced, by purpose key, so
        # the next phase takes the objects instead of decoding the JSON just committed.
        self.raw: dict[str, tuple] = {}
        self.outcomes: dict[str, Any] = {}
        self.results: dict[str, ToolResult] = {}
        self.answers: dict[str, Any] = {}
        self._call_turns: dict[tuple[str, str], int] = {}  # (run, call id) -> the turn that used it first
        # Purpose key of a call's next attempt -> the deferred attempt before it (_tool_purpose).
        self._deferred_before: dict[str, Operation] = {}
        self.bus = InvocationBus(store, session_id=self.session_id, commit=self._commit_operations,
                                 clock=scope.clock)
        self.bus.register_handler(MODEL_CALL, 1, self._run_model, idempotent=True, sync=False)
        self.bus.register_handler(TOOL_CALL, 1, self._run_tool,
                                  idempotent=lambda request: scope.is_idempotent(call_of(request.payload).name))
        self.bus.set_interceptor(ModelInterceptor(self), event_type=MODEL_CALL)
        self.bus.set_interceptor(ToolInterceptor(self), event_type=TOOL_CALL)
        self.bus.freeze()
        # The outbox is the bus's journal for every type but llm.chunk (so the runtime still
        # skips building chunk events nobody else wants): it sees each event first, and
        # listeners get it only after the commit that holds it (issue 26: after a SIGKILL,
        # every event a listener received is in the outbox).
        self._in_flight = 0            # commits under way
        self._flush_soon = False       # a commit of waiting events is scheduled
        self._unsubscribe = [scope.bus.add_journal(self._stage, [t for t in EventTypes.ALL if kept_in_outbox(t)])]

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
        with contextlib.suppress(Exception):
            await self.flush()  # first: what the journal holds is committed, then delivered
        for unsubscribe in self._unsubscribe:
            unsubscribe()  # (delivers anything still held)
        self._unsubscribe = []
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

    def _stage(self, event: AgentEvent) -> bool:
        """The journal: keep ``event`` for the next commit; True holds it from listeners
        until that commit is made (see :meth:`_commit`)."""
        if event.session_id != self.session_id or self.lost is not None:
            return False
        self._events.append(event)
        if not self._flush_soon:
            # Most events ride a commit the run makes within moments; one announced when
            # none follows (an approval's decision, a tool's long run after its tool.before)
            # is committed on its own a few milliseconds later.
            self._flush_soon = True
            with contextlib.suppress(RuntimeError):  # no running loop: the next commit takes it
                asyncio.get_running_loop().call_later(_FLUSH_AFTER, self._flush_if_idle)
        return True

    def _flush_if_idle(self) -> None:
        self._flush_soon = False
        if self._events and not self._in_flight and self.lost is None and self._unsubscribe:
            asyncio.get_running_loop().create_task(self._flush_events(), name="arknb-outbox")

    async def _flush_events(self) -> None:
        if not self._events or self._in_flight:
            return  # a commit began meanwhile: it takes them
        try:
            await self._commit(sync=False, carry_save=False)
        except Exception as exc:  # noqa: BLE001 - the store refuses: listeners must not wait forever
            _log.warning("could not commit the outbox of %s, its events are delivered uncommitted: %s",
                         self.session_id, exc)
            self.scope.bus.release_all()

    def stage(self, operation: Operation) -> None:
        """Keep ``operation`` to be written with the next commit (the bus knows it at once)."""
        self._staged[operation.operation_id] = operation
        self.bus.remember(operation)

    async def flush_staged(self) -> None:
        """Write the staged operations now (not synced), if any: called before a hook runs,
        so what happened before it stays recorded if the process dies in it."""
        if self._staged:
            await self._commit(sync=False)

    async def _commit(self, *, state: AgentState | None = None, operations: tuple[Operation, ...] = (),
                      sync: bool = True, base: int | None = None, decided: tuple[Operation, ...] = (),
                      carry_save: bool = True) -> int | None:
        """One transaction: ``state`` (or a held-back save, unless ``carry_save`` is false),
        ``operations``, what is staged and the pending events, which listeners then get.
        ``decided`` (a person's decisions) commit with it or not at all: never kept for a
        later commit, whose state would not say they were taken."""
        self._in_flight += 1
        try:
            return await self._commit_once(state, operations, sync, base, decided, carry_save)
        finally:
            self._in_flight -= 1
            if self._events and not self._in_flight and not self._flush_soon:
                # Events announced while the commit was under way wait for the next one.
                self._flush_soon = True
                with contextlib.suppress(RuntimeError):
                    asyncio.get_running_loop().call_later(_FLUSH_AFTER, self._flush_if_idle)

    async def _commit_once(self, state: AgentState | None, operations: tuple[Operation, ...], sync: bool,
                           base: int | None, decided: tuple[Operation, ...], carry_save: bool) -> int | None:
        await self._ensure_open()
        if state is None and self._pending is not None and carry_save:
            state, base = self._pending, self._stored  # a held-back save rides along
        staged, self._staged = self._staged, {}
        if staged:
            # Staged records ride along; a newer version of the same operation wins.
            for operation in (*operations, *decided):
                staged.pop(operation.operation_id, None)
            operations = (*staged.values(), *operations)
        operations = tuple(self._redacted(op) for op in (*operations, *decided))
        events, self._events = tuple(self._events), []
        try:
            revision = await self.store.commit(Commit(session_id=self.session_id, state=state, operations=operations,
                                                      events=events, lease=self.lease, sync=sync, base_revision=base))
        except BaseException as exc:
            self._events[:0] = events  # not written: they go with the next commit
            for operation in staged.values():
                self._staged.setdefault(operation.operation_id, operation)
            refused = {op.operation_id for op in decided}
            for operation in operations:
                # A result the store refused (a handler returned) is a fact: it rides the
                # next commit like a staged record (the run's terminal save at the latest),
                # so the record of a call that ran says what it returned, not "in doubt".
                if operation.phase.rank >= OperationPhase.RAW_SAVED.rank and operation.operation_id not in refused:
                    self._staged.setdefault(operation.operation_id, operation)
            if isinstance(exc, ArkError) and exc.code == ErrorCode.LEASE_LOST:
                self.lost = exc
                self._events.clear()  # another owner's outbox now: never written by this one
                self.scope.bus.publish(AgentEvent("", EventTypes.RUNTIME_DETACHED, self.session_id, "", 0,
                                                  self.scope.clock(), {"reason": "lease_lost"}))
                self.scope.bus.release_all()
            if isinstance(exc, ArkError) and exc.code == ErrorCode.STATE_CONFLICT:
                self._pending, self._stored = None, None
            raise
        if state is not None:
            self._stored, self._pending = revision, None
        for operation in decided:
            self.bus.remember(operation)
        self.scope.bus.committed(events)  # now, and only now, the listeners hear of them
        return revision

    def _redacted(self, operation: Operation) -> Operation:
        """``operation`` without the secrets the runtime knows nor credential shapes
        (DESIGN §9: a key never reaches a store): its inputs, results, error and hook
        records (a reason, an injected message) hold what tools, models and hooks returned.

        An operation is committed several times as it moves through its phases, and most
        of its values are carried over unchanged (the same objects): a value checked
        before, with the secrets known now, is not checked again."""
        count = self.scope.secrets_known
        known = count() if count is not None else -1
        if known == 0:
            return operation  # a redactor with nothing to find (the runtime's is never: shapes)
        redact, where = self.scope.redact, f"operation {operation.purpose_key}"
        checked = self._checked.get(operation.operation_id) if known > 0 else None
        if checked is None or checked[0] != known:
            checked = (known, {})
            if known > 0:
                self._checked[operation.operation_id] = checked
        seen = checked[1]
        changes = {}
        for field in _REDACTED_FIELDS:
            value = getattr(operation, field)
            if value is None:
                continue
            before = seen.get(field)
            if before is not None and before[0] is value:
                clean = before[1]
            else:
                clean = redact(value, where)
                seen[field] = (value, clean)
            if clean is not value:
                changes[field] = clean
        if operation.completed:
            self._checked.pop(operation.operation_id, None)  # a completed operation never changes again
        return operation.copy_with(changes) if changes else operation

    async def _commit_operations(self, operations: tuple[Operation, ...], sync: bool) -> None:
        if not sync and all(op.kind == MODEL_CALL and op.completed for op in operations):
            # A finished model call is committed with what its response starts (seed 004 §5:
            # a step's result and the next step's intent commit together): the tool batch's
            # executing records, an approval's pending batch, the run's terminal save, or
            # the staged records flushed before any hook is called (flush_staged). Until
            # then only runtime code runs; a process killed meanwhile finds the call
            # executing, and the recovery table makes that a new attempt (a model call
            # has no side effects).
            for operation in operations:
                self.stage(operation)
            return
        await self._commit(operations=operations, sync=sync)

    async def save(self, state: AgentState, *, reason: str, mandatory: bool,
                   operations: tuple[Operation, ...] = ()) -> int | None:
        """Save the runtime's state, with ``operations`` in the same transaction (a person's
        in-doubt decision, from ``record_in_doubt_decision``). The saves after model text
        and after a tool batch add only what committed operations already hold, so they
        are held back and ride the next commit (the next operation's, or the next save's),
        which saves a transaction each. Under the session's lease this seam is the only
        writer: it returns the revision the save will have (``state.revision + 1``) and
        commits it with the base revision it last stored."""
        if state.pending_approval is not None:
            await self.prepare_next_attempts(state)
        stored, pending = self._stored, self._pending
        expected = stored if pending is None else pending.revision + 1
        if stored is None or state.revision != expected:  # the store's compare-and-swap decides
            return await self._commit(state=state, sync=True, decided=operations)
        if not mandatory and reason in _REBUILDABLE_SAVES and not operations:
            self._pending = state
            return state.revision + 1
        return await self._commit(state=state, sync=True, base=stored, decided=operations)

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
            _log.warning("could not commit the outbox of %s, its events are delivered uncommitted: %s",
                         self.session_id, exc)
            self.scope.bus.release_all()  # the run's end must reach its listeners all the same

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


def _error_of(response: Any) -> ArkError:
    if response.error is not None:
        return response.error.to_error()
    return ArkError(ErrorLayer.RUNTIME, ErrorCode.INTERNAL_ERROR,
                    f"operation {response.operation_id} ended {response.status} without an error")
