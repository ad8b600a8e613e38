"""Hook results: what a decision hook returns, built only through factories (seed 000 §4).

Each slot has its own result class with an action enum. Returning ``None`` from a
notebook function hook means "proceed unchanged".

Example:
    >>> r = ToolCallHookResult.deny(ToolResult.from_text("refused", is_error=True), "policy")
    >>> r.action, r.reason
    (<ToolCallAction.DENY: 'deny'>, 'policy')
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Iterable

from ..domain import (
    AgentMessage, ArkError, ContentPart, ModelRequest, ModelResponse, ToolCall, ToolResult, invalid_argument,
)
from ..domain.trusted import trusted_builder

__all__ = [
    "BeforeRunAction", "BeforeRunHookResult", "ModelCallAction", "ModelCallHookResult",
    "ModelChunkAction", "ModelChunkHookResult", "ModelResponseAction", "ModelResponseHookResult",
    "PersistAction", "StatePersistenceHookResult", "ToolCallAction", "ToolCallHookResult",
    "ToolResultAction", "ToolResultHookResult", "TurnCompletionAction", "TurnCompletionHookResult",
]

_FACTORY = object()
_TRUSTED = object()


@dataclass(frozen=True, slots=True)
class _Result:
    action: Any
    reason: str | None = None
    error: ArkError | None = None
    hook: str | None = None
    """The hook whose decision this is (set by the pipeline)."""
    _token: object = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self._token is _TRUSTED:
            return  # built by the pipeline from values already checked
        if self._token is not _FACTORY:
            raise TypeError(f"build {type(self).__name__} with its factory classmethods "
                            f"(e.g. {type(self).__name__}.proceed(...)), not the constructor")
        _check_fields(self)

    def by(self, hook: str):
        """A copy attributed to ``hook`` (used by the pipeline)."""
        return dataclasses.replace(self, hook=hook, _token=_TRUSTED)

    @classmethod
    def _trusted(cls, action: Any, **values: Any):
        """For the pipeline only: its own outcome, from values the runtime built or a
        factory already checked (no second check)."""
        return cls(action, _token=_TRUSTED, **values)

    @property
    def short_circuits(self) -> bool:
        """True if this outcome stops the later hooks of the slot."""
        return self.action not in _CONTINUING


class BeforeRunAction(StrEnum):
    PROCEED = "proceed"
    ABORT = "abort"


@dataclass(frozen=True, slots=True)
class BeforeRunHookResult(_Result):
    """``proceed(input)`` (optionally rewritten) or ``abort``."""

    input: tuple[AgentMessage, ...] | None = None

    @classmethod
    def proceed(cls, input: Any = None) -> BeforeRunHookResult:
        """Go on with ``input`` (None: unchanged), in any form ``run()`` takes: a str (one
        user message), an ``AgentMessage``, a ``ContentPart``, a list of messages, or a
        list of str/``ContentPart`` parts of one user message."""
        return cls(BeforeRunAction.PROCEED, input=None if input is None else _run_input(input), _token=_FACTORY)

    @classmethod
    def abort(cls, reason: str | None = None, error: ArkError | None = None) -> BeforeRunHookResult:
        return cls(BeforeRunAction.ABORT, reason=reason, error=error, _token=_FACTORY)


class ModelCallAction(StrEnum):
    PROCEED = "proceed"
    RESPOND = "respond"
    ABORT = "abort"


@dataclass(frozen=True, slots=True)
class ModelCallHookResult(_Result):
    """``proceed(request)``, ``respond(response)`` (skip the model), or ``abort``."""

    request: ModelRequest | None = None
    response: ModelResponse | None = None

    @classmethod
    def proceed(cls, request: ModelRequest | None = None) -> ModelCallHookResult:
        return cls(ModelCallAction.PROCEED, request=request, _token=_FACTORY)

    @classmethod
    def respond(cls, response: ModelResponse, reason: str | None = None) -> ModelCallHookResult:
        if not isinstance(response, ModelResponse):
            raise invalid_argument(f"respond() needs response: a ModelResponse, got {type(response).__name__}")
        return cls(ModelCallAction.RESPOND, response=response, reason=reason, _token=_FACTORY)

    @classmethod
    def abort(cls, reason: str | None = None, error: ArkError | None = None) -> ModelCallHookResult:
        return cls(ModelCallAction.ABORT, reason=reason, error=error, _token=_FACTORY)


class ModelChunkAction(StrEnum):
    PROCEED = "proceed"
    DROP = "drop"
    HOLD = "hold"
    ABORT = "abort"


@dataclass(frozen=True, slots=True)
class ModelChunkHookResult(_Result):
    """``proceed(text, reasoning)``, ``drop``, ``hold`` (re-offer joined with the next chunk), or ``abort``."""

    text: str | None = None
    reasoning: str | None = None

    @classmethod
    def proceed(cls, text: str | None = None, reasoning: str | None = None) -> ModelChunkHookResult:
        return cls(ModelChunkAction.PROCEED, text=text, reasoning=reasoning, _token=_FACTORY)

    @classmethod
    def drop(cls, reason: str | None = None) -> ModelChunkHookResult:
        return cls(ModelChunkAction.DROP, reason=reason, _token=_FACTORY)

    @classmethod
    def hold(cls, reason: str | None = None) -> ModelChunkHookResult:
        return cls(ModelChunkAction.HOLD, reason=reason, _token=_FACTORY)

    @classmethod
    def abort(cls, reason: str | None = None, error: ArkError | None = None) -> ModelChunkHookResult:
        return cls(ModelChunkAction.ABORT, reason=reason, error=error, _token=_FACTORY)

    @classmethod
    def _trusted_proceed(cls, text: str, reasoning: str) -> ModelChunkHookResult:
        """For the pipeline only: the per-chunk outcome, built without keyword handling."""
        return _build_chunk_result(ModelChunkAction.PROCEED, None, None, None, _TRUSTED, text, reasoning)


_build_chunk_result = trusted_builder(ModelChunkHookResult)


class ModelResponseAction(StrEnum):
    PROCEED = "proceed"
    RETRY = "retry"
    ABORT = "abort"


@dataclass(frozen=True, slots=True)
class ModelResponseHookResult(_Result):
    """``proceed(response)``, ``retry`` (call the model again, bounded), or ``abort``."""

    response: ModelResponse | None = None

    @classmethod
    def proceed(cls, response: ModelResponse | None = None) -> ModelResponseHookResult:
        return cls(ModelResponseAction.PROCEED, response=response, _token=_FACTORY)

    @classmethod
    def retry(cls, reason: str | None = None) -> ModelResponseHookResult:
        return cls(ModelResponseAction.RETRY, reason=reason, _token=_FACTORY)

    @classmethod
    def abort(cls, reason: str | None = None, error: ArkError | None = None) -> ModelResponseHookResult:
        return cls(ModelResponseAction.ABORT, reason=reason, error=error, _token=_FACTORY)


class ToolCallAction(StrEnum):
    PROCEED = "proceed"
    DENY = "deny"
    DEFER = "defer"
    ABORT = "abort"


@dataclass(frozen=True, slots=True)
class ToolCallHookResult(_Result):
    """``proceed(call)``, ``deny(synthetic_result, reason)``, ``defer(reason)`` (ask a human), or ``abort``."""

    call: ToolCall | None = None
    synthetic_result: ToolResult | None = None
    kind: str | None = None
    """For ``defer``: the kind of pending item (an approval kind a runtime extension
    installed, e.g. ``"plan"``); None is a plain tool approval."""
    detail: dict[str, Any] | None = None
    """For ``defer``: JSON-ready data the item carries for its kind (saved with the batch)."""

    @classmethod
    def proceed(cls, call: ToolCall | None = None) -> ToolCallHookResult:
        return cls(ToolCallAction.PROCEED, call=call, _token=_FACTORY)

    @classmethod
    def deny(cls, synthetic_result: ToolResult | None = None, reason: str | None = None) -> ToolCallHookResult:
        return cls(ToolCallAction.DENY, synthetic_result=synthetic_result, reason=reason, _token=_FACTORY)

    @classmethod
    def defer(cls, reason: str | None = None, *, kind: str | None = None,
              detail: dict[str, Any] | None = None) -> ToolCallHookResult:
        """Ask a person. ``kind`` and ``detail`` let a runtime extension pause with an item of
        its own kind (DESIGN §14); a plain hook leaves them out."""
        return cls(ToolCallAction.DEFER, reason=reason, kind=kind, detail=detail, _token=_FACTORY)

    @classmethod
    def abort(cls, reason: str | None = None, error: ArkError | None = None) -> ToolCallHookResult:
        return cls(ToolCallAction.ABORT, reason=reason, error=error, _token=_FACTORY)


class ToolResultAction(StrEnum):
    PROCEED = "proceed"
    STOP = "stop"
    ABORT = "abort"


@dataclass(frozen=True, slots=True)
class ToolResultHookResult(_Result):
    """``proceed(result, injected_messages)``, ``stop(...)`` (end after this batch), or ``abort``."""

    result: ToolResult | None = None
    injected_messages: tuple[AgentMessage, ...] = ()

    @classmethod
    def proceed(cls, result: ToolResult | None = None,
                injected_messages: Iterable[AgentMessage] = ()) -> ToolResultHookResult:
        return cls(ToolResultAction.PROCEED, result=result, injected_messages=tuple(injected_messages),
                   _token=_FACTORY)

    @classmethod
    def stop(cls, result: ToolResult | None = None, injected_messages: Iterable[AgentMessage] = (),
             reason: str | None = None) -> ToolResultHookResult:
        return cls(ToolResultAction.STOP, result=result, injected_messages=tuple(injected_messages),
                   reason=reason, _token=_FACTORY)

    @classmethod
    def abort(cls, reason: str | None = None, error: ArkError | None = None) -> ToolResultHookResult:
        return cls(ToolResultAction.ABORT, reason=reason, error=error, _token=_FACTORY)


class TurnCompletionAction(StrEnum):
    ACCEPT = "accept"
    CONTINUE_RUN = "continue_run"
    ABORT = "abort"


@dataclass(frozen=True, slots=True)
class TurnCompletionHookResult(_Result):
    """``accept``, ``continue_run(messages)`` (another turn even without tool calls), or ``abort``."""

    messages: tuple[AgentMessage, ...] = ()

    @classmethod
    def accept(cls) -> TurnCompletionHookResult:
        return cls(TurnCompletionAction.ACCEPT, _token=_FACTORY)

    @classmethod
    def continue_run(cls, messages: Iterable[AgentMessage] = (), reason: str | None = None) -> TurnCompletionHookResult:
        return cls(TurnCompletionAction.CONTINUE_RUN, messages=tuple(messages), reason=reason, _token=_FACTORY)

    @classmethod
    def abort(cls, reason: str | None = None, error: ArkError | None = None) -> TurnCompletionHookResult:
        return cls(TurnCompletionAction.ABORT, reason=reason, error=error, _token=_FACTORY)


class PersistAction(StrEnum):
    PROCEED = "proceed"
    SKIP = "skip"
    ABORT = "abort"


@dataclass(frozen=True, slots=True)
class StatePersistenceHookResult(_Result):
    """``proceed``, ``skip`` (ignored for mandatory saves), or ``abort``."""

    @classmethod
    def proceed(cls) -> StatePersistenceHookResult:
        return cls(PersistAction.PROCEED, _token=_FACTORY)

    @classmethod
    def skip(cls, reason: str | None = None) -> StatePersistenceHookResult:
        return cls(PersistAction.SKIP, reason=reason, _token=_FACTORY)

    @classmethod
    def abort(cls, reason: str | None = None, error: ArkError | None = None) -> StatePersistenceHookResult:
        return cls(PersistAction.ABORT, reason=reason, error=error, _token=_FACTORY)


_CONTINUING = frozenset({"proceed", "accept"})

# What each optional field must hold when given; a tuple type means "a sequence of".
_FIELD_TYPES: dict[str, Any] = {
    "reason": str, "error": ArkError, "hook": str, "input": (AgentMessage,), "request": ModelRequest,
    "response": ModelResponse, "text": str, "reasoning": str, "call": ToolCall, "synthetic_result": ToolResult,
    "result": ToolResult, "injected_messages": (AgentMessage,), "messages": (AgentMessage,),
    "kind": str, "detail": dict,
}


_CHECKED_FIELDS: dict[type, tuple[tuple[str, Any], ...]] = {}


_RUN_INPUT_FORMS = ("a str, an AgentMessage, a ContentPart, a list of AgentMessage, or a list of str/ContentPart "
                    "parts of one user message (the forms run() takes)")


def _run_input(value: Any) -> tuple[AgentMessage, ...]:
    """``value`` as the messages of a run's input (what ``run()`` accepts), or a refusal
    that says what to pass."""
    where = "BeforeRunHookResult.proceed(input)"
    if isinstance(value, str):
        if not value.strip():
            raise invalid_argument(f"{where} got an empty str; pass the new input text, or proceed() to keep it")
        return (AgentMessage.user(value),)
    if isinstance(value, AgentMessage):
        return (value,)
    if isinstance(value, ContentPart):
        return (AgentMessage.user([value]),)
    if isinstance(value, (list, tuple)) and value:
        items = list(value)
        if all(isinstance(item, AgentMessage) for item in items):
            return tuple(items)
        if all(isinstance(item, (str, ContentPart)) for item in items):
            return (AgentMessage.user(items),)
        kinds = ", ".join(sorted({type(item).__name__ for item in items}))
        raise invalid_argument(f"{where} takes {_RUN_INPUT_FORMS}; got a list mixing {kinds}")
    got = "an empty list" if isinstance(value, (list, tuple)) else type(value).__name__
    raise invalid_argument(f"{where} takes {_RUN_INPUT_FORMS}; got {got}")


def _check_fields(result: _Result) -> None:
    """A wrong type given to a factory fails here, naming the field, not later inside the run."""
    cls = type(result)
    checked = _CHECKED_FIELDS.get(cls)
    if checked is None:
        checked = tuple((f, t) for f, t in _FIELD_TYPES.items() if f in cls.__dataclass_fields__)
        _CHECKED_FIELDS[cls] = checked
    name = cls.__name__
    for field_name, expected in checked:
        value = getattr(result, field_name)
        if value is None:
            continue
        if isinstance(expected, tuple):
            bad = [type(v).__name__ for v in value if not isinstance(v, expected[0])]
            if bad:
                raise invalid_argument(f"{name} {field_name} must hold {expected[0].__name__} values, "
                                       f"got {', '.join(bad)}")
        elif not isinstance(value, expected):
            raise invalid_argument(f"{name} {field_name} must be a {expected.__name__} or None, "
                                   f"got {type(value).__name__}")
