"""Hook contexts: frozen snapshots a hook receives (seed 000 §3.3).

A context never holds a live runtime object. ``state`` is the runtime's current
immutable ``AgentState`` value (tuples of frozen messages), shared rather than
deep-copied, so building a context per streamed chunk costs almost nothing. A hook
that wants to change something returns a result; to pass a modified context on,
use :meth:`copy_with`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..domain import AgentMessage, ErrorInfo, ModelRequest, ModelResponse, ToolCall, ToolDefinition, ToolResult
from ..domain.trusted import trusted_builder

__all__ = [
    "AfterRunHookContext", "BeforeRunHookContext", "HookContext", "ModelCallHookContext",
    "ModelChunkHookContext", "ModelResponseHookContext", "StatePersistenceHookContext",
    "ToolCallHookContext", "ToolResultHookContext", "TurnCompletionHookContext",
]


@dataclass(frozen=True, slots=True)
class HookContext:
    """What every context carries: the session, the run, and a state snapshot."""

    session_id: str
    run_id: str
    state: Any

    def copy_with(self, **changes: Any):
        """A copy with some fields replaced (the original is unchanged)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, slots=True)
class BeforeRunHookContext(HookContext):
    """Before a run starts. ``input`` is the new user messages."""

    input: tuple[AgentMessage, ...] = ()


@dataclass(frozen=True, slots=True)
class ModelCallHookContext(HookContext):
    """Before each model call. ``request`` is what will be sent."""

    request: ModelRequest | None = None
    turn: int = 0


@dataclass(frozen=True, slots=True)
class ModelChunkHookContext(HookContext):
    """One streamed chunk. ``text`` / ``reasoning`` include anything an earlier hook held
    back; ``final`` is true for the flush of held text at the end of the stream."""

    text: str = ""
    reasoning: str = ""
    index: int = 0
    final: bool = False
    turn: int = 0


new_chunk_context = trusted_builder(ModelChunkHookContext)
"""``new_chunk_context(session_id, run_id, state, text, reasoning, index, final, turn)``:
the stream collector builds one context per chunk from values it holds, so it skips
the keyword ``__init__``."""


@dataclass(frozen=True, slots=True)
class ModelResponseHookContext(HookContext):
    """After the model answered. ``response`` holds the post-chunk-hook text."""

    response: ModelResponse | None = None
    turn: int = 0
    attempt: int = 0


@dataclass(frozen=True, slots=True)
class ToolCallHookContext(HookContext):
    """Before one tool call runs."""

    call: ToolCall | None = None
    model_message: AgentMessage | None = None
    available_tools: tuple[ToolDefinition, ...] = ()
    batch_id: str = ""


@dataclass(frozen=True, slots=True)
class ToolResultHookContext(HookContext):
    """After one tool call ran (or was denied)."""

    call: ToolCall | None = None
    result: ToolResult | None = None
    batch_id: str = ""


@dataclass(frozen=True, slots=True)
class TurnCompletionHookContext(HookContext):
    """At the end of a turn. ``message`` is the assistant message of the turn."""

    message: AgentMessage | None = None
    turn: int = 0


@dataclass(frozen=True, slots=True)
class StatePersistenceHookContext(HookContext):
    """Before and after a save. A ``mandatory`` save ignores ``skip`` (seed 000 §9.2)."""

    reason: str = ""
    mandatory: bool = False
    run_error: ErrorInfo | None = None


@dataclass(frozen=True, slots=True)
class AfterRunHookContext(HookContext):
    """After the run reached its end (exactly once per run)."""

    result: Any = None
