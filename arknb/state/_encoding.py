"""Incremental JSON encoding of a state whose long fields only grow.

Serialising the whole state on every save makes a save at turn 1,000 a hundred times
dearer than one at turn 10. The runtime's ``history`` and ``usages`` are append-only
tuples of immutable values, so the JSON of an item never changes: this encoder keeps
each item's JSON and re-encodes only the new items and the small rest of the state.
The document it writes parses to exactly the same ``AgentState`` as ``to_json()``.

The SQLite store (:mod:`arknb.durable.sqlite_store`) keeps the same split, a header
plus one row per item, and rebuilds documents with :func:`splice`.
"""

from __future__ import annotations

import operator
from typing import Any, Iterable, Sequence

from .agent_state import AgentState

__all__ = ["APPEND_ONLY_FIELDS", "AppendOnlyFragments", "IncrementalStateEncoder", "header_json", "splice"]

APPEND_ONLY_FIELDS = ("history", "usages")
"""The ``AgentState`` fields the runtime only appends to, each a tuple of immutable items."""


def header_json(state: AgentState) -> str:
    """The state's JSON object without its :data:`APPEND_ONLY_FIELDS`."""
    return state.model_dump_json(exclude=set(APPEND_ONLY_FIELDS))


def splice(header: str, arrays: Iterable[tuple[str, Sequence[str]]]) -> str:
    """A :func:`header_json` object with each ``(field, item JSON texts)`` added back as
    a JSON array."""
    return header[:-1] + "".join(f',"{field}":[{",".join(items)}]' for field, items in arrays) + "}"


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


class IncrementalStateEncoder:
    """Encodes successive states of one session, reusing the JSON of unchanged items."""

    __slots__ = ("_fields",)

    def __init__(self) -> None:
        self._fields = {field: AppendOnlyFragments() for field in APPEND_ONLY_FIELDS}

    def encode(self, state: AgentState) -> str:
        for field, fragments in self._fields.items():
            fragments.update(getattr(state, field))
        return splice(header_json(state), ((field, fragments.fragments)
                                           for field, fragments in self._fields.items()))
