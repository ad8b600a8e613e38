"""Hook contexts: frozen snapshots a hook receives (seed 000 §3.3).

A context never holds a live runtime object. ``state`` is the runtime's current
immutable ``AgentState`` value (tuples of frozen messages), shared rather than
deep-copied, so building a context per streamed chunk costs almost nothing. That is
safe because every value in a context is read-only all the way down: the messages and
calls are frozen models, and their dicts and lists (``state.metadata``,
``state.extensions``, ``request.config.extensions``, ``available_tools[i].parameters``,
``call.arguments``) are frozen containers (:mod:`arknb.domain.frozen`) built once where
the value is made. A write anywhere raises ``TypeError`` naming what is read-only. A
hook that wants to change something returns a result; to pass a modified context on,
use :meth:`copy_with`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import FrozenInstanceError, dataclass
from typing import Any

from ..domain import AgentMessage, ErrorInfo, ModelRequest, ModelResponse, ToolCall, ToolDefinition, ToolResult
from ..domain.trusted import trusted_builder

__all__ = [
    "AfterRunHookContext", "BeforeRunHookContext", "HookContext", "ModelCallHookContext",
    "ModelChunkHookContext", "ModelResponseHookContext", "ReadOnlyContextError",
    "StatePersistenceHookContext", "ToolCallHookContext", "ToolResultHookContext",
    "TurnCompletionHookContext",
]


class ReadOnlyContextError(FrozenInstanceError, TypeError):
    """Raised when a hook assigns to (or deletes) a field of its context.

    A ``TypeError`` like every refused write to a read-only value, and still the
    ``dataclasses.FrozenInstanceError`` a frozen dataclass raises.
    """


@dataclass(frozen=True, slots=True)
class HookContext:
    """What every context carries: the session, the run, and a state snapshot."""

    session_id: str
    run_id: str
    state: Any

    def copy_with(self, **changes: Any):
        """A copy with some fields replaced (the original is unchanged). A list given for
        a sequence field is stored as a tuple, so the copy is read-only too."""
        for name, value in changes.items():
            if type(value) is list:
                changes[name] = tuple(value)
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


_OBSERVED = ("HookContext", "AfterRunHookContext")  # contexts of observers, which return None


def _refuse_write(self: HookContext, name: str, value: Any = None) -> None:
    cls = type(self).__name__
    way = ("" if cls in _OBSERVED else
           f"Return a result to change the run (a {cls.replace('Context', 'Result')} factory), or use ")
    raise ReadOnlyContextError(f"{cls}.{name} is read-only: a hook context is a frozen snapshot. "
                               f"{way or 'Use '}ctx.copy_with({name}=...) for a changed copy")


def _refuse_delete(self: HookContext, name: str) -> None:
    _refuse_write(self, name)


for _cls in (HookContext, BeforeRunHookContext, ModelCallHookContext, ModelChunkHookContext,
             ModelResponseHookContext, ToolCallHookContext, ToolResultHookContext, TurnCompletionHookContext,
             StatePersistenceHookContext, AfterRunHookContext):
    # Replaces the frozen dataclass's own refusal (a bare FrozenInstanceError) with one that
    # names the field and the way forward; construction uses object.__setattr__ and the
    # trusted builder the slot descriptors, so neither is affected.
    _cls.__setattr__ = _refuse_write  # type: ignore[method-assign, assignment]
    _cls.__delattr__ = _refuse_delete  # type: ignore[method-assign, assignment]
del _cls
