"""The one event envelope every published event uses (seed 003 §5.6)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..domain.trusted import trusted_builder

__all__ = ["AgentEvent", "new_event"]


@dataclass(frozen=True, slots=True)
class AgentEvent:
    """One thing that happened, as observers see it.

    ``sequence`` increases strictly within a session (and so within each run);
    ``payload`` holds JSON-ready values only, so the same event can be written to a
    trace file or sent to a widget unchanged.

    ``parent_run_id`` and ``parent_call_id`` are set on the events of a sub-agent's run
    re-published on its parent's bus (DESIGN §14): the parent run and its
    ``delegate_task`` call, so a timeline nests the child's spans under that call. They
    are None for a runtime's own events (and left out of :meth:`to_dict` then).

    A frozen slotted dataclass rather than a pydantic model: the runtime builds one
    per streamed chunk, and it only ever builds them from values it already trusts.
    """

    type: str
    session_id: str
    run_id: str
    sequence: int
    timestamp: float
    payload: Mapping[str, Any] = field(default_factory=dict)
    event_id: str = ""
    parent_run_id: str | None = None
    parent_call_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the wire form used by traces and widgets)."""
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
        return AgentEvent(self.type, self.session_id, self.run_id, self.sequence, self.timestamp, self.payload,
                          self.event_id, run_id, call_id)

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
"""``new_event(type, session_id, run_id, sequence, timestamp, payload, event_id, parent_run_id,
parent_call_id)``: an
:class:`AgentEvent` built positionally without keyword handling, for publishers that
already hold valid values (the runtime builds one per streamed chunk)."""
