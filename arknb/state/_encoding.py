"""Incremental JSON encoding of a state whose long fields only grow.

Serialising the whole state on every save makes a save at turn 1,000 a hundred times
dearer than one at turn 10. The runtime's ``history`` and ``usages`` are append-only
tuples of immutable values, so the JSON of an item never changes: this encoder keeps
each item's JSON and re-encodes only the new items and the small rest of the state.
The document it writes parses to exactly the same ``AgentState`` as ``to_json()``.
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

from .agent_state import AgentState

__all__ = ["AppendOnlyFragments", "IncrementalStateEncoder"]

_GROWING = ("history", "usages")


class AppendOnlyFragments:
    """The JSON of each item of a sequence of frozen pydantic values, kept between calls.

    Items are matched by identity: the cached prefix is reused as long as it holds the
    very same objects, and everything from the first different one on is re-encoded.
    """

    __slots__ = ("items", "fragments")

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.fragments: list[str] = []

    def update(self, values: Sequence[Any]) -> int:
        """Bring the cache in line with ``values``; returns the index of the first item
        that was (re-)encoded (``len(values)`` if none was)."""
        items = self.items
        kept = min(len(values), len(items))
        if kept and not all(map(operator.is_, values[:kept], items[:kept])):
            kept = next(i for i, (a, b) in enumerate(zip(values, items)) if a is not b)
        del items[kept:]
        del self.fragments[kept:]
        for value in values[kept:]:
            items.append(value)
            self.fragments.append(value.model_dump_json())
        return kept

    def joined(self) -> str:
        """The JSON array of all items."""
        return f"[{','.join(self.fragments)}]"


class IncrementalStateEncoder:
    """Encodes successive states of one session, reusing the JSON of unchanged items."""

    __slots__ = ("_history", "_usages")

    def __init__(self) -> None:
        self._history = AppendOnlyFragments()
        self._usages = AppendOnlyFragments()

    def encode(self, state: AgentState) -> str:
        self._history.update(state.history)
        self._usages.update(state.usages)
        head = state.model_dump_json(exclude=set(_GROWING))
        return (f'{head[:-1]},"usages":{self._usages.joined()},'
                f'"history":{self._history.joined()}}}')
