"""Operations: one durable record per model call, tool call or registered request (seed 004 §2).

An :class:`Operation` is the stable identity of one logical call and the facts that
have been committed about it: which phase it reached, what each finished hook
decided, the input it ran with, the raw result its handler produced and the effective
result after the response hooks. A record only ever moves forward through
:class:`OperationPhase`; raw values are never overwritten: a hook's rewrite makes a new
effective value and names the hook as its source (DESIGN §13).

Operations are values: every change builds a new one with :meth:`Operation.advance`
(or a ``model_copy``), which a store commits.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arknb.domain import ErrorInfo
from arknb.domain.frozen import shallow_copy

__all__ = ["MODEL_CALL", "TOOL_CALL", "Attempt", "HookRecord", "Operation", "OperationPhase", "OperationStatus",
           "purpose_key_for_model", "purpose_key_for_tool"]

MODEL_CALL = "model_call"
"""The kind of a model call's operation (it has no side effects: see ``Operation.outcome_unknown``)."""
TOOL_CALL = "tool_call"
"""The kind of a tool call's operation."""


class OperationPhase(StrEnum):
    """Where an operation stands, in the order it moves (seed 004 §2's state diagram)."""

    PREPARED = "prepared"
    REQUEST_HOOKS = "request_hooks"
    EXECUTING = "executing"
    RAW_SAVED = "raw_saved"
    RESPONSE_HOOKS = "response_hooks"
    COMPLETED = "completed"

    @property
    def rank(self) -> int:
        """Position in the phase order (prepared is 0)."""
        return _PHASE_RANK[self]


_PHASE_RANK = {phase: rank for rank, phase in enumerate(OperationPhase)}


class OperationStatus(StrEnum):
    """How an operation ended (or, for ``indeterminate``, that a person must say how).

    ``indeterminate`` is set on an operation found ``executing`` after a crash whose
    handler may not run twice: it is an in-doubt item until a person decides.
    """

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DENIED = "denied"
    BLOCKED = "blocked"
    INDETERMINATE = "indeterminate"


class HookRecord(BaseModel):
    """What one finished hook (or interception step) decided, committed with the operation.

    The runtime's phases record one per hook, as each finishes (DESIGN §13: a restore
    runs only the hooks not yet recorded); the built-in approval policy and a person's
    approval are recorded the same way (``approval_policy``, ``approval``).

    Attributes:
        phase: ``request`` or ``response`` (set by the bus).
        slot: the hook slot (``before_tool_call``, ``after_model_call``, ... or the
            interceptor phase of a user request type: ``request`` / ``response``).
        action: the decision (``proceed``, ``rewrite``, ``failed``, ``deny``, ``defer``,
            ``respond``, ``retry``, ``stop``, ``abort``, ``approve``; ``skipped`` for
            response hooks not run because an earlier answer's hook aborted the run).
        hook: the hook's name (None for a step no single hook made).
        reason: the reason the hook gave, if any.
        injected: ``after_tool_call``: the messages the hook injected (JSON), in order.
        detail: ``defer``: the pending item's kind and detail (``{"kind", "detail"}``).
    """

    model_config = ConfigDict(frozen=True)

    slot: str
    action: str
    phase: str = "request"
    hook: str | None = None
    reason: str | None = None
    injected: tuple[Any, ...] = ()
    detail: Any = None


class Attempt(BaseModel):
    """One execution of an operation's handler.

    ``complete`` is False while it runs and stays False for an attempt a crash cut short
    (the record is kept, marked incomplete, when restore starts a new one).
    """

    model_config = ConfigDict(frozen=True)

    number: int = Field(ge=1)
    started_at: float
    ended_at: float | None = None
    complete: bool = False
    outcome: str | None = None  # "ok", "error", "interrupted", "rerun", ...

    def ended(self, at: float, outcome: str, *, complete: bool = True) -> Attempt:
        """This attempt ended at ``at`` with ``outcome`` (a copy)."""
        return shallow_copy(self, {"ended_at": at, "complete": complete, "outcome": outcome})


