"""ScriptedModel: the offline, deterministic model for tutorials and tests.

Each call to the model plays the next :class:`ScriptedTurn`: reasoning chunks, text
chunks, tool calls, usage. No network, no key, same output every time.

Example:
    >>> model = ScriptedModel([
    ...     ScriptedTurn(text=["Let me ", "add."],
    ...                  tool_calls=[ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')]),
    ...     "It is 3.",
    ... ])
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable
from typing import Any, AsyncIterator, Sequence

from pydantic_core import to_jsonable_python

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from ..domain import (
    AgentMessage, ArkError, CancellationToken, ContentPart, ErrorCode, ErrorLayer, FinishReason, Role,
    ModelComplete, ModelRequest, ModelResponse, ModelStart, ReasoningDelta, StreamingEvent, TextDelta,
    ToolCall, ToolCallDelta, Usage, UsageUpdate,
)

from .openai_compat.profiles import Capabilities

__all__ = ["ScriptedModel", "ScriptedTurn"]

_FINAL_RESULT = "final_result"  # the runtime's tool for a typed answer (arknb.runtime.output)


def _chunks(value: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,) if value else ()
    return tuple(value)


class ScriptedTurn(BaseModel):
    """One scripted model answer.

    Args:
        text: the answer, as one string or a list of streamed chunks.
        reasoning: reasoning chunks streamed before the text.
        tool_calls: tool calls the model makes in this turn.
        usage: token usage to report (none by default).
        chunk_delay: seconds to wait before each chunk (to watch streaming or test Stop).
        finish_reason: defaults to ``tool_calls`` when there are calls, else ``stop``.
        error: raise this error after the chunks instead of completing (to test failures).
        output: a typed answer (a pydantic model, dataclass, dict, list, str...): played as
            the JSON text when the request asks for JSON-schema output natively, or as a
            ``final_result`` tool call when the request offers that tool (DESIGN §17). A
            scripted wrong answer is just JSON text: ``ScriptedTurn('{"temp": "warm"}')``.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    text: tuple[str, ...] = ()
    reasoning: tuple[str, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    chunk_delay: float = Field(default=0.0, ge=0.0)
    finish_reason: FinishReason | None = None
    error: ArkError | None = None
    output: Any = None
    _events: tuple | None = PrivateAttr(default=None)
    _played: dict | None = PrivateAttr(default=None)

    @field_validator("text", "reasoning", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return _chunks(value)
        return value

    def __init__(self, text: str | Sequence[str] = (), **data: object) -> None:
        super().__init__(text=text, **data)
        if self.output is not None and (self.text or self.tool_calls):
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                           "ScriptedTurn: give output= (a typed answer) or text=/tool_calls=, not both")

    def played(self, request: ModelRequest) -> ScriptedTurn:
        """The turn as played for ``request``: an ``output=`` turn becomes JSON text (native
        JSON-schema output, or no typed answer asked) or a ``final_result`` call (the tool is
        offered); any other turn is itself."""
        if self.output is None:
            return self
        tool = next((t for t in request.tools if t.name == _FINAL_RESULT), None)
        mode = "tool" if tool is not None and request.output is None else "text"
        schema = tool.parameters if mode == "tool" else request.output.json_schema if request.output else None
        # A type that is not an object is asked for under "response" (arknb.runtime.output).
        wrapped = schema is not None and list(schema.get("required") or ()) == ["response"] and \
            set(schema.get("properties") or {}) == {"response"}
        key = (mode, wrapped, request.output is not None)  # one turn may serve several runtimes
        cache = self._played if self._played is not None else {}
        self._played = cache
        if key not in cache:
            value = to_jsonable_python(self.output)
            if wrapped and not (isinstance(value, dict) and set(value) == {"response"}):
                value = {"response": value}
            if mode == "text":
                plain = isinstance(value, str) and request.output is None
                cache[key] = self.model_copy(update={"output": None, "text": (
                    value if plain else json.dumps(value, ensure_ascii=False),)})
            else:
                arguments = json.dumps(value, ensure_ascii=False)
                # A deterministic id (a replayed script gives the same transcript every time).
                digest = hashlib.sha256(arguments.encode()).hexdigest()[:12]
                call = ToolCall(id=f"call_output_{digest}", name=_FINAL_RESULT, arguments_json=arguments)
                cache[key] = self.model_copy(update={"output": None, "tool_calls": (call,)})
            cache[key]._events = None
            cache[key]._played = None
        return cache[key]

    def response(self) -> ModelResponse:
        """The complete response this turn stands for."""
        text = "".join(self.text)
        reasoning = "".join(self.reasoning)
        message = AgentMessage.model_construct(
            role=Role.ASSISTANT,
            contents=(ContentPart.from_text(text),) if text else (),
            tool_call_id=None,
            tool_calls=self.tool_calls,
            reasoning=(ContentPart.from_text(reasoning),) if reasoning else (),
            is_error=False,
        )
        finish = self.finish_reason or (FinishReason.TOOL_CALLS if self.tool_calls else FinishReason.STOP)
        return ModelResponse.model_construct(message=message, finish_reason=finish,
                                             usage=self.usage or Usage(), model="scripted")


class ScriptedModel:
    """An :class:`LLMClient` that plays scripted turns in order.

    Plain strings are text-only turns. Every request received is recorded in
    :attr:`requests`; :attr:`closed_streams` counts streams closed before they finished
    (e.g. by Stop). When the script runs out, the call raises ``script_exhausted``.
    """

    def __init__(self, turns: Iterable[ScriptedTurn | str], *, json_schema_output: bool = True) -> None:
        if isinstance(turns, (str, ScriptedTurn)) or not isinstance(turns, Iterable):
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                           f"ScriptedModel expects a list of turns, e.g. ScriptedModel(['Hello!']), got {type(turns).__name__}")
        parsed: list[ScriptedTurn] = []
        for i, turn in enumerate(turns):
            if isinstance(turn, str):
                turn = ScriptedTurn(text=turn)
            elif not isinstance(turn, ScriptedTurn):
                raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                               f"ScriptedModel turn {i} must be a ScriptedTurn or str, got {type(turn).__name__}")
            parsed.append(turn)
        self.turns: tuple[ScriptedTurn, ...] = tuple(parsed)
        self.capabilities = Capabilities(json_schema_output=bool(json_schema_output))
        """What this scripted "server" can do: with ``json_schema_output=False`` a typed
        answer is asked for with the ``final_result`` tool, as of a provider without it."""
        self.requests: list[ModelRequest] = []
        self.closed_streams = 0
        self._next = 0
        for turn in self.turns:  # build the replayed events now, not while the run streams
            if turn.output is None:
                self._prebuild(turn)

    @property
    def remaining(self) -> int:
        """How many turns are left."""
        return len(self.turns) - self._next

    @staticmethod
    def _prebuild(turn: ScriptedTurn) -> tuple[StreamingEvent, ...]:
        # Built once per turn and kept on it: a scripted stream replays the same
        # immutable events every time, across models that share the turn.
        if turn._events is not None:
            return turn._events
        events: list[StreamingEvent] = [ModelStart.model_construct(type="model_start", model="scripted")]
        events += [ReasoningDelta.model_construct(type="reasoning_delta", text=c) for c in turn.reasoning]
        events += [TextDelta.model_construct(type="text_delta", text=c) for c in turn.text]
        for call in turn.tool_calls:
            events.append(ToolCallDelta.model_construct(type="tool_call_delta", index=call.index, id=call.id,
                                                        name=call.name, arguments_delta=call.arguments_json))
        if turn.usage is not None:
            events.append(UsageUpdate.model_construct(type="usage", usage=turn.usage))
        events.append(ModelComplete.model_construct(type="model_complete", response=turn.response()))
        turn._events = tuple(events)
        return turn._events

    def _take(self, request: ModelRequest) -> int:
        if not isinstance(request, ModelRequest):
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                           f"ScriptedModel expects a ModelRequest, got {type(request).__name__}")
        self.requests.append(request)
        if self._next >= len(self.turns):
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.SCRIPT_EXHAUSTED,
                           f"ScriptedModel has no turn left: it was given {len(self.turns)} turn(s) "
                           f"and this is model call {len(self.requests)}")
        index = self._next
        self._next += 1
        return index

    async def stream(self, request: ModelRequest, *,
                     cancel: CancellationToken | None = None) -> AsyncIterator[StreamingEvent]:
        """Yield the next turn's events (``model_start`` ... ``model_complete``)."""
        index = self._take(request)
        turn = self.turns[index].played(request)
        delay = turn.chunk_delay
        events = self._prebuild(turn)
        last = len(events) - 1
        finished = False
        try:
            for i, event in enumerate(events):
                if cancel is not None and cancel.cancelled:
                    raise cancel.error()
                if delay and 0 < i < last:
                    await asyncio.sleep(delay)
                if i == last and turn.error is not None:
                    raise turn.error
                yield event
            finished = True
        finally:
            if not finished:
                self.closed_streams += 1

    async def generate(self, request: ModelRequest, *,
                       cancel: CancellationToken | None = None) -> ModelResponse:
        """The next turn's complete response, without streaming."""
        index = self._take(request)
        turn = self.turns[index].played(request)
        if turn.error is not None:
            raise turn.error
        return turn.response()
