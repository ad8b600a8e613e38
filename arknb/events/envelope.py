"""The one event envelope every published event uses (seed 003 §5.6).

An event's payload is read-only all the way down (a
:class:`~arknb.domain.frozen.FrozenDict`): every listener receives the same event,
so none may change what the others, the widgets or a trace file see (DESIGN §4).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..domain.frozen import FrozenDict, FrozenList, freeze, freeze_mapping
from ..domain.json_decode import MAX_JSON_DEPTH, JSONTooDeepError
from ..domain.trusted import trusted_builder

__all__ = ["PAYLOAD_ORIGIN", "AgentEvent", "flat_items", "flat_payload", "freeze_payload", "frozen_dump", "new_event"]

PAYLOAD_ORIGIN = ("event payloads are read-only (listeners only observe; hooks change a run): "
                  "dict(payload) or payload.thaw() gives a mutable copy")
"""What a refused write to a payload says."""

_TOO_DEEP = f"[nested more than {MAX_JSON_DEPTH} levels: left out]"


def freeze_payload(payload: Mapping[str, Any] | None) -> FrozenDict:
    """``payload`` frozen deeply, as published. A part nested deeper than
    ``MAX_JSON_DEPTH`` is replaced by a short marker string, so an odd value can never
    make publishing (and so the run that publishes) fail."""
    if isinstance(payload, FrozenDict):
        return payload
    if payload.__class__ is not dict:
        if payload is None:
            payload = {}
        elif not isinstance(payload, Mapping):
            raise TypeError(f"an event payload must be a mapping, got {type(payload).__name__}")
        elif not isinstance(payload, dict):
            payload = dict(payload)
    try:
        return freeze_mapping(payload, PAYLOAD_ORIGIN)
    except JSONTooDeepError:
        return freeze(_cut(payload, 1), PAYLOAD_ORIGIN)


_DUMPS: dict[int, tuple[Any, FrozenDict]] = {}
_DUMPS_KEPT = 64


def frozen_dump(model: Any) -> FrozenDict:
    """``model.model_dump(mode="json", exclude_defaults=True)``, frozen, for payloads.

    The dump of a frozen model never changes, and the runtime puts the same message in
    several events of a turn (``llm.after``, ``turn.completed``, ``hook.decision``): the
    last few dumps are kept, keyed by the model's identity (each entry holds the model,
    so an id is never reused while its entry lives).
    """
    key = id(model)
    kept = _DUMPS.get(key)
    if kept is not None and kept[0] is model:
        return kept[1]
    dump = freeze_mapping(model.model_dump(mode="json", exclude_defaults=True), PAYLOAD_ORIGIN)
    if model.model_config.get("frozen"):
        if len(_DUMPS) >= _DUMPS_KEPT:
            _DUMPS.pop(next(iter(_DUMPS)), None)
        _DUMPS[key] = (model, dump)
    return dump


class _FlatPayload(FrozenDict):
    """A frozen payload built at C speed, without the walk: for publishers whose payload
    values are all scalars or already frozen (not checked). The runtime builds one per
    streamed chunk."""

    __slots__ = ()
    _origin = PAYLOAD_ORIGIN  # the class's, so construction sets nothing per instance
    __init__ = dict.__init__  # type: ignore[assignment]


class _FlatItems(FrozenList):
    """A frozen list built at C speed, without the walk (see :class:`_FlatPayload`)."""

    __slots__ = ()
    _origin = PAYLOAD_ORIGIN
    __init__ = list.__init__  # type: ignore[assignment]


flat_payload = _FlatPayload
"""``flat_payload(kind="text", text=..., index=...)``: a frozen payload from values that
are all ``str``, ``int``, ``float``, ``bool``, ``None`` or already frozen (not checked)."""

flat_items = _FlatItems
"""``flat_items(names)``: a frozen list, for a payload, of values that are all scalars or
already frozen (not checked)."""


def _cut(value: Any, depth: int) -> Any:
    if isinstance(value, (dict, list, tuple)) and depth > MAX_JSON_DEPTH:
        return _TOO_DEEP
    if isinstance(value, dict):
        return {k: _cut(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_cut(v, depth + 1) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class AgentEvent:
    """One thing that happened, as observers see it.

    ``sequence`` increases strictly within a session (and so within each run);
    ``payload`` holds JSON-ready values only, so the same event can be written to a
    trace file or sent to a widget unchanged. It is read-only all the way down: an
    event built with a plain dict freezes (a copy of) it.

    ``parent_run_id`` and ``parent_call_id`` are set on the events of a sub-agent's run
    re-published on its parent's bus (DESIGN §14): the parent run and its
    ``delegate_task`` call, so a timeline nests the child's spans under that call. They
    are None for a runtime's own events (and left out of :meth:`to_dict` then).

    A frozen slotted dataclass rather than a pydantic model: the runtime builds one
    per streamed chunk, and it only ever builds them from values it already trusts.
    """

    event_id: str
    type: str
    session_id: str
    run_id: str
    sequence: int
    timestamp: float
    payload: Mapping[str, Any] = field(default_factory=FrozenDict)
    parent_run_id: str | None = None
    parent_call_id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.payload, FrozenDict):
            object.__setattr__(self, "payload", freeze_payload(self.payload))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the wire form used by traces and widgets); the payload in it
        is a shallow plain copy whose nested values stay read-only."""
        data = {"event_id": self.event_id, "type": self.type, "session_id": self.session_id,
                "run_id": self.run_id, "sequence": self.sequence, "timestamp": self.timestamp,
                "payload": dict(self.payload)}
        if self.parent_run_id is not None:
            data["parent_run_id"] = self.parent_run_id
            data["parent_call_id"] = self.parent_call_id
        return data

    def with_parent(self, run_id: str, call_id: str) -> AgentEvent:
        """This event as re-published on a parent's bus: nested under ``call_id`` of run
        ``run_id``, unless it already has a parent (a grandchild's event keeps its own)."""
        if self.parent_run_id is not None:
            return self
        return AgentEvent(self.event_id, self.type, self.session_id, self.run_id, self.sequence, self.timestamp,
                          self.payload, run_id, call_id)

    def to_json(self) -> str:
        """One line of JSON (for JSONL traces)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, default=str)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentEvent:
        """Rebuild an event from :meth:`to_dict` output; missing keys raise ``KeyError`` naming them."""
        missing = [k for k in ("type", "session_id", "run_id", "sequence", "timestamp") if k not in data]
        if missing:
            raise KeyError(f"event dict is missing {', '.join(missing)}")
        return cls(type=str(data["type"]), session_id=str(data["session_id"]), run_id=str(data["run_id"]),
                   sequence=int(data["sequence"]), timestamp=float(data["timestamp"]),
                   payload=dict(data.get("payload") or {}), event_id=str(data.get("event_id", "")),
                   parent_run_id=_optional(data.get("parent_run_id")),
                   parent_call_id=_optional(data.get("parent_call_id")))


def _optional(value: Any) -> str | None:
    return None if value is None else str(value)


new_event = trusted_builder(AgentEvent)
"""``new_event(event_id, type, session_id, run_id, sequence, timestamp, payload, parent_run_id,
parent_call_id)``: an
:class:`AgentEvent` built positionally without keyword handling, for publishers that
already hold valid values (the runtime builds one per streamed chunk). It skips the
payload freezing: pass :func:`freeze_payload`'s result (``EventBus.publish`` freezes a
payload that is not frozen, at the cost of a copy of the event)."""