class Operation(BaseModel):
    """The durable record of one logical call (DESIGN §13).

    Attributes:
        operation_id: the stable id (``op_...``).
        session_id: the owning session.
        run_id: the run that began it.
        kind: ``model_call``, ``tool_call`` or a registered request type.
        schema_version: the request's schema version.
        purpose_key: with the session, the dedup key: a second ``begin`` with it returns
            this operation.
        request_event_id: the id of the request that began it (``EventResponse.request_id``).
        phase: see :class:`OperationPhase`.
        status: set once completed (``indeterminate`` also before, for an in-doubt call).
        hook_progress: each finished interception step, in order.
        raw_input: the request payload as it was submitted.
        effective_input: the payload the handler ran with (after request hooks).
        input_source: the hook whose rewrite made ``effective_input`` (None: unchanged).
        raw_result: what the handler returned (JSON), or its error.
        effective_result: the result after the response hooks: what callers receive.
        result_source: the hook (or ``person``) whose decision made ``effective_result``.
        error: the error of a failed, denied or blocked operation.
        attempts: every handler execution, incomplete ones included.
        idempotency_key: handed to the handler; stable across restores.
        created_at / updated_at: seconds since the epoch.
        ordinal: the order in which the session's operations began (set by the store).
    """

    model_config = ConfigDict(frozen=True)

    operation_id: str
    session_id: str
    run_id: str
    kind: str
    schema_version: int = 1
    purpose_key: str
    request_event_id: str
    phase: OperationPhase = OperationPhase.PREPARED
    status: OperationStatus | None = None
    hook_progress: tuple[HookRecord, ...] = ()
    raw_input: Any = None
    effective_input: Any = None
    input_source: str | None = None
    raw_result: Any = None
    effective_result: Any = None
    result_source: str | None = None
    error: ErrorInfo | None = None
    attempts: tuple[Attempt, ...] = ()
    idempotency_key: str = ""
    created_at: float = 0.0
    updated_at: float = 0.0
    ordinal: int = 0

    @property
    def completed(self) -> bool:
        """True once the operation reached its final phase."""
        return self.phase is OperationPhase.COMPLETED

    @property
    def in_doubt(self) -> bool:
        """True while a person must decide what became of this call."""
        return self.status is OperationStatus.INDETERMINATE and not self.completed

    @property
    def outcome_unknown(self) -> bool:
        """True if nobody can tell what became of this operation (one with no result): it
        is in doubt, or it is of a kind that may have side effects (anything but a model
        call) and an attempt of it began — the one under way (the process ended or the run
        was cancelled meanwhile), or one a crash cut short whose rerun a person chose and
        that never began (that attempt is closed, its fate still unknown)."""
        if self.in_doubt:
            return True
        return bool(self.attempts) and self.kind != MODEL_CALL

    @property
    def started_at(self) -> float | None:
        """When its first attempt started (None if it never executed)."""
        return self.attempts[0].started_at if self.attempts else None

    def advance(self, phase: OperationPhase, *, at: float, **changes: Any) -> Operation:
        """A copy moved to ``phase`` (never backwards) with ``changes`` applied.

        Raises:
            ValueError: if ``phase`` comes before the current phase, or the operation is
                already completed (a completed operation is never changed).
        """
        if self.completed:
            raise ValueError(f"operation {self.operation_id} is completed and cannot change")
        if phase.rank < self.phase.rank:
            raise ValueError(f"operation {self.operation_id} cannot move back from {self.phase} to {phase}")
        changes["phase"] = phase
        changes["updated_at"] = at
        return self.copy_with(changes)

    def copy_with(self, changes: dict[str, Any]) -> Operation:
        """A copy with ``changes`` applied, as ``model_copy(update=...)`` makes it (no
        validation: the pipeline passes values it built), at a fraction of its cost: an
        operation changes several times per call."""
        return shallow_copy(self, changes)

    def with_hooks(self, *records: HookRecord) -> tuple[HookRecord, ...]:
        """``hook_progress`` with ``records`` appended."""
        return self.hook_progress + tuple(records)

    def records(self, phase: str) -> tuple[HookRecord, ...]:
        """The committed records of the ``request`` or ``response`` phase, in order."""
        return tuple(record for record in self.hook_progress if record.phase == phase)

    def to_json(self) -> str:
        """The JSON a store keeps."""
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes) -> Operation:
        """Parse what :meth:`to_json` wrote."""
        return cls.model_validate_json(text)


def purpose_key_for_model(run_id: str, turn: int, retry: int = 0) -> str:
    """The purpose key of a run's model call in ``turn`` (DESIGN §13: ``{run_id}:turn{n}``);
    a retry a response hook asked for is a new logical call, ``{run_id}:turn{n}.{retry}``."""
    return f"{run_id}:turn{turn}" if retry == 0 else f"{run_id}:turn{turn}.{retry}"


def purpose_key_for_tool(run_id: str, call_id: str) -> str:
    """The purpose key of a tool call (DESIGN §13: ``{run_id}:{call_id}``)."""
    return f"{run_id}:{call_id}"
