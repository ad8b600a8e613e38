"""Where a validated document could hold NaN or Infinity, so one parse can refuse them.

A saved state refuses NaN, Infinity and numbers too large to be anything but infinity
(``1e400``; DESIGN §8). Python's ``json`` accepts all three, so ``AgentState.from_json``
used to parse each document twice: once with ``json`` to refuse them, then again in
pydantic's strict validation, which at turn 1,000 made the first parse a fifth of a
cold restore. pydantic's own JSON parser (jiter) refuses everything else ``json``
refuses, or more (raw control characters, leading zeros, bad escapes, nesting past 200
levels, integers of 4,300 digits and more), and reads those three as the floats ``nan``
and ``inf``. Such a float can only end up where the schema takes a float or any JSON
value: a strict string, integer, boolean, enum or null refuses it. So a document that
validates strictly is free of them when its float fields refuse non-finite values
(``allow_inf_nan=False``) and its JSON-valued fields hold none (:func:`holds_nonfinite`).

:func:`open_positions` reads those places from a model's core schema, so the one-parse
way is used only while they are exactly the places the caller checks: a field added
later that could hold such a value turns it off (the two-parse way stays correct), and
the suite says so (``tests/state/test_one_parse.py``).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["holds_nonfinite", "open_positions"]

# Schemas that run Python on the raw input: what they accept is not in the schema.
_OPAQUE = frozenset({"function-before", "function-wrap", "function-plain", "custom-error", "callable",
                     "is-instance", "is-subclass", "json", "decimal", "complex"})
_ITEMS = ("items_schema", "keys_schema", "values_schema")
# Keys whose values are data, not schemas (a default may well be a dict with a "type").
_DATA = frozenset({"metadata", "serialization", "ref", "config", "default", "expected", "members", "cls",
                   "function", "schema_ref"})


def open_positions(model: type) -> frozenset[tuple[str, str]]:
    """The places of ``model``'s JSON where a NaN or an infinity could be accepted.

    Each is ``(path, kind)``: ``path`` joins field names with ``.`` and writes ``*`` for
    any item of a sequence or value of a mapping; ``kind`` is ``"float"`` (a float that
    allows non-finite values), ``"any"`` (any JSON value), or the core schema type of a
    Python validator that sees the raw input (``"function-before"``, ...). A recursive
    model is ``("<path>", "recursive")``: its depth has no bound to check.
    """
    schema = model.__pydantic_core_schema__
    out: set[tuple[str, str]] = set()
    _walk(schema, (), {}, frozenset(), out, True)
    return frozenset(out)


def _walk(schema: dict, path: tuple[str, ...], defs: dict, refs: frozenset, out: set, nonfinite: bool) -> None:
    # nonfinite: the enclosing model's config allows inf and nan (a float's own setting wins)
    kind = schema.get("type")
    where = ".".join(path)
    if kind == "definitions":
        defs = {**defs, **{d["ref"]: d for d in schema["definitions"]}}
        _walk(schema["schema"], path, defs, refs, out, nonfinite)
        return
    if kind == "definition-ref":
        ref = schema["schema_ref"]
        _walk(defs[ref], path, defs, refs, out, nonfinite)  # (the definition carries its "ref": checked below)
        return
    if "ref" in schema:
        if schema["ref"] in refs:
            out.add((where, "recursive"))
            return
        refs = refs | {schema["ref"]}
    if kind == "model":  # its config holds the default of its float fields (True if unset)
        nonfinite = schema.get("config", {}).get("allow_inf_nan", True)
    if kind == "float":
        if schema.get("allow_inf_nan", nonfinite):
            out.add((where, "float"))
        return
    if kind == "any":
        out.add((where, "any"))
        return
    if kind in _OPAQUE:
        out.add((where, kind))
    if kind in ("model-fields", "typed-dict"):
        for name, field in schema["fields"].items():
            _walk(field["schema"], path + (name,), defs, refs, out, nonfinite)
        for extra in ("extras_schema", "extras_keys_schema"):
            if extra in schema:
                _walk(schema[extra], path + ("*",), defs, refs, out, nonfinite)
        return
    if kind == "dataclass-args":
        for field in schema["fields"]:
            _walk(field["schema"], path + (field["name"],), defs, refs, out, nonfinite)
        return
    for key, value in schema.items():
        if key in _DATA:
            continue
        step = path + ("*",) if key in _ITEMS else path
        if isinstance(value, dict) and "type" in value:
            _walk(value, step, defs, refs, out, nonfinite)
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, tuple):  # a union choice with its label
                    item = item[0]
                if isinstance(item, dict) and "type" in item:
                    _walk(item, step, defs, refs, out, nonfinite)
        elif key == "choices" and isinstance(value, dict):  # a tagged union
            for choice in value.values():
                if isinstance(choice, dict) and "type" in choice:
                    _walk(choice, path, defs, refs, out, nonfinite)


def holds_nonfinite(value: Any) -> bool:
    """True if the JSON-like ``value`` holds a NaN or an infinity anywhere inside.

    Walks without recursion, so no depth raises ``RecursionError`` (a value read from
    JSON has no cycles).
    """
    stack = [value]
    pop, push, isfinite = stack.pop, stack.extend, math.isfinite
    while stack:
        item = pop()
        if isinstance(item, float):
            if not isfinite(item):
                return True
        elif isinstance(item, dict):
            push(item.values())
        elif isinstance(item, (list, tuple)):
            push(item)
    return False
