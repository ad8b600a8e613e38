"""Values the runtime's invocation seam and its implementations share (DESIGN §13).

The runtime hands its model calls and tool batches to a seam; a durable store's seam
(``arknb.durable``) answers with these values. They live here, below both, so neither
imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ArkError
from .messages import AgentMessage
from .model import ModelResponse
from .tools import ToolCall, ToolResult

__all__ = ["CALL_DEFERRED", "CallsInDoubt", "HookAbort", "InDoubtCall", "ModelOutcome", "ToolAnswer"]

CALL_DEFERRED = "call_deferred"
"""The ``error_code`` of what a call returns when it hands itself to a person
(``ToolContext.defer``). It never reaches the model: the call runs again once decided,
under a new operation (a durable seam keys each such attempt apart)."""


class HookAbort(Exception):
    """Control-flow signal: a hook aborted the run. Carries the ``hook_abort`` error.

    A durable seam records the abort in the operation and raises it again when a
    restored run reaches that operation, without calling the hook a second time.
    """

    def __init__(self, error: ArkError, slot: str, hook: str | None) -> None:
        super().__init__(error.message)
        self.error = error
        self.slot = slot
        self.hook = hook


@dataclass(frozen=True, slots=True)
class ModelOutcome:
    """What one model call produced: the effective response, or a hook's request to retry."""

    response: ModelResponse
    retry: bool = False


@dataclass(frozen=True, slots=True)
class InDoubtCall:
    """An unanswered tool call whose fate a person must decide (DESIGN §13).

    Attributes:
        call: the call as it was to run.
        item_id: the operation id (durable store) or ``indoubt_{call id}`` (file or
            memory store, where nothing records whether the call started).
        started_at: when its last attempt started, if known.
        attempts: how many attempts were recorded.
    """

    call: ToolCall
    item_id: str
    started_at: float | None
    attempts: int


class CallsInDoubt(Exception):
    """Control-flow signal, not an error: calls of a batch may or may not have run, so the
    run pauses for a person (an approval batch of kind ``in_doubt``)."""

    def __init__(self, calls: list[InDoubtCall], results: dict[str, ToolResult]) -> None:
        super().__init__(f"{len(calls)} call(s) in doubt")
        self.calls = calls
        self.results = results  # what the other calls of the batch returned, by call id


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    """One call's answer after its ``after_tool_call`` hooks (DESIGN §5, §13).

    Attributes:
        call: the call as it ran (a hook's rewrite keeps the id).
        result: the effective result: what enters history.
        raw: what the tool (or the deny, or a person) produced, before the response hooks.
        injected: messages the response hooks injected, in hook order.
        stop: a response hook asked to stop after this batch (or the result says ``stop``).
        abort: a response hook aborted the run on this result (the answer still enters
            history: the call ran).
        source: the hook whose rewrite made ``result`` (None: unchanged).
    """

    call: ToolCall
    result: ToolResult
    raw: ToolResult
    injected: tuple[AgentMessage, ...] = ()
    stop: bool = False
    abort: HookAbort | None = None
    source: str | None = None
