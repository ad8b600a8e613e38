"""Reading event payloads and domain values into plain JSON for the front end.

Payloads arrive as JSON-ready dicts (``AgentEvent.payload``), but a message, call or
result inside one may be a pydantic model, a dict from ``model_dump`` or, in
hand-written traces, a bare string. These helpers accept all three.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

__all__ = ["as_dict", "call_fields", "error_text", "jsonable", "message_fields", "result_fields",
           "text_of"]


def as_dict(value: Any) -> dict[str, Any]:
    """A pydantic model or mapping as a plain dict (anything else: empty dict)."""
    if isinstance(value, Mapping):
        return dict(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    return {}


def jsonable(value: Any) -> Any:
    """``value`` made JSON-safe (pydantic models dumped, unknown objects as ``str``)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    return str(value)


def text_of(value: Any) -> str:
    """The text of a message, result, content list or string."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    text = getattr(value, "text", None)
    if isinstance(text, str):
        return text
    if isinstance(value, (list, tuple)):
        return "".join(text_of(v) for v in value)
    data = as_dict(value)
    if isinstance(data.get("text"), str):
        return data["text"]
    if "contents" in data:
        return "".join(str(p.get("text") or "") for p in data["contents"] or () if isinstance(p, Mapping))
    return ""


def message_fields(message: Any) -> dict[str, Any]:
    """``role``, ``text``, ``reasoning``, ``tool_calls`` and ``tool_call_id`` of a message."""
    if isinstance(message, str):
        return {"role": "user", "text": message, "reasoning": "", "tool_calls": [], "tool_call_id": None,
                "is_error": False}
    data = as_dict(message)
    reasoning = data.get("reasoning") or ()
    return {
        "role": str(data.get("role") or "user"),
        "text": text_of(message),
        "reasoning": reasoning if isinstance(reasoning, str) else text_of(list(reasoning)),
        "tool_calls": [call_fields(c) for c in data.get("tool_calls") or ()],
        "tool_call_id": data.get("tool_call_id"),
        "is_error": bool(data.get("is_error", False)),
    }


def call_fields(call: Any) -> dict[str, Any]:
    """``id``, ``name`` and ``arguments`` (the JSON text) of a tool call."""
    data = as_dict(call)
    args = data.get("arguments_json")
    if args is None and "arguments" in data:
        args = data["arguments"] if isinstance(data["arguments"], str) else json.dumps(
            data["arguments"], ensure_ascii=False, default=str)
    return {"id": str(data.get("id") or ""), "name": str(data.get("name") or "?"),
            "arguments": args if isinstance(args, str) else "{}"}


def result_fields(result: Any) -> dict[str, Any]:
    """``text`` and ``is_error`` of a tool result."""
    if isinstance(result, str):
        return {"text": result, "is_error": False}
    data = as_dict(result)
    return {"text": text_of(result), "is_error": bool(data.get("is_error", False))}


def error_text(error: Any) -> str:
    """A one-line message for an error value (``ArkError``, ``ErrorInfo``, dict, string)."""
    if error is None:
        return ""
    if isinstance(error, str):
        return error
    if isinstance(error, BaseException):
        code = getattr(error, "code", None)
        message = getattr(error, "message", None) or str(error)
        return f"{code}: {message}" if code else message
    data = as_dict(error)
    if data:
        code, message = data.get("code"), data.get("message") or ""
        return f"{code}: {message}" if code else str(message or data)
    code, message = getattr(error, "code", None), getattr(error, "message", None)
    if message:
        return f"{code}: {message}" if code else str(message)
    return str(error)
