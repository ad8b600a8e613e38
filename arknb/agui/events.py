"""Runtime events → AG-UI events: the translation of one run's stream (DESIGN §18).

The server opens every stream with ``RUN_STARTED`` (then ``MESSAGES_SNAPSHOT`` on a
thread it already knows) and closes it with exactly one ``RUN_FINISHED`` or
``RUN_ERROR``; between them, :class:`EventMapper` turns each runtime event into the
AG-UI events below, as it happens (text, reasoning and a tool call's arguments per
chunk, its result as soon as the tool returns).

====================================  ================================================================
runtime event                         AG-UI events
====================================  ================================================================
``llm.before``                        ``STEP_STARTED`` (``model:turn{n}``)
``llm.chunk`` kind ``reasoning``      ``REASONING_START`` + ``REASONING_MESSAGE_START`` (first chunk),
                                      ``REASONING_MESSAGE_CONTENT`` (each chunk)
``llm.chunk`` kind ``text``           ``REASONING_MESSAGE_END`` + ``REASONING_END`` (if open),
                                      ``TEXT_MESSAGE_START`` (first chunk), ``TEXT_MESSAGE_CONTENT``
``llm.chunk`` kind ``tool_call``      ends the open reasoning / text message, ``TOOL_CALL_START``
                                      (``parentMessageId``: the message; once the call's id and name
                                      are known), ``TOOL_CALL_ARGS`` (each arguments fragment)
``llm.after``                         ends the open reasoning / text message (a turn whose text
                                      streamed nothing, e.g. a hook's ``respond``, sends its text
                                      whole here); ``TOOL_CALL_END`` per streamed call (same id);
                                      a call that did not stream: ``TOOL_CALL_START`` +
                                      ``TOOL_CALL_ARGS`` + ``TOOL_CALL_END``; ``STEP_FINISHED``
``tool.before``                       ``STEP_STARTED`` (``tool:{name}:{call_id}``)
``tool.after``                        ``TOOL_CALL_RESULT`` (not for a call that deferred itself) +
                                      ``STEP_FINISHED``
``tool.denied``                       ``TOOL_CALL_RESULT`` (the denial the model gets)
``hook.decision``, ``plan.updated``   ``CUSTOM`` named ``arknb.hook.decision`` / ``arknb.plan.updated``
run ends ``completed`` / ``stopped``  ``RUN_FINISHED`` (outcome ``success``; ``result``: stop reason, text)
run ends ``awaiting_approval``        ``RUN_FINISHED`` outcome ``interrupt``: one interrupt per pending
                                      item (approval, in-doubt, plan, loop, elicitation, human, any
                                      ``ApprovalKind``); client-declared tools' calls only:
                                      outcome ``success`` with ``pendingToolCallIds``
run ends ``cancelled``                ``RUN_FINISHED`` outcome ``cancelled``
run ends ``suspended``                ``RUN_FINISHED`` outcome ``success`` (``result.stopReason``)
run ends ``failed`` / ``aborted`` /   ``RUN_ERROR`` with the ``ArkError`` code and message
``loop_detected`` / ``max_turns``
a refused request (bad resume, new     ``RUN_ERROR`` with the ``ArkError`` code; nothing runs
message while an interrupt is open)
====================================  ================================================================

A burst of events published before the server could write goes out in one write, with
adjacent text (or reasoning) fragments of one message joined into one content event.

Other runtime events (state saves, approval bookkeeping, a sub-agent's republished
events) have no AG-UI counterpart and are not sent. Message ids: a streamed assistant
message is ``{run_id}:{turn}``; in ``MESSAGES_SNAPSHOT`` history messages are
``m{index}`` (a snapshot replaces what the client holds).
"""

from __future__ import annotations

import time
from typing import Any, Iterator

from ag_ui.core import (
    BaseEvent, CustomEvent, ReasoningEndEvent, ReasoningMessageContentEvent, ReasoningMessageEndEvent,
    ReasoningMessageStartEvent, ReasoningStartEvent, StepFinishedEvent, StepStartedEvent, TextMessageContentEvent,
    TextMessageEndEvent, TextMessageStartEvent, ToolCallArgsEvent, ToolCallEndEvent, ToolCallResultEvent,
    ToolCallStartEvent,
)

from arknb.domain.invocation import CALL_DEFERRED
from arknb.events import AgentEvent, EventTypes

