"""Cases and case results: what a suite runs, and what its graders look at (DESIGN §11)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from pydantic_core import to_jsonable_python

from ..domain import AgentMessage, ArkError, ToolCall, Usage, invalid_argument
from ..events import AgentEvent, EventTypes
from ..runtime import AgentRunResult, StopReason

if TYPE_CHECKING:
    from .simulated_user import SimulatedUser

__all__ = ["Case", "CaseResult", "tool_calls_of"]


@dataclass(frozen=True, slots=True, init=False)
class Case:
    """One thing to try: an input (or a conversation), its graders, and free metadata.

    Args:
        name: unique within a suite (reports and comparisons match cases by name).
        input: the user's message, or a list of user turns run one after the other on
            the same runtime (a multi-turn conversation). May be ``None`` when ``user``
            opens the conversation.
        graders: the checks to apply (``ev.contains(...)``, ``@ev.grader`` functions, ...).
        metadata: JSON-ready values of your own (a reference answer, tags); stored in reports.
        user: an :func:`~arknb.eval.simulated_user` that plays the user after the scripted
            turns, for up to its ``max_user_turns``.

    Example:
        >>> ev.Case("capital", "What is the capital of France?", graders=[ev.contains("Paris")])
        Case('capital', 1 turn(s), graders=["contains('Paris')"])
    """

    name: str
    input: str | tuple[str, ...] | None
    graders: tuple[Any, ...]
    metadata: Mapping[str, Any]
    user: SimulatedUser | None

    def __init__(self, name: str, input: str | Iterable[str] | None, graders: Iterable[Any] = (),
                 metadata: Mapping[str, Any] | None = None, *, user: SimulatedUser | None = None) -> None:
        if not isinstance(name, str) or not name.strip():
            raise invalid_argument(f"Case name must be a non-empty string, got {name!r}")
        if input is None:
            if user is None:
                raise invalid_argument(f"Case {name!r} needs an input (or a simulated user to open the conversation)")
        elif isinstance(input, str):
            if not input.strip():
                raise invalid_argument(f"Case {name!r} has an empty input")
        elif isinstance(input, Iterable) and not isinstance(input, (bytes, Mapping)):
            turns = tuple(input)
            if not turns or not all(isinstance(t, str) and t.strip() for t in turns):
                raise invalid_argument(f"Case {name!r}: a multi-turn input is a non-empty list of non-empty strings")
            input = turns
        else:
            raise invalid_argument(f"Case {name!r}: input must be a string or a list of strings, "
                                   f"got {type(input).__name__}")
        if isinstance(graders, (str, bytes)) or not isinstance(graders, Iterable):
            raise invalid_argument(f"Case {name!r}: graders must be a list of graders, got {type(graders).__name__}")
        graders = tuple(graders)
        for i, g in enumerate(graders):
            if not callable(g):
                raise invalid_argument(f"Case {name!r}: graders[{i}] is not a grader (an object with a name and "
                                       f"async __call__(case, result)), got {type(g).__name__}")
        metadata = dict(metadata or {})
        try:
            json.dumps(metadata)
        except (TypeError, ValueError) as exc:
            raise invalid_argument(f"Case {name!r}: metadata must be JSON-ready (it is stored in reports): {exc}") from None
        if user is not None and not callable(getattr(user, "next_message", None)):
            raise invalid_argument(f"Case {name!r}: user must come from ev.simulated_user(model, persona), "
                                   f"got {type(user).__name__}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "input", input)
        object.__setattr__(self, "graders", graders)
        object.__setattr__(self, "metadata", MappingProxyType(metadata))
        object.__setattr__(self, "user", user)

    @classmethod
    def _saved(cls, name: str, input: Any, metadata: Mapping[str, Any]) -> Case:
        """A case as a report remembers it (no graders, no simulated user), for rescoring."""
        case = object.__new__(cls)
        turns = input if isinstance(input, str) or input is None else tuple(input)
        for key, value in (("name", name), ("input", turns), ("graders", ()),
                           ("metadata", MappingProxyType(dict(metadata))), ("user", None)):
            object.__setattr__(case, key, value)
        return case

    @property
    def turns(self) -> tuple[str, ...]:
        """The scripted user turns, in order (empty when the simulated user opens)."""
        if self.input is None:
            return ()
        return (self.input,) if isinstance(self.input, str) else self.input

    def __repr__(self) -> str:
        names = [getattr(g, "name", type(g).__name__) for g in self.graders]
        extra = ", simulated user" if self.user is not None else ""
        return f"Case({self.name!r}, {len(self.turns)} turn(s){extra}, graders={names})"


def tool_calls_of(events: Iterable[AgentEvent]) -> tuple[ToolCall, ...]:
    """The tool calls the model made, in order (from each accepted ``llm.after``)."""
    calls: list[ToolCall] = []
    for event in events:
        if event.type != EventTypes.LLM_AFTER:
            continue
        payload = event.payload
        if payload.get("retried") or payload.get("purpose"):
            continue  # a hook threw this answer away and asked again, or an extension's own call
        message = payload.get("message") or {}
        for raw in message.get("tool_calls") or ():
            try:
                calls.append(ToolCall.model_validate(raw))
            except ValueError:
                continue
    return tuple(calls)


@dataclass(frozen=True, slots=True)
class CaseResult:
    """What one run of a case produced; what a grader is given.

    Attributes:
        run: the last :class:`~arknb.runtime.AgentRunResult` (``None`` if the case
            raised before any run finished).
        runs: every run of a multi-turn case, in order.
        events: the case's ``AgentEvent`` transcript (all its runs).
        tool_calls: the tool calls the model made, in order.
        final_text: the last run's answer.
        latency_s: wall time of the runs (not the runtime's set-up, nor grading).
        usage: tokens of all runs.
        error: what escaped when the case raised (make_runtime, a timeout, a bug).
        repeat: which repetition this is (0-based) with ``repeats > 1``.
    """

    run: AgentRunResult | None
    events: tuple[AgentEvent, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    final_text: str = ""
    latency_s: float = 0.0
    usage: Usage = field(default_factory=Usage)
    runs: tuple[AgentRunResult, ...] = ()
    error: str | None = None
    repeat: int = 0

    @property
    def turns(self) -> int:
        """Model calls over all runs."""
        return sum(r.turns for r in self.runs)

    @property
    def stop_reason(self) -> StopReason | None:
        """How the last run ended."""
        return self.run.stop_reason if self.run is not None else None

    @property
    def output(self) -> Any:
        """The last run's typed answer as JSON-ready data (DESIGN §17), or None: from the
        run, or (a result rebuilt from a report) from its ``agent.success`` event."""
        if self.run is not None and self.run.output is not None:
            return to_jsonable_python(self.run.output)
        for event in reversed(self.events):
            if event.type == "agent.success":
                value = event.payload.get("output")
                return value.thaw() if hasattr(value, "thaw") else value
        return None

    @classmethod
    def build(cls, runs: list[AgentRunResult], events: list[AgentEvent], latency_s: float,
              error: str | None = None, repeat: int = 0) -> CaseResult:
        """Assemble a result from a case's runs and events."""
        usage = Usage()
        for r in runs:
            usage = usage + r.usage
        last = runs[-1] if runs else None
        return cls(run=last, events=tuple(events), tool_calls=tool_calls_of(events),
                   final_text=last.text if last is not None else "", latency_s=latency_s, usage=usage,
                   runs=tuple(runs), error=error, repeat=repeat)

    @classmethod
    def saved(cls, *, stop_reason: str | None, final_text: str, turns: int, usage: Usage, latency_s: float,
              error: str | None, run_error: dict[str, Any] | None, events: list[AgentEvent],
              repeat: int) -> CaseResult:
        """A result rebuilt from a report (for :func:`~arknb.eval.rescore`): one run summarising the case."""
        run = None
        if stop_reason is not None:
            err = None
            if run_error:
                err = ArkError(run_error.get("layer", "runtime"), run_error.get("code", "unknown"),
                               run_error.get("message", ""))
            run = AgentRunResult(run_id="", stop_reason=StopReason(stop_reason),
                                 final_message=AgentMessage.assistant(final_text) if final_text else None,
                                 error=err, usage=usage, turns=turns)
        return cls(run=run, events=tuple(events), tool_calls=tool_calls_of(events), final_text=final_text,
                   latency_s=latency_s, usage=usage, runs=(run,) if run is not None else (), error=error,
                   repeat=repeat)
