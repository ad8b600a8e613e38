"""The invocation seam: how the loop makes its model calls, runs its tools and saves.

The loop never asks whether a store is durable (STYLE §11). It hands each model call
(:class:`~arknb.runtime._model_call.ModelCall`) and each tool batch
(:class:`~arknb.runtime._tool_batch.ToolBatch`) to ``runtime._invocations``, which runs
their phases. :class:`DirectInvocations`, the default, runs them in line exactly as the
loop always did. A durable store supplies its own through ``storage.invocations_for(scope)``
(``arknb.durable``): every call then becomes an operation committed phase by phase.

What a seam implements (structurally; ``arknb.durable`` does not import this module):

- ``await open(takeover=False)``: take ownership of the session (a no-op here).
- ``await model_call(call) -> ModelOutcome``.
- ``await plan_tools(planning)``: decide every call of a
  :class:`~arknb.runtime._tool_batch.ToolPlanning` in order (``planning.decide(call,
  progress)``, or a decision recorded earlier through ``allow``/``deny``/``defer``).
- ``await run_tools(batch) -> list[ToolAnswer]``: execute ``batch.calls``, then answer
  every call of ``batch.order`` in that order through ``batch.respond`` (raising
  :class:`CallsInDoubt` for calls whose fate is unknown).
- ``await save(state, reason=, mandatory=, operations=()) -> int | None`` (``operations``:
  records that commit with the state or not at all); ``await mark_not_resumable()``.
- ``await classify_unanswered(run_id, calls, turn) -> (in_doubt, runnable, unplanned)``: after
  a crash, which unanswered calls a person must decide (with a file or memory store: all
  of them), which have operations to continue, and which were never planned.
- ``await record_in_doubt_decision(item, resolution, text) -> records``: what the decision's
  save carries (its ``operations``), so a decision counts once, with the state;
  ``await flush()`` (after a terminal event); ``await aclose()``.
- ``await known_results(run_id, calls, turn) -> {call id: ToolResult | None}``: what is
  known of unanswered calls whose run is cancelled (an operation's result; None: the call
  began and left none, so it may have run); ``await
  close_run(run_id, reason, error)``: a run that ended for good (cancelled, failed,
  aborted, ...) leaves no operation open (its in-doubt calls will never be decided).
- ``await operation_state(operation_id) -> str | None``: what an operation of this session
  is now (its status, or its phase while unfinished), None if there is none: a decision on
  one that is not in doubt says so (``operation_not_in_doubt``).
"""

from __future__ import annotations

import weakref

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..domain import ErrorInfo, ToolCall, ToolResult
from ..domain.invocation import CallsInDoubt, InDoubtCall, ModelOutcome, ToolAnswer
from ..state import AgentState, PendingApprovalItem

if TYPE_CHECKING:
    from ..events import EventBus
    from .runtime import AgentRuntime
    from ._model_call import ModelCall
    from ._tool_batch import ToolBatch, ToolPlanning

__all__ = ["CallsInDoubt", "DirectInvocations", "InDoubtCall", "ModelOutcome", "SessionScope", "make_invocations"]


@dataclass(frozen=True, slots=True)
class SessionScope:
    """The narrow view of a runtime that a seam gets (STYLE §12)."""

    session_id: str
    bus: EventBus
    clock: Callable[[], float]
    storage: Any
    is_idempotent: Callable[[str], bool]   # tool name -> declared @tool(idempotent=True)
    redact: Callable[[Any, str], Any] = lambda value, where: value  # (value, where) -> value without secrets
    # Changes when ``redact`` learns a secret (0: it has nothing to find); a value found
    # clean before is checked again when it did. None: not known, check all.
    secrets_known: Callable[[], int] | None = None
    # tool name -> where its calls go, for the record (an MCP server's name; None for a Python tool)
    source_of: Callable[[str], str | None] = lambda name: None


class DirectInvocations:
    """Runs every phase in line: the runtime without a durable store (DESIGN §13's first sentence)."""

    __slots__ = ("_storage", "_session_id")

    def __init__(self, scope: SessionScope) -> None:
        self._storage = scope.storage
        self._session_id = scope.session_id

    async def open(self, *, takeover: bool = False) -> None:
        return None

    async def model_call(self, call: ModelCall) -> ModelOutcome:
        request, responded = await call.before()
        if responded is not None:
            return await call.after(responded, responded.message.text, responded.message.reasoning_text)
        return await call.after(*await call.execute(request))

    async def plan_tools(self, planning: ToolPlanning) -> None:
        for call in planning.calls:
            await planning.decide(call)

    async def run_tools(self, batch: ToolBatch) -> list[ToolAnswer]:
        # Every call runs first, then after_tool_call per answer in index order (DESIGN §7).
        results = dict(zip((call.id for call in batch.calls), await batch.execute_all(), strict=True))
        answers = []
        for call in batch.order:
            given = batch.given_answer(call)
            answers.append(await batch.respond(call, given.result if given is not None else results[call.id]))
        return answers

    async def save(self, state: AgentState, *, reason: str, mandatory: bool, operations: tuple = ()) -> int | None:
        return await self._storage.save(state)  # (no operations: record_in_doubt_decision returns none)

    async def mark_not_resumable(self) -> None:
        await self._storage.mark_not_resumable(self._session_id)

    async def classify_unanswered(self, run_id: str, calls: list[ToolCall], turn: int
                                  ) -> tuple[list[InDoubtCall], list[ToolCall], list[ToolCall]]:
        # Without operations nothing tells "approved, not started" from "started, fate
        # unknown": every call a crash left unanswered goes to a person.
        return [InDoubtCall(call, f"indoubt_{call.id}", None, 0) for call in calls], [], []

    async def record_in_doubt_decision(self, item: PendingApprovalItem, resolution: str,
                                       text: str | None) -> tuple:
        return ()  # the state's save records the decision

    async def known_results(self, run_id: str, calls: list[ToolCall], turn: int) -> dict[str, ToolResult | None]:
        return {}  # without operations nothing is known of a call a crash left unanswered

    async def operation_state(self, operation_id: str) -> str | None:
        return None  # (no operations)

    async def close_run(self, run_id: str, reason: str, error: ErrorInfo | None) -> None:
        return None  # (no operations)

    async def flush(self) -> None:
        return None

    async def flush_staged(self) -> None:
        return None  # (nothing is ever held back)

    async def aclose(self) -> None:
        return None


def make_invocations(rt: AgentRuntime):
    """The runtime's seam: its storage's own (a durable store) or :class:`DirectInvocations`."""
    this = weakref.ref(rt)  # the seam belongs to the runtime: no strong reference back (see _weak.py)

    def is_idempotent(name: str) -> bool:
        runtime = this()  # the extensions' tools count too (offered for the current state)
        return runtime is not None and runtime._offered_tools().is_idempotent(name)

    def source_of(name: str) -> str | None:
        runtime = this()
        entry = runtime._offered_tools().get(name) if runtime is not None else None
        return entry.source if entry is not None else None

    scope = SessionScope(session_id=rt.session_id, bus=rt.bus, clock=rt._clock, storage=rt.storage,
                         is_idempotent=is_idempotent, redact=rt._redactor.value,
                         secrets_known=rt._redactor.generation, source_of=source_of)
    factory = getattr(rt.storage, "invocations_for", None)
    return factory(scope) if callable(factory) else DirectInvocations(scope)