__all__ = ["EventMapper", "now_ms"]

_CUSTOM = (EventTypes.HOOK_DECISION, EventTypes.PLAN_UPDATED)


def now_ms() -> int:
    """Milliseconds since the epoch (what every AG-UI SDK puts in ``timestamp``)."""
    return int(time.time() * 1000)


def _plain(value: Any) -> Any:
    thaw = getattr(value, "thaw", None)
    return thaw() if callable(thaw) else value


def _text_of(result: Any) -> str:
    """The text of a result or message payload (``{"text": ...}`` or ``{"contents": [...]}``)."""
    if not isinstance(result, dict):
        return "" if result is None else str(result)
    if isinstance(result.get("text"), str):
        return result["text"]
    return "".join(part.get("text") or "" for part in result.get("contents") or () if isinstance(part, dict))


class EventMapper:
    """Translates one run's runtime events into AG-UI events (stateful: open messages).

    Args:
        run_id: the AG-UI run id (names the streamed messages).
    """

    def __init__(self, run_id: str) -> None:
        self._run_id = run_id
        self._text_id: str | None = None
        self._reasoning_id: str | None = None
        self._streamed_text = False
        self._turn = 0
        self._calls: dict[int, str] = {}  # this turn's streamed tool calls: index -> id (START sent)
        self._waiting: dict[int, str] = {}  # arguments streamed before the call's id was known

    def translate(self, event: AgentEvent) -> Iterator[BaseEvent]:
        """The AG-UI events for ``event`` (none for events that have no counterpart)."""
        if event.parent_run_id is not None:  # a sub-agent's event, republished on the parent's bus
            return
        kind, payload = event.type, event.payload
        if kind == EventTypes.LLM_CHUNK:
            chunk = payload.get("kind")
            if chunk == "reasoning":
                yield from self._reasoning(payload.get("text") or "")
            elif chunk == "tool_call":
                yield from self._tool_call(payload)
            else:
                yield from self._text(payload.get("text") or "")
        elif kind == EventTypes.LLM_BEFORE:
            self._turn = int(payload.get("turn") or self._turn + 1)
            self._streamed_text = False
            self._calls, self._waiting = {}, {}
            yield StepStartedEvent(step_name=f"model:turn{self._turn}", timestamp=now_ms())
        elif kind == EventTypes.LLM_AFTER:
            yield from self._after(payload)
        elif kind == EventTypes.TOOL_BEFORE:
            call = payload.get("call") or {}
            yield StepStartedEvent(step_name=f"tool:{call.get('name')}:{call.get('id')}", timestamp=now_ms())
        elif kind == EventTypes.TOOL_AFTER:
            call = payload.get("call") or {}
            result = payload.get("result") or {}
            if result.get("error_code") != CALL_DEFERRED:  # a call handed to a person or the client: unanswered
                yield self._result(call, result)
            yield StepFinishedEvent(step_name=f"tool:{call.get('name')}:{call.get('id')}", timestamp=now_ms())
        elif kind == EventTypes.TOOL_DENIED:
            yield self._result(payload.get("call") or {}, payload.get("result"))
        elif kind in _CUSTOM:
            yield CustomEvent(name=f"arknb.{kind}", value=_plain(payload), timestamp=now_ms())

    def translate_all(self, events: list[AgentEvent]) -> list[BaseEvent]:
        """The AG-UI events for a burst of runtime events, adjacent text (or reasoning)
        chunks joined into one content event before any event object is built."""
        out: list[BaseEvent] = []
        i, n = 0, len(events)
        while i < n:
            event = events[i]
            i += 1
            if event.type == EventTypes.LLM_CHUNK and event.parent_run_id is None:
                kind = event.payload.get("kind")
                if kind == "text" or kind == "reasoning":
                    parts = [event.payload.get("text") or ""]
                    while i < n:
                        following = events[i]
                        if (following.type != EventTypes.LLM_CHUNK or following.parent_run_id is not None
                                or following.payload.get("kind") != kind):
                            break
                        parts.append(following.payload.get("text") or "")
                        i += 1
                    out.extend(self._text("".join(parts)) if kind == "text" else self._reasoning("".join(parts)))
                    continue
            out.extend(self.translate(event))
        return out

    def close(self) -> Iterator[BaseEvent]:
        """End whatever message is still open (a run that stopped mid-stream)."""
        yield from self._end_reasoning()
        yield from self._end_text()

    # -- pieces ------------------------------------------------------------------------

    def _message_id(self) -> str:
        return f"{self._run_id}:{self._turn}"

    def _reasoning(self, delta: str) -> Iterator[BaseEvent]:
        if not delta:
            return
        if self._reasoning_id is None:
            self._reasoning_id = f"{self._message_id()}:reasoning"
            yield ReasoningStartEvent(message_id=self._reasoning_id, timestamp=now_ms())
            yield ReasoningMessageStartEvent(message_id=self._reasoning_id, timestamp=now_ms())
        yield ReasoningMessageContentEvent(message_id=self._reasoning_id, delta=delta)

    def _text(self, delta: str) -> Iterator[BaseEvent]:
        if not delta:
            return
        yield from self._end_reasoning()
        if self._text_id is None:
            self._text_id = self._message_id()
            yield TextMessageStartEvent(message_id=self._text_id, role="assistant", timestamp=now_ms())
        self._streamed_text = True
        yield TextMessageContentEvent(message_id=self._text_id, delta=delta)

    def _end_reasoning(self) -> Iterator[BaseEvent]:
        if self._reasoning_id is not None:
            yield ReasoningMessageEndEvent(message_id=self._reasoning_id, timestamp=now_ms())
            yield ReasoningEndEvent(message_id=self._reasoning_id, timestamp=now_ms())
            self._reasoning_id = None

    def _end_text(self) -> Iterator[BaseEvent]:
        if self._text_id is not None:
            yield TextMessageEndEvent(message_id=self._text_id, timestamp=now_ms())
            self._text_id = None

    def _after(self, payload: Any) -> Iterator[BaseEvent]:
        message = payload.get("message") or {}  # read as it is (a frozen dict): nothing copied
        yield from self._end_reasoning()
        if not self._streamed_text:
            # Nothing streamed (a hook answered, or dropped the chunks): the text that entered history.
            yield from self._text(_text_of(message))
        yield from self._end_text()
        parent = self._message_id()
        streamed = set(self._calls.values())
        for call in message.get("tool_calls") or ():
            if call["id"] in streamed:  # its START and ARGS went out as the model streamed it
                streamed.discard(call["id"])
                yield ToolCallEndEvent(tool_call_id=call["id"], timestamp=now_ms())
                continue
            yield ToolCallStartEvent(tool_call_id=call["id"], tool_call_name=call["name"], parent_message_id=parent,
                                     timestamp=now_ms())
            yield ToolCallArgsEvent(tool_call_id=call["id"], delta=call.get("arguments_json") or "{}")
            yield ToolCallEndEvent(tool_call_id=call["id"], timestamp=now_ms())
        for call_id in streamed:  # streamed, then not in the message (a hook changed it): closed all the same
            yield ToolCallEndEvent(tool_call_id=call_id, timestamp=now_ms())
        self._calls, self._waiting = {}, {}
        yield StepFinishedEvent(step_name=f"model:turn{self._turn}", timestamp=now_ms())

    def _tool_call(self, payload: Any) -> Iterator[BaseEvent]:
        """A tool-call delta: ``TOOL_CALL_START`` once its id and name are known (the text
        message, if open, ends first), then ``TOOL_CALL_ARGS`` per arguments fragment."""
        index, delta = payload.get("index") or 0, payload.get("text") or ""
        call_id = self._calls.get(index)
        if call_id is None:
            call_id, name = payload.get("call_id"), payload.get("name")
            if not call_id or not name:  # not yet announced: keep the arguments for the start
                self._waiting[index] = self._waiting.get(index, "") + delta
                return
            yield from self._end_reasoning()
            yield from self._end_text()
            self._calls[index] = call_id
            yield ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name, parent_message_id=self._message_id(),
                                     timestamp=now_ms())
            delta = self._waiting.pop(index, "") + delta
        if delta:
            yield ToolCallArgsEvent(tool_call_id=call_id, delta=delta)

    def _result(self, call: Any, result: Any) -> BaseEvent:
        call_id = str(call.get("id"))
        return ToolCallResultEvent(message_id=f"{call_id}:result", tool_call_id=call_id, role="tool",
                                   content=_text_of(result), timestamp=now_ms())
