"""Chat Completions chunks → :data:`StreamingEvent` values and one :class:`ModelResponse`.

:class:`StreamAssembler` is fed decoded chunk objects in order and returns the events
each produces; :meth:`StreamAssembler.finish` returns the whole response. It does no
I/O, so it is tested directly on byte streams split anywhere.

Reasoning is normalised into ``reasoning_delta`` whichever way the server sends it:
``reasoning_content`` (DeepSeek, Zhipu), ``reasoning`` (Ollama, vLLM) or ``<think>…</think>``
at the start of the content (local models), even when a tag is split across chunks.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from ...domain import (
    AgentMessage, ArkError, ContentPart, ErrorLayer, FinishReason, ModelResponse, ReasoningDelta, Retryability,
    Role, TextDelta, ToolCall, ToolCallDelta, Usage, UsageUpdate,
)
from .wire import INTERRUPTED_FINISH_REASONS, map_finish_reason, map_usage

__all__ = ["StreamAssembler", "ThinkTagSplitter", "ToolCallAccumulator"]

_text = TextDelta.model_construct
_reasoning = ReasoningDelta.model_construct

_OPEN, _CLOSE = "<think>", "</think>"
_START, _THINK, _AFTER, _PLAIN = range(4)


def _held_prefix(buffer: str, tag: str) -> int:
    """Length of the longest suffix of ``buffer`` that is a proper prefix of ``tag``."""
    for size in range(min(len(tag) - 1, len(buffer)), 0, -1):
        if buffer.endswith(tag[:size]):
            return size
    return 0


class ThinkTagSplitter:
    """Splits ``<think>…</think>`` at the start of the content into reasoning.

    ``feed(text)`` returns ``[(is_reasoning, piece), ...]``. A tag is only recognised
    at the very start (after whitespace): a model quoting ``<think>`` in its answer
    is left alone. Whitespace right after ``</think>`` is dropped.

    Example:
        >>> s = ThinkTagSplitter()
        >>> s.feed("<thi") + s.feed("nk>hmm</th") + s.feed("ink>\\n\\nYes") + s.flush()
        [(True, 'hmm'), (False, 'Yes')]
    """

    __slots__ = ("_state", "_held")

    def __init__(self) -> None:
        self._state = _START
        self._held = ""

    def feed(self, text: str) -> list[tuple[bool, str]]:
        state = self._state
        if state == _PLAIN:
            return [(False, text)] if text else []
        out: list[tuple[bool, str]] = []
        buffer = self._held + text
        self._held = ""
        while buffer:
            if state == _START:
                stripped = buffer.lstrip()
                if not stripped:
                    self._held = buffer          # leading whitespace: wait and see
                    break
                if stripped.startswith(_OPEN):
                    buffer, state = stripped[len(_OPEN):], _THINK
                    continue
                if _OPEN.startswith(stripped):
                    self._held = buffer          # maybe the start of "<think>"
                    break
                out.append((False, buffer))
                state = _PLAIN
                break
            if state == _THINK:
                at = buffer.find(_CLOSE)
                if at >= 0:
                    if at:
                        out.append((True, buffer[:at]))
                    buffer, state = buffer[at + len(_CLOSE):], _AFTER
                    continue
                keep = _held_prefix(buffer, _CLOSE)
                if len(buffer) > keep:
                    out.append((True, buffer[:len(buffer) - keep]))
                self._held = buffer[len(buffer) - keep:]
                break
            # _AFTER: drop the whitespace that separates reasoning from the answer
            buffer = buffer.lstrip()
            if buffer:
                out.append((False, buffer))
                state = _PLAIN
            break
        self._state = state
        return out

    def flush(self) -> list[tuple[bool, str]]:
        """What is still held back, at the end of the stream."""
        held, self._held = self._held, ""
        if not held:
            return []
        if self._state == _THINK:
            return [(True, held)]
        if self._state == _START and held.strip():
            return [(False, held)]
        return []


class ToolCallAccumulator:
    """Tool-call deltas accumulated by ``index`` into complete :class:`ToolCall` values.

    The id and name usually arrive once and the arguments over many deltas; a server
    that repeats the id and name on every delta, sends a whole call in one delta, or
    sends the arguments as an object rather than a string is handled too.
    """

    __slots__ = ("_calls", "_last")

    def __init__(self) -> None:
        self._calls: dict[int, list] = {}   # index -> [id, name, [argument pieces]]
        self._last: int | None = None

    def feed(self, delta: dict[str, Any]) -> ToolCallDelta:
        """Record one wire tool-call delta; returns the matching event."""
        call_id = delta.get("id") or None
        function = delta.get("function") or {}
        name = function.get("name") or None
        arguments = function.get("arguments")
        if arguments is None:
            arguments = ""
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        index = delta.get("index")
        if not isinstance(index, int):
            # No index: a known id continues its call, a new id or name opens one,
            # a bare arguments piece continues the last call.
            known = next((i for i, c in self._calls.items() if call_id and c[0] == call_id), None)
            if known is not None:
                index = known
            elif call_id or name or self._last is None:
                index = len(self._calls)
            else:
                index = self._last
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = [None, "", []]
        if call_id and call[0] is None:
            call[0] = call_id
        if name and name != call[1]:
            call[1] += name
        if arguments:
            call[2].append(arguments)
        self._last = index
        return ToolCallDelta.model_construct(index=index, id=call_id, name=name, arguments_delta=arguments)

    def calls(self) -> tuple[ToolCall, ...]:
        """The complete calls, ordered by index."""
        out = []
        for index in sorted(self._calls):
            call_id, name, pieces = self._calls[index]
            if not name:
                raise ArkError(ErrorLayer.DECODE, "provider_tool_call_incomplete",
                               f"tool call at index {index} arrived without a name")
            out.append(ToolCall.model_construct(
                id=call_id or f"call_{uuid.uuid4().hex[:24]}", name=name,
                arguments_json="".join(pieces) or "{}", index=index))
        return tuple(out)

    def __bool__(self) -> bool:
        return bool(self._calls)


class StreamAssembler:
    """Turns decoded chunks into events and, at the end, one :class:`ModelResponse`.

    Args:
        think_tags: split ``<think>`` tags out of the content (local models).
        provider: name used in error messages.
    """

    __slots__ = ("_text", "_reasoning", "_tools", "_splitter", "_finish", "_raw_finish", "_usage",
                 "_model", "_provider", "output_started", "shown")

    def __init__(self, *, think_tags: bool = False, provider: str = "provider") -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._tools = ToolCallAccumulator()
        self._splitter = ThinkTagSplitter() if think_tags else None
        self._finish: FinishReason | None = None
        self._raw_finish: str | None = None
        self._usage: Usage | None = None
        self._model: str | None = None
        self._provider = provider
        self.output_started = False
        """True once a text, reasoning or tool-call delta was produced."""
        self.shown = False
        """True once a text or reasoning delta was produced (something a person may have
        seen). Tool-call deltas alone show nothing and run nothing until the call completes."""

    def _content(self, text: str, out: list) -> None:
        if self._splitter is None:
            self._text.append(text)
            out.append(_text(text=text))
            return
        for is_reasoning, piece in self._splitter.feed(text):
            if is_reasoning:
                self._reasoning.append(piece)
                out.append(_reasoning(text=piece))
            else:
                self._text.append(piece)
                out.append(_text(text=piece))

    def feed(self, chunk: dict[str, Any]) -> list:
        """The events produced by one decoded chunk."""
        out: list = []
        if self._model is None:
            self._model = chunk.get("model")
        choices = chunk.get("choices")
        if choices:
            choice = choices[0]
            if choice.get("index", 0) == 0:
                delta = choice.get("delta") or choice.get("message") or {}
                reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                if reasoning:
                    self._reasoning.append(reasoning)
                    out.append(_reasoning(text=reasoning))
                content = delta.get("content")
                if content:
                    self._content(content, out)
                tool_calls = delta.get("tool_calls")
                if tool_calls:
                    for tool_delta in tool_calls:
                        out.append(self._tools.feed(tool_delta))
                raw = choice.get("finish_reason")
                if raw is not None:
                    self._raw_finish = str(raw)
                    self._finish = map_finish_reason(raw)
        usage = chunk.get("usage")
        if usage:
            self._usage = map_usage(usage)
            out.append(UsageUpdate.model_construct(usage=self._usage))
        if out and not self.output_started:
            self.output_started = any(not isinstance(e, UsageUpdate) for e in out)
        if out and not self.shown:
            self.shown = any(isinstance(e, (TextDelta, ReasoningDelta)) for e in out)
        return out

    def flush(self) -> list:
        """Events for text held back by the tag splitter; call once at the end."""
        out: list = []
        if self._splitter is not None:
            for is_reasoning, piece in self._splitter.flush():
                (self._reasoning if is_reasoning else self._text).append(piece)
                out.append(_reasoning(text=piece) if is_reasoning else _text(text=piece))
        return out

    def finish(self) -> ModelResponse:
        """The complete response; raises ``ArkError`` when the server broke off."""
        if self._raw_finish in INTERRUPTED_FINISH_REASONS:
            raise ArkError(ErrorLayer.PROVIDER, "provider_interrupted",
                           f"{self._provider} stopped the answer early (finish_reason "
                           f"{self._raw_finish!r}); the partial answer was discarded",
                           Retryability.SAFE, provider_code=self._raw_finish)
        calls = self._tools.calls()
        finish = self._finish
        if calls and finish in (None, FinishReason.STOP):
            finish = FinishReason.TOOL_CALLS   # some servers report "stop" with tool calls
        text = "".join(self._text)
        reasoning = "".join(self._reasoning)
        message = AgentMessage.model_construct(
            role=Role.ASSISTANT,
            contents=(ContentPart.from_text(text),) if text else (),
            tool_call_id=None, tool_calls=calls,
            reasoning=(ContentPart.from_text(reasoning),) if reasoning else (),
            is_error=False)
        return ModelResponse.model_construct(
            message=message, finish_reason=finish or FinishReason.STOP,
            # No usage from the server: unknown, never a silent 0/0 (DESIGN §17).
            usage=self._usage if self._usage is not None else Usage(reported=False), model=self._model)
