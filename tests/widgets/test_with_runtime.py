"""The widgets on the real AgentRuntime with the scripted model (no fakes but the front end)."""

import asyncio

import arknb as ark
from arknb.widgets import ChatWidget, TimelineWidget

from .conftest import BufferedFrontend, Frontend


@ark.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@ark.tool(risk="dangerous")
def clear_cache(path: str) -> str:
    """Delete a cache folder."""
    return f"cleared {path}"


def make_runtime(turns):
    return ark.AgentRuntime(ark.ScriptedModel(turns), tools=[add, clear_cache], session_id="w")


async def settle(runtime):
    while runtime.is_running:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)  # let the last timed flush run


async def test_send_stream_approve_and_finish():
    runtime = make_runtime([
        ark.ScriptedTurn(text=["Let ", "me ", "check."], reasoning=["hmm"], tool_calls=[
            ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}'),
            ark.ToolCall(id="c2", name="clear_cache", arguments_json='{"path": "/tmp"}')]),
        ark.ScriptedTurn(text=["It is ", "3."]),
    ])
    chat = ChatWidget(runtime)
    timeline = TimelineWidget(runtime)
    front, tl_front = Frontend(chat, "transcript"), BufferedFrontend(timeline)
    chat._on_msg(chat, {"type": "send", "text": "add and clean", "request_id": "r1"})
    assert front.of_type("action_result")[0]["ok"] is True
    await settle(runtime)
    assert chat.status == "awaiting_approval"
    (card,) = chat.approvals
    assert card["tool_name"] == "clear_cache" and card["call_id"] == "c2"

    chat._on_msg(chat, {"type": "approve", "approval_id": card["approval_id"], "request_id": "r2"})
    await asyncio.sleep(0.05)
    await settle(runtime)
    assert front.of_type("action_result")[-1]["ok"] is True
    assert chat.approvals == []
    assert chat.status == "completed"
    entries = chat.transcript["entries"]
    kinds = [e["kind"] for e in entries]
    assert kinds[:4] == ["user", "assistant", "tool", "tool"]
    assert entries[1]["text"] == "Let me check." and entries[1]["reasoning"] == "hmm"
    cards = {e["call_id"]: e for e in entries if e["kind"] == "tool"}
    assert (cards["c1"]["status"], cards["c1"]["result"]) == ("done", "3")
    assert (cards["c2"]["status"], cards["c2"]["result"]) == ("done", "cleared /tmp")
    assert [e for e in entries if e["kind"] == "assistant"][-1]["text"] == "It is 3."

    # a second approve of the same id is refused or idempotent, and answered either way
    chat._on_msg(chat, {"type": "approve", "approval_id": card["approval_id"], "request_id": "r3"})
    await asyncio.sleep(0.05)
    assert front.of_type("action_result")[-1]["request_id"] == "r3"

    received = tl_front.received()
    assert [e["sequence"] for e in received] == sorted(e["sequence"] for e in received)
    kinds = {s["kind"] for s in timeline.spans()}
    assert kinds == {"run", "turn", "model", "tool"}


async def test_deny_reaches_the_model_and_a_busy_runtime_refuses_a_second_send():
    runtime = make_runtime([
        ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="c9", name="clear_cache", arguments_json='{"path": "/"}')]),
        ark.ScriptedTurn(text="Understood, not clearing."),
    ])
    chat = ChatWidget(runtime)
    front = Frontend(chat)
    chat._on_msg(chat, {"type": "send", "text": "clear everything"})
    chat._on_msg(chat, {"type": "send", "text": "again", "request_id": "busy"})
    busy = [r for r in front.of_type("action_result") if r["request_id"] == "busy"][0]
    assert busy["ok"] is False and busy["error"]
    await settle(runtime)
    (card,) = chat.approvals
    chat._on_msg(chat, {"type": "deny", "approval_id": card["approval_id"], "reason": "too broad"})
    await asyncio.sleep(0.05)
    await settle(runtime)
    tool = next(e for e in chat.transcript["entries"] if e["kind"] == "tool")
    assert tool["status"] == "denied"
    assert chat.transcript["entries"][-1]["text"] == "Understood, not clearing."


async def test_stop_cancels_a_slow_stream():
    runtime = make_runtime([ark.ScriptedTurn(text=["tick "] * 200, chunk_delay=0.01)])
    chat = ChatWidget(runtime)
    Frontend(chat)
    chat._on_msg(chat, {"type": "send", "text": "count"})
    await asyncio.sleep(0.1)
    chat._on_msg(chat, {"type": "stop"})
    await settle(runtime)
    assert chat.status == "cancelled"


async def test_stop_while_awaiting_approval_closes_the_card_and_the_call():
    call = ark.ToolCall(id="c9", name="clear_cache", arguments_json='{"path": "/tmp/x"}')
    runtime = make_runtime([ark.ScriptedTurn(text="Clearing.", tool_calls=[call])])
    recorded = []
    runtime.bus.subscribe(ark.EventTypes.ANY, recorded.append)
    chat = ChatWidget(runtime)
    Frontend(chat)
    chat._on_msg(chat, {"type": "send", "text": "clear it"})
    await settle(runtime)
    assert chat.status == "awaiting_approval" and len(chat.approvals) == 1
    chat._on_msg(chat, {"type": "stop"})
    await settle(runtime)
    assert chat.status == "cancelled"
    assert chat.approvals == []
    card = next(e for e in chat.transcript["entries"] if e["kind"] == "tool")
    assert card["status"] == "not_executed" and card["is_error"]
    # A replay of the same events offers no pending approval either.
    replay = ChatWidget.from_events(recorded)
    assert replay.status == "cancelled" and replay.approvals == []
    assert next(e for e in replay.transcript["entries"] if e["kind"] == "tool")["status"] == "not_executed"


async def test_redisplay_on_a_finished_runtime_shows_its_history():
    runtime = make_runtime([ark.ScriptedTurn(text="Hello there.")])
    await runtime.run("hi")
    chat = ChatWidget(runtime)
    assert [(e["kind"], e.get("text")) for e in chat.transcript["entries"]] == [
        ("user", "hi"), ("assistant", "Hello there.")]
