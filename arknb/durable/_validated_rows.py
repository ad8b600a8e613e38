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
from typing import Any

from arknb.domain import AgentMessage, Usage
from arknb.state._finite import open_positions

__all__ = ["ValidatedRows", "VALIDATED_ROWS"]

_MODELS = {"history": AgentMessage, "usages": Usage}
# A row model with no place for a NaN or an infinity (no float or JSON-valued field,
# state/_finite.py) refuses them in its strict validation: its rows skip the first parse.
_ONE_PARSE = {field: not open_positions(model) for field, model in _MODELS.items()}


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
        # One dict per field, keyed by the row text (oldest first): no key tuple is built
        # per row, and a load of 3,000 rows looks each up in one dict.
        self._items: dict[str, dict[str, Any]] = {field: {} for field in _MODELS}
        self.misses = 0  # rows validated alone (not found): a benchmark tells cold from warm
        self._chars = 0
        self._max = max_chars
        self._lock = threading.Lock()

    def items(self, field: str, bodies: list[str]) -> tuple[Any, ...] | None:
        """The items of ``bodies`` (each from the cache, or validated strictly alone and
        then cached), or None if one of them does not validate, or if most are unknown
        (the caller validates the whole document: cheaper than row by row, and it
        reports where and why)."""
        missing: list[int] = []
        # Mostly unknown (a new process): one whole-document validation is cheaper.
        allowed = len(bodies) // 4 if len(bodies) > 64 else len(bodies)
        with self._lock:
            cache = self._items[field]
            if not cache and allowed < len(bodies):
                return None  # nothing known yet (a new process's first load): no lookup can hit
            get = cache.get
            out = [get(body) for body in bodies]
        for i, item in enumerate(out):
            if item is None:
                missing.append(i)
                if len(missing) > allowed:
                    return None
        if not missing:
            return tuple(out)
        model = _MODELS[field]
        one_parse = _ONE_PARSE[field]
        fresh_bodies, fresh_items = [], []
        self.misses += len(missing)
        for i in missing:
            body = bodies[i]
            try:
                # The same checks as a whole document's (AgentState.from_json): no NaN or
                # infinity (refused by the strict types where the model has no place for
                # them), then strict validation without unknown fields.
                if not one_parse:
                    json.loads(body, parse_constant=_refuse_constant, parse_float=_finite)
                item = model.model_validate_json(body, strict=True, extra="forbid")
            except (ValueError, TypeError, RecursionError):  # ValidationError is a ValueError
                return None
            out[i] = item
            fresh_bodies.append(body)
            fresh_items.append(item)
        self.remember(field, fresh_bodies, fresh_items)
        return tuple(out)

    def remember(self, field: str, bodies: list[str], items: tuple[Any, ...] | list[Any]) -> None:
        """Add the items of ``field`` validated strictly from ``bodies`` (one for one)."""
        with self._lock:
            cache = self._items[field]
            chars = 0
            for body, item in zip(bodies, items, strict=True):
                if body not in cache:
                    cache[body] = item
                    chars += len(body)
            self._chars += chars
            if self._chars > self._max:
                self._evict()

    def _evict(self) -> None:
        # The oldest entries of each field go first, until the texts fit again.
        for cache in self._items.values():
            dropped = []
            for body in cache:
                if self._chars <= self._max:
                    break
                dropped.append(body)
                self._chars -= len(body)
            for body in dropped:
                del cache[body]

    def clear(self) -> None:
        """Forget every entry (tests; a benchmark's cold restore)."""
        with self._lock:
            for cache in self._items.values():
                cache.clear()
            self._chars = 0

    def __len__(self) -> int:
        return sum(map(len, self._items.values()))


VALIDATED_ROWS = ValidatedRows()
