"""RuleModel: an offline model that answers what was typed, by keyword rules.

A :class:`ScriptedModel` plays its turns in order, whatever the question. A
``RuleModel`` reads the last user message and answers with the first :class:`Rule`
whose pattern it contains: a text reply, or a tool call whose arguments come from the
pattern's groups. After the tool answers, the rule words the final reply from the
result. No network, no key, and the same question always gets the same answer.

Example:
    >>> model = RuleModel([
    ...     Rule(r"(-?\\d+)\\s*(?:\\+|plus)\\s*(-?\\d+)", call="add",
    ...          arguments=lambda m: {"a": int(m[1]), "b": int(m[2])},
    ...          answer="{m[1]} + {m[2]} is **{result}**."),
    ...     Rule(r"\\b(hi|hello)\\b", reply="Hello! Ask me to add two numbers."),
    ... ], fallback="I only know a few questions offline. Try 'what is 2 + 3?'.")
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, AsyncIterator

from ..domain import ArkError, CancellationToken, ErrorCode, ErrorLayer, ModelRequest, ModelResponse, StreamingEvent
from ..domain import ToolCall
from .scripted import ScriptedModel, ScriptedTurn

__all__ = ["Rule", "RuleModel"]

Reply = str | Callable[[re.Match[str]], str]


@dataclass(frozen=True)
class Rule:
    """One keyword rule of a :class:`RuleModel`.

    Args:
        pattern: a regular expression searched in the user's message (case-insensitive).
        reply: the answer, when the rule calls no tool: text (``{m[1]}`` is the first
            group) or a function of the match.
        call: the name of a tool to call instead of replying.
        arguments: the call's arguments: a dict (string values are formatted with the
            match, as ``reply`` is) or a function of the match returning one.
        answer: the reply once the tool answered (``{result}`` is its result, ``{m[1]}``
            a group); by default the result itself.
    """

    pattern: str
    reply: Reply = ""
    call: str | None = None
    arguments: Mapping[str, Any] | Callable[[re.Match[str]], Mapping[str, Any]] | None = None
    answer: str | Callable[[re.Match[str], str], str] = "{result}"

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "_regex", re.compile(self.pattern, re.IGNORECASE))
        except re.error as exc:
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                           f"Rule pattern {self.pattern!r} is not a regular expression: {exc}") from None
        if not self.reply and not self.call:
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                           f"Rule {self.pattern!r} needs reply= (a text answer) or call= (a tool to call)")

    def match(self, text: str) -> re.Match[str] | None:
        return self._regex.search(text)  # type: ignore[attr-defined]


def _fill(value: Any, match: re.Match[str]) -> Any:
    if callable(value):
        return value(match)
    if isinstance(value, str):
        return value.format(m=match)
    return value


def _words(text: str) -> list[str]:
    """The reply in word-sized chunks, so it streams into a chat as a real model's does."""
    return re.findall(r"\S+\s*|\s+", text) or [text]


class RuleModel:
    """An :class:`LLMClient` that answers the last user message by keyword rules, offline.

    Rules are tried in order; the first whose pattern the message contains answers. A
    rule with ``call=`` asks for that tool (only if the request offers it), then words the
    final reply from the tool's result. With no rule matching, ``fallback`` answers.
    Every request is recorded in :attr:`requests`.

    Args:
        rules: the :class:`Rule` list.
        fallback: the reply when no rule matches.
        chunk_delay: seconds between streamed words (0: as fast as possible).
    """

    def __init__(self, rules: Iterable[Rule], *, fallback: str = "I don't know that one.",
                 chunk_delay: float = 0.0) -> None:
        self.rules = tuple(rules)
        if not all(isinstance(r, Rule) for r in self.rules):
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT, "RuleModel takes a list of ark.Rule")
        self.fallback = fallback
        self.chunk_delay = chunk_delay
        self.requests: list[ModelRequest] = []
        self._calls = 0

    def _turn(self, request: ModelRequest) -> ScriptedTurn:
        if not isinstance(request, ModelRequest):
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                           f"RuleModel expects a ModelRequest, got {type(request).__name__}")
        self.requests.append(request)
        messages = list(request.messages)
        user = next((m for m in reversed(messages) if m.role == "user"), None)
        question = user.text if user is not None else ""
        offered = {getattr(t, "name", None) for t in (request.tools or ())}
        for rule in self.rules:
            match = rule.match(question)
            if match is None:
                continue
            if rule.call is None:
                return self._say(str(_fill(rule.reply, match)))
            results = _results_since(messages, user)
            if results:  # the tool answered: word the reply from its result
                failed, result = results[-1]
                if failed:
                    return self._say(f"{rule.call} did not give an answer: {result}")
                text = rule.answer(match, result) if callable(rule.answer) else rule.answer.format(
                    m=match, result=result)
                return self._say(text)
            if rule.call not in offered:
                continue  # a tool this runtime does not have: let another rule (or the fallback) answer
            arguments = _fill(rule.arguments or {}, match)
            arguments = {k: _fill(v, match) for k, v in dict(arguments).items()}
            self._calls += 1
            call = ToolCall(id=f"rule_{self._calls}", name=rule.call, arguments_json=json.dumps(arguments))
            return ScriptedTurn(tool_calls=[call], chunk_delay=self.chunk_delay)
        return self._say(self.fallback)

    def _say(self, text: str) -> ScriptedTurn:
        return ScriptedTurn(text=_words(text), chunk_delay=self.chunk_delay)

    async def stream(self, request: ModelRequest, *,
                     cancel: CancellationToken | None = None) -> AsyncIterator[StreamingEvent]:
        """Stream the answer to ``request``'s last user message."""
        async for event in ScriptedModel([self._turn(request)]).stream(request, cancel=cancel):
            yield event

    async def generate(self, request: ModelRequest, *,
                       cancel: CancellationToken | None = None) -> ModelResponse:
        """The answer to ``request``'s last user message, without streaming."""
        return self._turn(request).response()

    def __repr__(self) -> str:
        return f"RuleModel({len(self.rules)} rules)"


def _results_since(messages: list, user: Any) -> list[tuple[bool, str]]:
    """``(is_error, text)`` of the tool results after the last user message."""
    if user is None:
        return []
    after = messages[next(i for i, m in enumerate(messages) if m is user) + 1:]
    return [(bool(m.is_error), m.text) for m in after if m.role == "tool"]
