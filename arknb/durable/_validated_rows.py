"""A process-wide cache of message and usage rows already validated strictly.

A durable store keeps every message and every usage of a session as a row of its own
(see ``_sql``). Loading a session at turn 1,000 used to validate the whole conversation
strictly again (DESIGN §8: no coercion, no NaN, no unknown field), which made a restore
cost grow with the history. A row's text says everything its item is, so an item that
was validated strictly from that exact text once is what validating it again would
give: the cache maps ``(field, row text)`` to that item. A row changed behind the
store's back (a hand edit, another version's writer) is another text, so it misses the
cache and is validated strictly like the first time; a row this process never
validated is validated alone (its own strict check), and any failure falls back to the
whole document's validation, which names the field and the row.

Bounded by the total length of the texts it holds (oldest entries go first): the items
are the ones the runtimes of this process hold anyway, so the cache mostly shares them.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

from arknb.domain import AgentMessage, Usage

__all__ = ["ValidatedRows", "VALIDATED_ROWS"]

_MODELS = {"history": AgentMessage, "usages": Usage}


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("not a finite number")
    return value


class ValidatedRows:
    """``(field, row text) -> item`` for rows validated strictly (thread-safe: store
    workers load on their own threads)."""

    def __init__(self, max_chars: int = 64_000_000) -> None:
        self._items: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self.misses = 0  # rows validated alone (not found): a benchmark tells cold from warm
        self._chars = 0
        self._max = max_chars
        self._lock = threading.Lock()

    def items(self, field: str, bodies: list[str]) -> tuple[Any, ...] | None:
        """The items of ``bodies`` (each from the cache, or validated strictly alone and
        then cached), or None if one of them does not validate (the caller validates the
        whole document, which reports where and why)."""
        out: list[Any] = []
        missing: list[int] = []
        with self._lock:
            cache = self._items
            for i, body in enumerate(bodies):
                item = cache.get((field, body))
                if item is None:
                    missing.append(i)
                out.append(item)
        if not missing:
            return tuple(out)
        if len(missing) * 4 > len(bodies) and len(bodies) > 64:
            return None  # mostly unknown (a new process): one whole-document validation is cheaper
        model = _MODELS[field]
        fresh = []
        self.misses += len(missing)
        for i in missing:
            body = bodies[i]
            try:
                # The same checks as a whole document's (AgentState.from_json): no NaN or
                # infinity, then strict validation without unknown fields.
                json.loads(body, parse_constant=_refuse_constant, parse_float=_finite)
                item = model.model_validate_json(body, strict=True, extra="forbid")
            except (ValueError, TypeError, RecursionError):  # ValidationError is a ValueError
                return None
            out[i] = item
            fresh.append(((field, body), item))
        self.remember(fresh)
        return tuple(out)

    def remember(self, entries: list[tuple[tuple[str, str], Any]]) -> None:
        """Add strictly validated ``((field, text), item)`` entries."""
        with self._lock:
            cache = self._items
            for key, item in entries:
                if key not in cache:
                    cache[key] = item
                    self._chars += len(key[1])
            while self._chars > self._max and cache:
                (_, text), _ = cache.popitem(last=False)
                self._chars -= len(text)

    def clear(self) -> None:
        """Forget every entry (tests; a benchmark's cold restore)."""
        with self._lock:
            self._items.clear()
            self._chars = 0

    def __len__(self) -> int:
        return len(self._items)


VALIDATED_ROWS = ValidatedRows()
