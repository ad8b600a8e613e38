"""The outbox's row format: one event as JSON, and back (DESIGN §13: events are committed
with the facts that caused them, and ``read_events`` reads them back in order)."""

from __future__ import annotations

import json

from arknb.events import AgentEvent, EventTypes

__all__ = ["KEPT_OUT", "event_from_json", "event_to_json", "kept_in_outbox"]

KEPT_OUT = frozenset({EventTypes.LLM_CHUNK})
"""Event types never written to the outbox: a chunk's text is in ``llm.after`` (seed 004 §7)."""


def kept_in_outbox(event_type: str) -> bool:
    """True if events of ``event_type`` go to the outbox."""
    return event_type not in KEPT_OUT


def event_to_json(event: AgentEvent) -> str:
    """The row text of ``event`` (its :meth:`AgentEvent.to_dict` form)."""
    return json.dumps(event.to_dict(), ensure_ascii=False, separators=(",", ":"), default=str)


def event_from_json(text: str) -> AgentEvent:
    """The event a row holds."""
    return AgentEvent.from_dict(json.loads(text))
