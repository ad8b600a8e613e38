"""A readable difference between a request and a recorded one (the ``cassette_mismatch`` message).

It names the first differing message and then the differing fields of that message,
one per line, so a changed hook or prompt is easy to spot::

    messages[3] (tool) differs:
      contents[0].text: '3' != '4'
"""

from __future__ import annotations

from typing import Any

from ._diff import MISSING, leaf_diffs, short

__all__ = ["describe_request_diff", "similarity"]


def _role(message: Any) -> str:
    return message.get("role", "?") if isinstance(message, dict) else "?"


def _text(message: Any) -> str:
    if not isinstance(message, dict):
        return ""
    return "".join(str(p.get("text", "")) for p in message.get("contents") or () if isinstance(p, dict))


def describe_request_diff(recorded: dict[str, Any], actual: dict[str, Any]) -> str:
    """Lines describing how ``actual`` differs from ``recorded`` (first difference first)."""
    lines: list[str] = []
    old = recorded.get("messages") or []
    new = actual.get("messages") or []
    for i in range(max(len(old), len(new))):
        if i >= len(old):
            lines.append(f"messages[{i}] ({_role(new[i])}) is new: the request has {len(new)} messages, "
                         f"the record {len(old)}; it reads {short(_text(new[i]))}")
            break
        if i >= len(new):
            lines.append(f"messages[{i}] ({_role(old[i])}) is missing: the request has {len(new)} messages, "
                         f"the record {len(old)}; the record's reads {short(_text(old[i]))}")
            break
        if old[i] != new[i]:
            lines.append(f"messages[{i}] ({_role(new[i])}) differs:")
            lines.extend(_fields(old[i], new[i]))
            break
    old_tools = [t.get("name") for t in recorded.get("tools") or () if isinstance(t, dict)]
    new_tools = [t.get("name") for t in actual.get("tools") or () if isinstance(t, dict)]
    if old_tools != new_tools:
        lines.append(f"tools differ: the request offers {new_tools}, the record {old_tools}")
    elif recorded.get("tools") != actual.get("tools"):
        for old_tool, new_tool in zip(recorded.get("tools") or (), actual.get("tools") or ()):
            if old_tool != new_tool:
                lines.append(f"tool {new_tool.get('name')!r} differs:")
                lines.extend(_fields(old_tool, new_tool))
                break
    if (recorded.get("config") or {}) != (actual.get("config") or {}):
        lines.append("config differs:")
        lines.extend(_fields(recorded.get("config") or {}, actual.get("config") or {}))
    return "\n".join(lines) if lines else "(the requests are equal as JSON but hash differently)"


def _fields(old: Any, new: Any) -> list[str]:
    out = []
    for path, a, b in leaf_diffs(old, new, limit=6):
        if a is MISSING:
            out.append(f"  {path or '(value)'}: only in the request: {short(b)}")
        elif b is MISSING:
            out.append(f"  {path or '(value)'}: only in the record: {short(a)}")
        else:
            out.append(f"  {path or '(value)'}: {short(a)} (recorded) != {short(b)} (now)")
    return out


def similarity(recorded: dict[str, Any], actual: dict[str, Any]) -> tuple[int, int]:
    """How alike two requests are, for picking the nearest record: (equal leading messages, equal tools+config)."""
    old = recorded.get("messages") or []
    new = actual.get("messages") or []
    prefix = 0
    for a, b in zip(old, new):
        if a != b:
            break
        prefix += 1
    rest = int(recorded.get("tools") == actual.get("tools")) + int(recorded.get("config") == actual.get("config"))
    return prefix, rest
