"""Recording a runtime's events in tests."""

from __future__ import annotations

from arknb import AgentEvent, AgentRuntime, EventTypes


def record(runtime: AgentRuntime) -> list[AgentEvent]:
    """Every event the runtime publishes from now on, in order."""
    events: list[AgentEvent] = []
    runtime.bus.subscribe(EventTypes.ANY, events.append)
    return events


def of(events: list[AgentEvent], type_: str) -> list[AgentEvent]:
    """The events of one type."""
    return [e for e in events if e.type == type_]
