"""The values of the invocation bus: requests, responses, operation refs, interceptions (seed 004 §1.2)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field, replace
from typing import Any, Awaitable, Callable, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from arknb.domain import ErrorInfo

from .operation import HookRecord, Operation, OperationStatus

__all__ = ["EventRequest", "EventResponse", "Interception", "Interceptor", "PendingOperationRef",
           "RequestHandler", "response_of"]


@dataclass(frozen=True, slots=True)
class EventRequest:
    """One logical call: its type, schema version, payload and purpose.

    ``purpose_key`` with the session is the dedup key: a second ``begin`` with the same
    key returns the first operation instead of starting another. The bus fills
    ``operation_id`` and ``idempotency_key`` on the request a handler receives.

    Example:
        >>> EventRequest("weather.lookup", 1, {"city": "Oslo"}, purpose_key="run1:lookup-oslo")
        ... # doctest: +ELLIPSIS
        EventRequest(event_type='weather.lookup', ...)
    """

    event_type: str
    schema_version: int
    payload: Any
    purpose_key: str
    event_id: str = field(default_factory=lambda: f"req_{secrets.token_hex(8)}")
    cause_id: str | None = None
    operation_id: str | None = None
    idempotency_key: str | None = None

    def with_payload(self, payload: Any) -> EventRequest:
        """A copy carrying ``payload`` (the effective payload after request hooks)."""
        return replace(self, payload=payload)


class EventResponse(BaseModel):
    """The one final answer to a request: the effective result after the response phase.

    ``status`` is an :class:`~arknb.durable.OperationStatus` value; ``indeterminate``
    means the call may or may not have run and a person must decide.
    """

    model_config = ConfigDict(frozen=True)

    request_id: str
    operation_id: str | None
    status: str
    result: Any = None
    error: ErrorInfo | None = None

    @property
    def ok(self) -> bool:
        """True for a succeeded operation."""
        return self.status == OperationStatus.SUCCEEDED


@dataclass(frozen=True, slots=True)
class PendingOperationRef:
    """A durable handle on a begun operation, to wait on or query (never the result itself)."""

    operation_id: str
    request_id: str
    session_id: str
    purpose_key: str


RequestHandler = Callable[[EventRequest], Awaitable[Any]]
"""``async handler(request) -> result``: the result must be JSON-ready; raising makes a
``failed`` response carrying the error."""


@dataclass(frozen=True, slots=True)
class Interception:
    """What one interception phase decided.

    Attributes:
        records: the steps that ran, committed in ``hook_progress``.
        payload: request phase: the effective payload (None: unchanged).
        result: request phase: a result that replaces execution (with ``status``);
            response phase: the effective result (None: unchanged).
        status: request phase: ``denied`` or ``blocked`` (execution skipped), or
            ``succeeded`` for a hook that answered itself; response phase: ``blocked``
            or ``failed`` to override the handler's outcome.
        source: the hook whose decision made the new value.
        error: the reason of a deny or block.
    """

    records: tuple[HookRecord, ...] = ()
    payload: Any = None
    result: Any = None
    status: str | None = None
    source: str | None = None
    error: ErrorInfo | None = None


PROCEED = Interception()


@runtime_checkable
class Interceptor(Protocol):
    """The request and response phases around a handler (the hook pipeline is one).

    An exception raised here (e.g. a hook aborting the run) reaches the caller waiting
    in this process; the operation stays in its phase, so a restore runs the phase again.

    An interceptor may also define ``response_is_trivial(operation) -> bool``: True when
    no hook can change that operation's result, so the bus commits the raw result and
    the completed operation together (one commit instead of two).
    """

    async def before(self, request: EventRequest, operation: Operation) -> Interception:
        """Validate, rewrite or deny the request before its handler runs."""
        ...

    async def after(self, request: EventRequest, result: Any, operation: Operation) -> Interception:
        """Rewrite or block the handler's raw result."""
        ...


def response_of(operation: Operation) -> EventResponse:
    """The response an operation stands for (completed, or in doubt)."""
    status = operation.status or OperationStatus.INDETERMINATE
    # Built from a validated operation: nothing to validate again.
    return EventResponse.model_construct(request_id=operation.request_event_id, operation_id=operation.operation_id,
                                         status=status.value, result=operation.effective_result,
                                         error=operation.error)
