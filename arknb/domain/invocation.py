"""Values the runtime's invocation seam and its implementations share (DESIGN §13).

The runtime hands its model calls and tool batches to a seam; a durable store's seam
(``arknb.durable``) answers with these values. They live here, below both, so neither
imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import ModelResponse
from .tools import ToolCall, ToolResult

__all__ = ["CallsInDoubt", "InDoubtCall", "ModelOutcome"]


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
