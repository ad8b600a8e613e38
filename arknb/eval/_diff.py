"""Field-by-field differences between two JSON values, and how to show them short.

Shared by the cassette mismatch message (a request against its record) and
:func:`~arknb.eval.first_divergence` (an event payload against another).
"""

from __future__ import annotations

from typing import Any

__all__ = ["MISSING", "leaf_diffs", "join_path", "short"]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "(missing)"


MISSING: Any = _Missing()
"""Stands for a key one side has and the other has not."""


def join_path(path: str, key: str | int) -> str:
    """``a.b`` for keys, ``a[0]`` for indexes."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def leaf_diffs(expected: Any, actual: Any, path: str = "", *, limit: int = 8) -> list[tuple[str, Any, Any]]:
    """The differing leaves of two JSON values as ``(path, expected, actual)``, in document order.

    Lists are compared item by item; a length difference shows as the first missing
    or extra item. At most ``limit`` differences are returned.
    """
    out: list[tuple[str, Any, Any]] = []
    _walk(expected, actual, path, out, limit)
    return out


def _walk(a: Any, b: Any, path: str, out: list, limit: int) -> None:
    if len(out) >= limit or a == b and type(a) is type(b):
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            _walk(a.get(key, MISSING), b.get(key, MISSING), join_path(path, key), out, limit)
            if len(out) >= limit:
                return
        return
    if isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            _walk(a[i] if i < len(a) else MISSING, b[i] if i < len(b) else MISSING, join_path(path, i), out, limit)
            if len(out) >= limit:
                return
        return
    if a == b and not (isinstance(a, bool) or isinstance(b, bool)):
        return  # 1 == 1.0: the same JSON number
    out.append((path, a, b))


def short(value: Any, width: int = 80) -> str:
    """``repr`` cut to ``width`` characters (model text can be long)."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."
