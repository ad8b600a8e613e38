"""``search_history``: keyword search over the messages a compression replaced."""

from __future__ import annotations

from typing import Sequence

from ..domain import AgentMessage, Role
from .keywords import BM25Index, tokenize

__all__ = ["HistoryIndex", "SNIPPET_CHARS", "message_search_text"]

SNIPPET_CHARS = 1500
"""How much of a found message ``search_history`` shows (the rest is announced, never dropped silently)."""


def message_search_text(message: AgentMessage) -> str:
    """What a message is searched by: its text and its tool calls' names and arguments."""
    parts = [message.text]
    parts.extend(f"{call.name} {call.arguments_json}" for call in message.tool_calls)
    return "\n".join(p for p in parts if p)


class HistoryIndex:
    """A BM25 index over ``state.history``, grown as the history grows (matched by identity)."""

    __slots__ = ("_messages", "_index")

    def __init__(self) -> None:
        self._messages: list[AgentMessage] = []
        self._index = BM25Index()

    def sync(self, history: Sequence[AgentMessage]) -> None:
        """Index the messages of ``history`` not indexed yet (rebuilds if the prefix differs)."""
        known = self._messages
        if len(history) < len(known) or any(known[i] is not history[i] for i in (0, len(known) - 1) if known):
            self._messages = []
            self._index = BM25Index()
            known = self._messages
        for message in history[len(known):]:
            known.append(message)
            self._index.add(tokenize(message_search_text(message)))

    def search(self, history: Sequence[AgentMessage], query: str, k: int, limit: int) -> str:
        """The best ``k`` of the first ``limit`` messages for ``query``, as text for the model."""
        self.sync(history)
        hits = self._index.search(tokenize(query), k, limit=limit)
        if not hits:
            return (f"No earlier message matches {query!r}. (Searched messages 1-{limit}, the part of the "
                    "conversation that was summarised.)")
        blocks = []
        for number, score in hits:
            blocks.append(_render(number, self._messages[number], score))
        return f"{len(hits)} earlier message(s) matching {query!r}, best first:\n\n" + "\n\n".join(blocks)


def _render(number: int, message: AgentMessage, score: float) -> str:
    if message.role is Role.TOOL:
        who = f"tool result for call {message.tool_call_id}"
    else:
        who = message.role.value
    text = message_search_text(message)
    if len(text) > SNIPPET_CHARS:
        text = (text[:SNIPPET_CHARS] + f"\n[... {len(text) - SNIPPET_CHARS} more characters of this message "
                "not shown]")
    return f"--- message {number + 1} ({who}, score {score:.2f}) ---\n{text}"
