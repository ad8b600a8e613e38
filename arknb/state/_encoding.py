"""Incremental JSON encoding of a state whose history only grows.

Serialising the whole history on every save makes a save at turn 1,000 a hundred
times dearer than one at turn 10. The runtime's history is append-only and made of
immutable messages, so the JSON of a message never changes: this encoder keeps each
message's JSON and re-encodes only the new messages and the small rest of the state.
The document it writes parses to exactly the same ``AgentState`` as ``to_json()``.
"""

from __future__ import annotations

import operator

from .agent_state import AgentState

__all__ = ["IncrementalStateEncoder"]


class IncrementalStateEncoder:
    """Encodes successive states of one session, reusing the JSON of unchanged messages."""

    __slots__ = ("_messages", "_fragments")

    def __init__(self) -> None:
        self._messages: list = []
        self._fragments: list[str] = []

    def encode(self, state: AgentState) -> str:
        history = state.history
        messages = self._messages
        kept = min(len(history), len(messages))
        # The cached prefix is reused only if it holds the very same message objects.
        if kept and not all(map(operator.is_, history[:kept], messages[:kept])):
            kept = next(i for i, (a, b) in enumerate(zip(history, messages)) if a is not b)
        del messages[kept:]
        del self._fragments[kept:]
        for message in history[kept:]:
            messages.append(message)
            self._fragments.append(message.model_dump_json())
        head = state.model_dump_json(exclude={"history"})
        return f'{head[:-1]},"history":[{",".join(self._fragments)}]}}'
