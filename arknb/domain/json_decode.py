"""JSON text from outside (a model's tool arguments, a server's SSE data) decoded with a
depth limit, so nesting is a clear error and never a ``RecursionError``.

Python's ``json`` module recurses once per nesting level: a document nested a few
thousand levels deep raises ``RecursionError``, and one just below the interpreter's
limit parses but breaks whatever walks it next (``json.dumps``, pydantic, a widget).
:data:`MAX_JSON_DEPTH` is the one limit arknb applies to such values; it matches
pydantic-core's JSON parser (jiter), which validates tool arguments, so the two agree.

Example:
    >>> decode_json('{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> decode_json("[" * 500 + "]" * 500)
    Traceback (most recent call last):
    ...
    arknb.domain.json_decode.JSONTooDeepError: JSON nested more than 200 levels deep
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_JSON_DEPTH", "JSONTooDeepError", "decode_json", "json_depth_exceeds"]

MAX_JSON_DEPTH = 200
"""The deepest nesting of arrays and objects arknb accepts in a JSON value."""


class JSONTooDeepError(ValueError):
    """A JSON value nested more than :data:`MAX_JSON_DEPTH` levels deep (a ``ValueError``,
    like every other malformed-JSON error, so existing ``except ValueError`` handlers
    treat it as bad input)."""

    def __init__(self, limit: int = MAX_JSON_DEPTH) -> None:
        super().__init__(f"JSON nested more than {limit} levels deep")
        self.limit = limit


def decode_json(text: str | bytes | bytearray, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads(text)``, refusing values nested more than ``max_depth`` levels.

    Raises:
        JSONTooDeepError: the value is nested too deeply (also when ``json`` itself
            ran out of stack on it).
        ValueError: the text is not JSON (``json.JSONDecodeError``, ``UnicodeDecodeError``).
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise JSONTooDeepError(max_depth) from None
    # A value cannot nest deeper than it has brackets: counting them is a C-speed scan,
    # so ordinary documents (SSE chunks, tool arguments) never pay for the walk.
    opening = (b"[", b"{") if isinstance(text, (bytes, bytearray)) else ("[", "{")
    if text.count(opening[0]) + text.count(opening[1]) > max_depth and json_depth_exceeds(value, max_depth):
        raise JSONTooDeepError(max_depth)
    return value


def json_depth_exceeds(value: Any, max_depth: int = MAX_JSON_DEPTH) -> bool:
    """True if ``value`` nests dicts, lists or tuples more than ``max_depth`` levels deep.

    Walks without recursion, so any depth (even a cycle) is answered without
    ``RecursionError``.
    """
    stack = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > max_depth:
            return True
        for child in children:
            if isinstance(child, (dict, list, tuple)):
                push((child, depth + 1))
    return False
