"""Events as the JSON dicts files hold (DESIGN §4 envelope), checked field by field when read."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..events import AgentEvent

__all__ = ["event_dict", "event_from_dict"]


def event_dict(event: Any) -> dict[str, Any]:
    """The envelope dict of an ``AgentEvent`` (or a dict already in that form)."""
    if isinstance(event, Mapping):
        return dict(event)
    to_dict = getattr(event, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    raise TypeError(f"not an AgentEvent or event dict: {type(event).__name__}")


def event_from_dict(data: Any) -> AgentEvent:
    """An ``AgentEvent`` from its envelope dict; ``ValueError`` naming the first bad field."""
    if not isinstance(data, Mapping):
        raise ValueError(f"an event must be a JSON object, got {type(data).__name__}")
    for key in ("type", "session_id", "run_id"):
        if not isinstance(data.get(key), str):
            raise ValueError(f"event field {key!r} must be a string, got {data.get(key)!r}")
    if not data["type"]:
        raise ValueError("event field 'type' is empty")
    sequence = data.get("sequence")
    if isinstance(sequence, bool) or not isinstance(sequence, int):
        raise ValueError(f"event field 'sequence' must be an integer, got {sequence!r}")
    timestamp = data.get("timestamp")
    if isinstance(timestamp, bool) or not isinstance(timestamp, (int, float)) or not math.isfinite(timestamp):
        raise ValueError(f"event field 'timestamp' must be a number, got {timestamp!r}")
    payload = data.get("payload", {})
    if not isinstance(payload, Mapping):
        raise ValueError(f"event field 'payload' must be an object, got {type(payload).__name__}")
    event_id = data.get("event_id", "")
    if not isinstance(event_id, str):
        raise ValueError(f"event field 'event_id' must be a string, got {event_id!r}")
    parents = {}
    for key in ("parent_run_id", "parent_call_id"):  # a sub-agent's events name the call that ran it
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"event field {key!r} must be a string, got {value!r}")
        parents[key] = value
    return AgentEvent(type=data["type"], session_id=data["session_id"], run_id=data["run_id"], sequence=sequence,
                      timestamp=float(timestamp), payload=dict(payload), event_id=event_id, **parents)
