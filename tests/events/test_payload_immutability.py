"""Listeners get payloads they cannot change for others (issue 10 item 6, DESIGN §4)."""

from __future__ import annotations

import asyncio
import json
import pickle

import pytest

import arknb as ark
from arknb.domain.frozen import FrozenDict, FrozenList
from arknb.events.envelope import freeze_payload, new_event
from arknb.widgets import ChatWidget, TimelineWidget


@ark.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def scripted_runtime() -> ark.AgentRuntime:
    return ark.AgentRuntime(ark.ScriptedModel([
        ark.ScriptedTurn(text=["Let me ", "add."], reasoning=["hmm"],
                         tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')]),
        ark.ScriptedTurn(text=["It is ", "3."]),
    ]), tools=[add], session_id="p")


def vandal(event: ark.AgentEvent, refused: list[str]) -> None:
    """A listener that tries to rewrite what every later listener sees."""
    payload = event.payload
    writes = [lambda: payload.__setitem__("text", "HACKED"), lambda: payload.clear()]
    for value in payload.values():
        if isinstance(value, dict):
            writes.append(lambda value=value: value.__setitem__("text", "HACKED"))
            for inner in value.values():
                if isinstance(inner, list):
                    writes.append(lambda inner=inner: inner.append("HACKED"))
        if isinstance(value, list):
            writes.append(lambda value=value: value.append("HACKED"))
    for write in writes:
        try:
            write()
        except TypeError as exc:
            refused.append(str(exc))
        else:
            raise AssertionError(f"a write into the {event.type} payload went through")


async def test_a_listener_cannot_change_what_later_listeners_and_the_widgets_see():
    reference = scripted_runtime()
    clean: list[ark.AgentEvent] = []
    reference.bus.subscribe(ark.EventTypes.ANY, clean.append)
    await reference.run("add")

    runtime = scripted_runtime()
    refused: list[str] = []
    failures: list[BaseException] = []

    def first(event):
        try:
            vandal(event, refused)
        except BaseException as exc:  # the bus would swallow it; keep it for the assert
            failures.append(exc)

    runtime.bus.subscribe(ark.EventTypes.ANY, first)
    later: list[ark.AgentEvent] = []
    runtime.bus.subscribe(ark.EventTypes.ANY, later.append)
    chat = ChatWidget(runtime)
    timeline = TimelineWidget(runtime)
    await runtime.run("add")
    await asyncio.sleep(0.1)  # the widgets' timed flush

    assert failures == []
    assert refused and all("event payloads are read-only" in r for r in refused)
    assert [(e.type, e.payload) for e in later] == [
        (e.type, e.payload) for e in _same_ids(clean, later)]
    assert all(isinstance(e.payload, FrozenDict) for e in later)
    text = json.dumps([e.to_dict() for e in later])
    assert "HACKED" not in text
    entries = chat.transcript["entries"]
    assert [e["kind"] for e in entries] == ["user", "assistant", "tool", "assistant"]
    assert entries[1]["text"] == "Let me add." and entries[-1]["text"] == "It is 3."
    assert "HACKED" not in json.dumps(chat.transcript) and "HACKED" not in json.dumps(timeline.events)


def _same_ids(reference: list[ark.AgentEvent], actual: list[ark.AgentEvent]) -> list[ark.AgentEvent]:
    """The reference run's events with the ids and times that differ between runs taken from ``actual``."""
    assert [e.type for e in reference] == [e.type for e in actual]
    out = []
    for ref, got in zip(reference, actual):
        payload = json.loads(json.dumps(ref.payload).replace(ref.run_id, got.run_id))
        for key in ("batch_id", "run_id", "duration_ms", "previous_run_id"):
            if key in payload:
                payload[key] = got.payload[key]
        out.append(ark.AgentEvent("", ref.type, got.session_id, got.run_id, got.sequence, got.timestamp, payload))
    return out


def test_events_built_by_hand_are_frozen_too_and_still_round_trip():
    event = ark.AgentEvent("r:1", "x.y", "s", "r", 1, 0.0, {"a": [1, {"b": 2}]})
    assert type(event.payload) is FrozenDict and type(event.payload["a"]) is FrozenList
    with pytest.raises(TypeError, match="event payloads are read-only"):
        event.payload["a"][1]["b"] = 3
    line = event.to_json()
    assert ark.AgentEvent.from_dict(json.loads(line)) == event
    restored = pickle.loads(pickle.dumps(event))
    assert restored == event and type(restored.payload["a"]) is FrozenList
    mutable = event.payload.thaw()
    mutable["a"].append(3)
    assert event.payload == {"a": [1, {"b": 2}]}


def test_the_bus_freezes_a_payload_a_publisher_left_plain():
    bus = ark.EventBus()
    got: list[ark.AgentEvent] = []
    bus.subscribe("*", got.append)
    plain = {"items": [1, 2]}
    bus.publish(new_event("r:1", "x.y", "s", "r", 1, 0.0, plain, None, None))  # the trusted builder skips freezing
    (event,) = got
    with pytest.raises(TypeError):
        event.payload["items"].append(3)
    plain["items"].append(3)  # and the publisher's own dict is not what listeners hold
    assert event.payload == {"items": [1, 2]}


def test_a_payload_nested_too_deeply_is_published_with_the_deep_part_left_out():
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    payload = freeze_payload({"ok": True, "deep": deep})
    assert payload["ok"] is True
    assert "nested more than 200 levels: left out" in json.dumps(payload)
    bus = ark.EventBus()
    got: list[ark.AgentEvent] = []
    bus.subscribe("*", got.append)
    bus.publish(new_event("r:1", "x.y", "s", "r", 1, 0.0, {"deep": deep}, None, None))
    assert len(got) == 1 and bus.listener_errors == 0
