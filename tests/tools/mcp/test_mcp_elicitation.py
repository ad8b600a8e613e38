"""A server's elicitation is a pending item of kind "elicitation" (DESIGN §15), against the kit server."""

from __future__ import annotations

import asyncio
import json

import pytest

import arknb as ark
from arknb.events import EventTypes


def ask_model() -> ark.ScriptedModel:
    return ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="c1", name="ask", arguments_json="{}")]),
                              "Thanks."])


async def asked(runtime: ark.AgentRuntime, storage_dir=None):
    """Start the run and wait for the question; returns (handle, item, saved_when_announced)."""
    announced = asyncio.get_running_loop().create_future()

    def on_required(event):
        if event.payload.get("kind") == "elicitation" and not announced.done():
            saved = None
            if storage_dir is not None:  # what is on disk at the moment it is announced
                saved = "".join(p.read_text() for p in storage_dir.rglob("*.json"))
            announced.set_result((event, saved))

    runtime.bus.subscribe(EventTypes.APPROVAL_REQUIRED, on_required)
    handle = runtime.start("ask me")
    event, saved = await asyncio.wait_for(announced, 30)
    [item] = runtime.controller.list_elicitations()
    return handle, item, event, saved


async def test_accepting_the_form_answers_the_server_and_the_question_was_saved_first(kit, tmp_path):
    storage_dir = tmp_path / "state"
    runtime = ark.AgentRuntime(ask_model(), tools=[kit()], storage=ark.FileStateStorage(storage_dir),
                               session_id="elicit")
    handle, item, event, saved = await asked(runtime, storage_dir)
    assert item.kind == "elicitation" and item.reason == "Which color?"
    assert item.detail["server"] == "kit" and item.detail["tool"] == "ask"
    assert item.detail["schema"]["properties"]["color"]["type"] == "string"
    assert item.detail["schema"]["required"] == ["color"]
    assert item.approval_id in saved  # saved before approval.required was published
    assert event.payload["items"][0]["approval_id"] == item.approval_id
    with pytest.raises(ark.ArkError) as refused:
        runtime.start("something else")
    assert refused.value.code == "pending_approval_blocks_input" and "answer_elicitation" in refused.value.message
    bad = await runtime.controller.answer_elicitation(item.approval_id, {"count": 2})
    assert not bad.ok and "'color' is required" in bad.error.message
    assert runtime.controller.list_elicitations() != []  # still waiting
    done = await runtime.controller.answer_elicitation(item.approval_id, {"color": "red", "count": "2"})
    assert done.ok
    result = await asyncio.wait_for(handle.wait(), 30)
    assert result.stop_reason == "completed"
    answer = {m.tool_call_id: m.text for m in runtime.state.history if m.role == "tool"}["c1"]
    assert answer == "accepted red x2"
    assert runtime.controller.list_elicitations() == []
    assert "elicitation" not in runtime.state.extensions  # the slice is cleared once answered
    await runtime.aclose()


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_declining_or_cancelling_tells_the_server(kit, action):
    runtime = ark.AgentRuntime(ask_model(), tools=[kit()])
    handle, item, _, _ = await asked(runtime)
    decide = runtime.controller.decline_elicitation if action == "decline" else runtime.controller.cancel_elicitation
    assert (await decide(item.approval_id)).ok
    assert (await asyncio.wait_for(handle.wait(), 30)).stop_reason == "completed"
    assert {m.tool_call_id: m.text for m in runtime.state.history if m.role == "tool"}["c1"] == action
    again = await runtime.controller.decline_elicitation(item.approval_id)
    assert not again.ok and again.error.code == "approval_not_found"
    await runtime.aclose()


async def test_a_tool_called_by_hand_has_nobody_to_ask_and_declines(kit):
    server = kit()
    [ask] = [t for t in await server.tools() if t.name == "ask"]
    result = await ask.invoke({}, ark.ToolContext(session_id="s", run_id="r", call_id="c"))
    assert result.text == "decline"
    await server.aclose()


async def test_sampling_is_declined_by_default_and_answered_by_the_runtimes_model_when_allowed(kit):
    def model_muse():
        return ark.ScriptedModel([
            ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="c1", name="muse", arguments_json='{"topic": "rain"}')]),
            "Rain line for the server.",  # the sampling request, asked through the runtime's model
            "Done."])

    declined = ark.AgentRuntime(model_muse(), tools=[kit()])
    await declined.run("go")
    answer = {m.tool_call_id: m.text for m in declined.state.history if m.role == "tool"}["c1"]
    assert answer.startswith("declined:") and "allow_sampling=True" in answer
    await declined.aclose()

    model = model_muse()
    allowed = ark.AgentRuntime(model, tools=[kit(allow_sampling=True)])
    sampled: list = []
    allowed.bus.subscribe(EventTypes.TOOL_SAMPLING, sampled.append)
    await allowed.run("go")
    answer = {m.tool_call_id: m.text for m in allowed.state.history if m.role == "tool"}["c1"]
    assert answer == "model said: Rain line for the server."
    [event] = sampled
    assert event.payload["server"] == "kit" and event.payload["tool"] == "muse" and event.payload["call_id"] == "c1"
    assert event.payload["messages"] == [{"role": "user", "text": "One line about rain"}]
    asked = model.requests[1]
    assert [m.role for m in asked.messages] == ["system", "user"] and asked.messages[0].text == "Be brief."
    assert asked.config.max_tokens == 50
    await allowed.aclose()


async def test_the_call_time_limit_waits_while_a_person_answers(kit):
    # The limit leaves the call's own work room on a loaded 2-core machine (1 s did not).
    runtime = ark.AgentRuntime(ask_model(), tools=[kit(timeout=3.0)])
    handle, item, _, _ = await asked(runtime)
    await asyncio.sleep(3.5)  # a person who takes longer than the call's whole time limit
    assert (await runtime.controller.answer_elicitation(item.approval_id, {"color": "teal"})).ok
    assert (await asyncio.wait_for(handle.wait(), 30)).stop_reason == "completed"
    assert {m.tool_call_id: m.text for m in runtime.state.history if m.role == "tool"}["c1"] == "accepted teal x1"
    await runtime.aclose()
