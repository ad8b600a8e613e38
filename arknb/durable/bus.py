"""InvocationBus: requests as durable operations (seed 004, DESIGN §13).

A request goes ``begin`` → request phase (the interceptor: hooks may rewrite or deny)
→ ``executing`` committed → the one handler of its ``(event_type, schema_version)``
runs → ``raw_saved`` → response phase → ``completed`` committed → waiters wake. Every
step is committed to the :class:`OperationStore` before the next one starts, so a
process that dies anywhere leaves a record a new bus continues from (the recovery
table of DESIGN §13): a completed result is returned as it is, a saved raw result only
goes through the response phase, an interrupted execution runs again only if its
handler is idempotent and otherwise becomes ``indeterminate``, an in-doubt call that
a person resolves with :meth:`InvocationBus.rerun` or :meth:`InvocationBus.settle`.

Waiting reads the store, not memory: :meth:`await_result` registers its waiter,
re-reads, and waits for a signal or a periodic re-check, so a result committed before
the wait (or whose notification was lost) is never missed; cancelling a wait never
cancels the operation.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable, Sequence

from arknb.domain import ArkError, ErrorCode, ErrorInfo, ErrorLayer, invalid_argument

from ._pipeline import (
    Handler, InvocationPipeline, OperationCommitter, close_last, current_operation, open_attempt, ref_of,
)
from ._waiters import WaitRegistry
from .operation import Operation, OperationPhase, OperationStatus
from .requests import EventRequest, EventResponse, Interceptor, PendingOperationRef, RequestHandler, response_of
from .store import Lease, OperationStore

__all__ = ["InvocationBus", "OperationCommitter"]

_RECHECK_S = 1.0


class InvocationBus(InvocationPipeline):
    """Durable request/response for one session (DESIGN §13).

    Args:
        store: where operations are committed (``SQLiteStore``, ``PostgresStore``, ``MemoryStore``).
        session_id: the session every operation belongs to.
        run_id: the run new operations are recorded under (settable later: :attr:`run_id`).
        lease: commits are made under this lease (a stale one fails with ``lease_lost``).
        commit: replaces how operations are written (see :data:`OperationCommitter`).
        recheck_interval: seconds between the store re-reads of a waiting ``await_result``.

    Example:
        >>> bus = InvocationBus(MemoryStore(), session_id="s1")          # doctest: +SKIP
        >>> bus.register_handler("weather.lookup", 1, lookup)            # doctest: +SKIP
        >>> bus.freeze()                                                  # doctest: +SKIP
        >>> response = await bus.request(EventRequest("weather.lookup", 1, {"city": "Oslo"},
        ...                                           purpose_key="r1:oslo"))  # doctest: +SKIP
    """

    def __init__(self, store: OperationStore, *, session_id: str, run_id: str = "", lease: Lease | None = None,
                 commit: OperationCommitter | None = None, clock: Callable[[], float] | None = None,
                 recheck_interval: float = _RECHECK_S) -> None:
        if not isinstance(store, OperationStore):
            raise invalid_argument(f"InvocationBus needs an OperationStore, got {type(store).__name__}")
        if not isinstance(recheck_interval, (int, float)) or recheck_interval <= 0:
            raise invalid_argument(f"recheck_interval must be a positive number, got {recheck_interval!r}")
        self.store = store
        self.session_id = session_id
        self.run_id = run_id
        self.lease = lease
        self._commit = commit
        self._clock = clock or time.time
        self._recheck = float(recheck_interval)
        self._handlers: dict[tuple[str, int], Handler] = {}
        self._interceptors: dict[str | None, Interceptor] = {}
        self._frozen = False
        self._closed = False
        self._waiters = WaitRegistry()
        self._running: dict[str, asyncio.Task] = {}
        self._failures: dict[str, BaseException] = {}
        # What this bus committed, by purpose key and by id: a completed operation never
        # changes again, so a waiter that finds one here needs no store read.
        self._known: dict[str, Operation] = {}
        self._known_ids: dict[str, Operation] = {}
        self._new_prefixes: tuple[str, ...] = ()

    # -- assembly ------------------------------------------------------------------------

    def register_handler(self, event_type: str, schema_version: int, handler: RequestHandler, *,
                         idempotent: bool | Callable[[EventRequest], bool] = False,
                         sync: bool = True) -> None:
        """Make ``handler`` the one executor of ``(event_type, schema_version)``.

        Args:
            idempotent: may the handler run again when a crash left its execution
                unfinished (a bool, or a function of the request)? If not, such a call
                becomes an in-doubt item; nor, for any kind but a model call, once
                ``RECOVERY_LIMIT`` (3) attempts in a row were cut short by a crash (a
                handler that takes the process down is not run on every restore).
            sync: wait for the disk on every commit of these operations. A handler with
                no side effects (a model call) can pass False: each commit then survives
                the process being killed, and reaches the disk with the next synced commit
                (WAL order); a power cut before that loses it, which costs a repeated call.

        Raises:
            ArkError: ``request_handler_duplicate`` for a second handler of the same key;
                ``invalid_argument`` after :meth:`freeze`.
        """
        if self._frozen:
            raise invalid_argument("the invocation bus is frozen: register handlers before freeze()")
        if not isinstance(event_type, str) or not event_type:
            raise invalid_argument(f"event_type must be a non-empty string, got {event_type!r}")
        if isinstance(schema_version, bool) or not isinstance(schema_version, int) or schema_version < 1:
            raise invalid_argument(f"schema_version must be an int >= 1, got {schema_version!r}")
        if not callable(handler):
            raise invalid_argument(f"handler must be an async callable, got {type(handler).__name__}")
        key = (event_type, schema_version)
        if key in self._handlers:
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.REQUEST_HANDLER_DUPLICATE,
                           f"a handler for {event_type!r} schema version {schema_version} is already registered")
        self._handlers[key] = Handler(handler, idempotent, sync)

    def set_interceptor(self, interceptor: Interceptor, *, event_type: str | None = None) -> None:
        """Intercept requests (of one type, or of every type without its own interceptor)."""
        if self._frozen:
            raise invalid_argument("the invocation bus is frozen: set interceptors before freeze()")
        if not isinstance(interceptor, Interceptor):
            raise invalid_argument(f"interceptor must have async before() and after(), got "
                                   f"{type(interceptor).__name__}")
        self._interceptors[event_type] = interceptor

    def freeze(self) -> None:
        """Fix the handlers and interceptors; later registrations fail."""
        self._frozen = True

    @property
    def frozen(self) -> bool:
        """True after :meth:`freeze`."""
        return self._frozen

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    # -- requests ------------------------------------------------------------------------

    async def begin(self, request: EventRequest) -> PendingOperationRef:
        """Start (or find) the operation of ``request`` and return its ref at once.

        A purpose key the session already used returns that operation; one that a
        crashed process left unfinished continues per the recovery table.
        """
        [ref] = await self._start([request])
        return ref

    async def request(self, request: EventRequest) -> EventResponse:
        """``begin`` then ``await_result``: the one final response."""
        return await self.await_result(await self.begin(request))

    async def request_many(self, requests: Sequence[EventRequest], *,
                           concurrency: int | None = None) -> list[EventResponse]:
        """Run many requests: their ``executing`` records are committed in one transaction
        before any handler runs; handlers run concurrently (at most ``concurrency``);
        response phases run one at a time in the requests' order; responses come back
        in that order, never in completion order."""
        if concurrency is not None and (isinstance(concurrency, bool) or not isinstance(concurrency, int)
                                        or concurrency < 1):
            raise invalid_argument(f"concurrency must be an int >= 1 or None, got {concurrency!r}")
        refs = await self._start(list(requests), concurrency=concurrency)
        return [await self.await_result(ref) for ref in refs]

    async def get_result(self, ref: PendingOperationRef) -> EventResponse | None:
        """The committed response, or None while the operation is unfinished."""
        operation = await self._read(ref)
        return response_of(operation) if operation.completed or operation.in_doubt else None

    async def await_result(self, ref: PendingOperationRef) -> EventResponse:
        """Wait for the operation's final response (or its in-doubt state).

        Raises:
            ArkError: ``reentrant_operation_wait`` when an operation's own handler waits
                for it; ``bus_closed`` if the bus closes meanwhile; ``operation_not_found``.
            Exception: what the request or response phase raised in this process (a
                hook aborting the run), as it was.
        """
        if current_operation.get() == ref.operation_id:
            raise ArkError(ErrorLayer.RUNTIME, ErrorCode.REENTRANT_OPERATION_WAIT,
                           f"operation {ref.operation_id} ({ref.purpose_key}) waits for its own result; "
                           "a handler must not await the operation it is executing")
        self._check_open()
        # Register first, then read: a result committed in between is seen by the read,
        # one committed after it signals the waiter (seed 004 §2.1).
        waiter = self._waiters.attach(ref.operation_id)
        timed_out = False
        try:
            while True:
                failure = self._failures.get(ref.operation_id)
                if failure is not None:
                    raise failure
                known = self._known_ids.get(ref.operation_id)
                if known is not None and known.completed:
                    return response_of(known)  # committed by this bus, and final
                # An operation whose pipeline runs here signals when it is done, so the
                # store is read only for the others, and after every silent re-check
                # period for all (a lost signal, another process's commit).
                if timed_out or ref.operation_id not in self._running:
                    operation = await self._read(ref)
                    if operation.completed or operation.in_doubt:
                        return response_of(operation)
                timed_out = not await waiter.wait(self._recheck)
                waiter.clear()
                self._check_open()
        finally:
            self._waiters.detach(ref.operation_id, waiter)

    # -- in-doubt resolution -----------------------------------------------------------------

    async def rerun(self, operation_id: str, *, start: bool = True) -> PendingOperationRef:
        """Run an in-doubt operation's handler again (a person decided it is safe).

        With ``start=False`` the decision is only recorded: the operation is no longer in
        doubt and runs at the next ``begin`` of its purpose key (the runtime uses this
        while other in-doubt calls of the batch still wait for a person).

        Raises:
            ArkError: ``operation_not_found``; ``operation_not_in_doubt``.
        """
        operation = await self.rerun_record(operation_id, start=start)
        await self._write((operation,), True)
        if start:
            self._spawn(operation, None)
        return ref_of(operation)

    async def settle(self, operation_id: str, *, status: OperationStatus | str, result: Any = None,
                     error: ErrorInfo | None = None, source: str = "person",
                     respond: bool = False) -> EventResponse | None:
        """Complete an in-doubt operation with the outcome a person recorded.

        With ``respond=True`` the outcome stands for the handler's raw result instead:
        the operation is left ``raw_saved`` and its response phase (the interceptor's
        ``after``) runs at the next ``begin`` of its purpose key; None is returned then.

        Raises:
            ArkError: ``operation_not_found``; ``operation_not_in_doubt``.
        """
        operation = await self.settled_record(operation_id, status=status, result=result, error=error,
                                              source=source, respond=respond)
        await self._write((operation,), True)
        if respond:
            return None
        self._waiters.signal(operation_id)
        return response_of(operation)

    async def rerun_record(self, operation_id: str, *, start: bool = False) -> Operation:
        """The record :meth:`rerun` writes, not written: for a caller that commits a
        person's decision in one transaction with its own record of it (the runtime's
        state save), then hands it to :meth:`remember`. With ``start`` its new attempt
        is open (the caller then runs it).

        Raises:
            ArkError: ``operation_not_found``; ``operation_not_in_doubt``.
        """
        operation = await self._in_doubt(operation_id)
        now = self._clock()
        attempts = close_last(operation.attempts, now, "rerun approved", complete=False)
        if start:
            attempts = open_attempt(attempts, now)
        return operation.copy_with({"status": None, "updated_at": now, "attempts": attempts})

    async def settled_record(self, operation_id: str, *, status: OperationStatus | str, result: Any = None,
                             error: ErrorInfo | None = None, source: str = "person",
                             respond: bool = False) -> Operation:
        """The record :meth:`settle` writes, not written (see :meth:`rerun_record`).

        Raises:
            ArkError: ``operation_not_found``; ``operation_not_in_doubt``.
        """
        operation = await self._in_doubt(operation_id)
        now = self._clock()
        changes: dict[str, Any] = {"raw_result": result} if respond else {}  # the person's word stands for it
        return operation.advance(OperationPhase.RAW_SAVED if respond else OperationPhase.COMPLETED, at=now,
                                 status=OperationStatus(status), effective_result=result, result_source=source,
                                 error=error, attempts=close_last(operation.attempts, now, f"settled by {source}"),
                                 **changes)

    # -- lifecycle ---------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop: pending ``await_result`` calls raise ``bus_closed``; running pipelines are
        cancelled (their operations stay as committed, for a restore to continue)."""
        if self._closed:
            return
        self._closed = True
        self._waiters.wake_all()
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._running.clear()

    def assume_new(self, prefix: str) -> None:
        """Purpose keys starting with ``prefix`` were never used before (e.g. they hold a
        run id this process just made): ``begin`` skips looking them up in the store."""
        if not isinstance(prefix, str) or not prefix:
            raise invalid_argument(f"prefix must be a non-empty string, got {prefix!r}")
        self._new_prefixes = (prefix, *self._new_prefixes[:7])  # the latest runs are the ones still going

    def new_operation(self, request: EventRequest) -> Operation:
        """A fresh ``prepared`` operation for ``request`` (not committed): for a caller that
        runs its request phase itself and commits it through this bus's committer."""
        return self._new_operation(request)

    def remember(self, operation: Operation) -> None:
        """Know ``operation`` as the current record of its purpose key before it is written
        (the caller's committer writes it with the next commit): a ``begin`` of that key
        then continues it instead of starting another."""
        self._known[operation.purpose_key] = operation
        self._known_ids[operation.operation_id] = operation

    def known(self, purpose_key: str) -> Operation | None:
        """The operation of ``purpose_key`` as this bus last wrote or was told (no store read)."""
        return self._known.get(purpose_key)

    def running(self) -> tuple[str, ...]:
        """Ids of the operations whose pipeline runs in this process now."""
        return tuple(self._running)

    async def cancel_running(self, operation_ids: set[str], timeout: float) -> set[str]:
        """Cancel the pipelines of ``operation_ids`` that run in this process (a run that
        ended for good: its handlers and hooks stop as they would without a durable
        store) and wait up to ``timeout`` seconds for them to end; an interrupted handler
        records its operation completed ``indeterminate`` (a model call's: ``failed``),
        with the error ``cancelled``. Returns the ids still running then."""
        tasks = [task for op_id, task in self._running.items() if op_id in operation_ids]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
        return {op_id for op_id in operation_ids if op_id in self._running}

    def __repr__(self) -> str:
        return (f"InvocationBus(session_id={self.session_id!r}, handlers={sorted(self._handlers)}, "
                f"running={len(self._running)}{', closed' if self._closed else ''})")
