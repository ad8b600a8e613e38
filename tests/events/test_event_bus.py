"""EventBus: seed 000 §7 and the §14 "EventBus" checklist, one test per item."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest

from arknb import AgentEvent, ArkError, EventBus, EventTypes


def event(type_: str = EventTypes.LLM_CHUNK, seq: int = 1, **payload) -> AgentEvent:
    return AgentEvent(f"r1:{seq}", type_, "s1", "r1", seq, 0.0, payload)


# --- constants ---------------------------------------------------------------------

def test_event_types_are_constants_with_the_design_names():
    expected = {
        "AGENT_STARTED": "agent.started", "AGENT_RESUMED": "agent.resumed", "AGENT_SUCCESS": "agent.success",
        "AGENT_ERROR": "agent.error", "AGENT_CANCELLED": "agent.cancelled", "AGENT_SUSPENDED": "agent.suspended",
        "AGENT_ABORTED": "agent.aborted", "LLM_BEFORE": "llm.before", "LLM_CHUNK": "llm.chunk",
        "LLM_AFTER": "llm.after", "TOOL_BEFORE": "tool.before", "TOOL_AFTER": "tool.after",
        "TOOL_DENIED": "tool.denied", "APPROVAL_REQUIRED": "approval.required",
        "APPROVAL_RESOLVED": "approval.resolved", "LOOP_DETECTED": "loop.detected",
        "HOOK_DECISION": "hook.decision", "HOOK_DIAGNOSTIC": "hook.diagnostic",
        "STATE_PERSISTED": "state.persisted", "TURN_COMPLETED": "turn.completed",
    }
    for name, value in expected.items():
        assert getattr(EventTypes, name) == value
        assert value in EventTypes.ALL
    assert len(set(EventTypes.ALL)) == len(EventTypes.ALL)


def test_subscribe_with_a_constant_receives_only_that_type():
    bus = EventBus()
    seen: list[str] = []
    bus.subscribe(EventTypes.TOOL_BEFORE, lambda e: seen.append(e.type))
    bus.publish(event(EventTypes.LLM_CHUNK))
    bus.publish(event(EventTypes.TOOL_BEFORE))
    assert seen == ["tool.before"]


def test_wildcard_listener_receives_every_type_after_specific_listeners():
    bus = EventBus()
    order: list[str] = []
    bus.subscribe(EventTypes.ANY, lambda e: order.append("any:" + e.type))
    bus.subscribe(EventTypes.LLM_CHUNK, lambda e: order.append("chunk"))
    bus.publish(event(EventTypes.LLM_CHUNK))
    bus.publish(event(EventTypes.AGENT_SUCCESS))
    assert order == ["chunk", "any:llm.chunk", "any:agent.success"]


# --- publish isolation -------------------------------------------------------------

def test_publish_isolates_raising_listener():
    bus = EventBus()
    seen: list[str] = []

    def bad(_event):
        raise RuntimeError("listener bug")

    bus.subscribe(EventTypes.LLM_CHUNK, lambda e: seen.append("first"))
    bus.subscribe(EventTypes.LLM_CHUNK, bad)
    bus.subscribe(EventTypes.LLM_CHUNK, lambda e: seen.append("third"))
    bus.subscribe(EventTypes.ANY, bad)
    bus.publish(event())  # must not raise
    assert seen == ["first", "third"]
    assert bus.listener_errors == 2


def test_listener_subscribing_or_unsubscribing_during_publish_does_not_change_this_delivery():
    bus = EventBus()
    seen: list[str] = []
    unsubscribe_b = None

    def a(_event):
        seen.append("a")
        unsubscribe_b()
        bus.subscribe(EventTypes.LLM_CHUNK, lambda e: seen.append("late"))

    bus.subscribe(EventTypes.LLM_CHUNK, a)
    unsubscribe_b = bus.subscribe(EventTypes.LLM_CHUNK, lambda e: seen.append("b"))
    bus.publish(event())
    assert seen == ["a", "b"]  # the snapshot taken at publish time
    seen.clear()
    unsubscribe_b = lambda: None  # noqa: E731
    bus.publish(event(seq=2))
    assert seen == ["a", "late"]


# --- request -----------------------------------------------------------------------

async def test_request_returns_the_handler_answer_sync_or_async():
    bus = EventBus()
    bus.register_request_handler("state.query", lambda e: {"n": e.payload["n"] + 1})

    async def async_handler(e):
        await asyncio.sleep(0)
        return "pong"

    bus.register_request_handler("ping", async_handler)
    assert await bus.request(event("state.query", n=1)) == {"n": 2}
    assert await bus.request(event("ping")) == "pong"


async def test_request_handler_exception_propagates():
    bus = EventBus()

    async def failing(_event):
        raise ValueError("handler failed")

    bus.register_request_handler("state.query", failing)
    with pytest.raises(ValueError, match="handler failed"):
        await bus.request(event("state.query"))


def test_duplicate_request_handler_rejected():
    bus = EventBus()
    bus.register_request_handler("state.query", lambda e: 1)
    with pytest.raises(ArkError) as info:
        bus.register_request_handler("state.query", lambda e: 2)
    assert (info.value.layer, info.value.code) == ("config", "request_handler_duplicate")
    assert "state.query" in info.value.message


async def test_request_without_handler_raises_missing_unless_a_default_is_given():
    bus = EventBus()
    with pytest.raises(ArkError) as info:
        await bus.request(event("state.query"))
    assert (info.value.layer, info.value.code) == ("config", "request_handler_missing")
    assert await bus.request(event("state.query"), default=None) is None
    assert await bus.request(event("state.query"), default=7) == 7


async def test_unregistered_request_handler_frees_the_type_for_a_new_one():
    bus = EventBus()
    unregister = bus.register_request_handler("q", lambda e: 1)
    unregister()
    bus.register_request_handler("q", lambda e: 2)
    assert await bus.request(event("q")) == 2


# --- unsubscribe and close ---------------------------------------------------------

def test_unsubscribe_stops_delivery():
    bus = EventBus()

    class Widget:
        def __init__(self):
            self.seen = 0

        def on_event(self, _event):
            self.seen += 1

    widget = Widget()
    unsubscribe = bus.subscribe(EventTypes.LLM_CHUNK, widget.on_event)
    bus.publish(event())
    unsubscribe()
    unsubscribe()  # harmless twice
    bus.publish(event(seq=2))
    assert widget.seen == 1
    assert not bus.has_listeners(EventTypes.LLM_CHUNK)
    # No leak: the bus keeps no reference to the listener (or its widget) any more.
    ref = weakref.ref(widget)
    del widget
    gc.collect()
    assert ref() is None


def test_closed_bus_publish_noop_subscribe_noop():
    bus = EventBus()
    seen: list[AgentEvent] = []
    bus.subscribe(EventTypes.ANY, seen.append)
    bus.register_request_handler("q", lambda e: 1)
    bus.close()
    assert bus.closed
    bus.publish(event())
    unsubscribe = bus.subscribe(EventTypes.ANY, seen.append)
    bus.publish(event(seq=2))
    unsubscribe()  # a no-op, must not raise
    assert seen == []
    assert not bus.has_listeners(EventTypes.LLM_CHUNK)


# --- async listeners ---------------------------------------------------------------

async def test_async_listener_is_scheduled_not_awaited():
    bus = EventBus()
    gate = asyncio.Event()
    log: list[str] = []

    async def slow_listener(e):
        log.append("listener started")
        await gate.wait()
        log.append("listener finished")

    bus.subscribe(EventTypes.LLM_CHUNK, slow_listener)
    bus.publish(event())  # returns at once although the listener would block
    log.append("publish returned")
    assert log == ["publish returned"]
    await asyncio.sleep(0)
    assert log == ["publish returned", "listener started"]
    gate.set()
    await bus.drain()
    assert log[-1] == "listener finished"


async def test_async_listener_exception_is_counted_not_raised():
    bus = EventBus()

    async def failing(_event):
        raise RuntimeError("async listener bug")

    bus.subscribe(EventTypes.LLM_CHUNK, failing)
    bus.publish(event())
    await bus.drain()
    assert bus.listener_errors == 1


# --- envelope ----------------------------------------------------------------------

def test_event_envelope_round_trips_through_json_dict():
    original = event(EventTypes.TOOL_AFTER, 5, call={"id": "c1"}, ok=True)
    assert AgentEvent.from_dict(original.to_dict()) == original
    with pytest.raises(KeyError, match="sequence"):
        AgentEvent.from_dict({"type": "x", "session_id": "s", "run_id": "r", "timestamp": 0})


# --- bad input ---------------------------------------------------------------------

@pytest.mark.parametrize("event_type, listener, field", [
    (5, print, "event_type"),
    ("", print, "event_type"),
    (EventTypes.LLM_CHUNK, "not callable", "listener"),
])
def test_subscribe_bad_input_raises_invalid_argument_naming_the_field(event_type, listener, field):
    with pytest.raises(ArkError) as info:
        EventBus().subscribe(event_type, listener)
    assert info.value.code == "invalid_argument"
    assert field in info.value.message


@pytest.mark.parametrize("event_type, handler, field", [
    (5, print, "event_type"),
    ("", print, "event_type"),
    ("q", "not callable", "handler"),
])
def test_register_request_handler_bad_input_raises_invalid_argument_naming_the_field(event_type, handler, field):
    with pytest.raises(ArkError) as info:
        EventBus().register_request_handler(event_type, handler)
    assert info.value.code == "invalid_argument"
    assert field in info.value.message
