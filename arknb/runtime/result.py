"""What a run ends with: the stop reason, the result, and the step values of the loop."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic_core import to_jsonable_python

from ..domain import AgentMessage, ArkError, Usage

__all__ = ["AgentRunResult", "NextStep", "StopReason"]


class StopReason(StrEnum):
    """Why a run ended. ``awaiting_approval`` and ``suspended`` can be continued."""

    COMPLETED = "completed"
    STOPPED = "stopped"
    MAX_TURNS = "max_turns"
    LOOP_DETECTED = "loop_detected"
    CANCELLED = "cancelled"
    ABORTED = "aborted"
    FAILED = "failed"
    AWAITING_APPROVAL = "awaiting_approval"
    SUSPENDED = "suspended"

    @property
    def resumable(self) -> bool:
        """True for the two pauses a run can continue from."""
        return self in (StopReason.AWAITING_APPROVAL, StopReason.SUSPENDED)


@dataclass(frozen=True, slots=True)
class AgentRunResult:
    """The outcome of one run.

    Example:
        >>> result = await runtime.run("What is 1 + 2?")   # doctest: +SKIP
        >>> result.stop_reason == "completed", result.final_message.text   # doctest: +SKIP
        (True, 'It is 3.')
    """

    run_id: str
    stop_reason: StopReason
    final_message: AgentMessage | None = None
    error: ArkError | None = None
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    session_id: str = ""
    persisted: bool = True
    """False when the final save failed (the session is then marked not resumable)."""
    output: Any = None
    """The typed answer of a run with ``output_type`` (DESIGN §17), else None; ``text`` stays the raw text."""
    truncated: bool = False
    """True when the final answer was cut at ``max_tokens`` (finish reason ``length``)."""

    @property
    def text(self) -> str:
        """The final message's raw text ('' if there is none); a typed answer is in :attr:`output`."""
        return self.final_message.text if self.final_message is not None else ""

    @property
    def resumable(self) -> bool:
        """True if the run paused (approval or suspend) and its state was saved."""
        return self.stop_reason.resumable and self.persisted

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (used in ``agent.*`` event payloads)."""
        return {"run_id": self.run_id, "stop_reason": self.stop_reason.value, "text": self.text,
                "error": self.error.to_dict() if self.error else None,
                "usage": self.usage.model_dump(), "turns": self.turns, "persisted": self.persisted,
                **({"output": to_jsonable_python(self.output)} if self.output is not None else {}),
                **({"truncated": True} if self.truncated else {})}


@dataclass(frozen=True, slots=True)
class NextStep:
    """How a turn ended: the loop driver acts on this one value (STYLE §2)."""

    kind: str
    message: AgentMessage | None = None
    stop_reason: StopReason | None = None
    error: ArkError | None = None
    batch: Any = None
    output: Any = None

    RUN_AGAIN = "run_again"
    FINAL = "final"
    AWAIT_APPROVAL = "await_approval"
    STOP = "stop"

    @classmethod
    def run_again(cls) -> NextStep:
        return cls(cls.RUN_AGAIN)

    @classmethod
    def final(cls, message: AgentMessage | None, *, output: Any = None) -> NextStep:
        return cls(cls.FINAL, message=message, stop_reason=StopReason.COMPLETED, output=output)

    @classmethod
    def await_approval(cls, batch: Any) -> NextStep:
        return cls(cls.AWAIT_APPROVAL, batch=batch, stop_reason=StopReason.AWAITING_APPROVAL)

    @classmethod
    def stop(cls, reason: StopReason, *, message: AgentMessage | None = None,
             error: ArkError | None = None) -> NextStep:
        return cls(cls.STOP, message=message, stop_reason=reason, error=error)
