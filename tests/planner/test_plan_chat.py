"""The chat's side of plan mode (issue 13 item 4), kernel half: the ``plan`` trait follows
``write_todos``, a plan review is a card of kind "plan" that decides through the
controller, and both come back on a chat over a restored runtime."""

from __future__ import annotations

import asyncio

import arknb as ark
from arknb import EventTypes, ScriptedTurn
from arknb.widgets import ChatWidget

from ..widgets.chat_front import ChatFront
from ._plan_kit import first_plan_turn, review_runtime, todos


async def _decided(chat: ChatWidget, runtime: ark.AgentRuntime) -> None:
    """Wait for the chat's decision task, then for the run it continued, then flush."""
    await asyncio.gather(*list(chat._tasks))
    if runtime.current_run is not None:
        await runtime.current_run
    chat._flush()


def _plan_items(chat: ChatWidget) -> list[tuple[str, str]]:
    return [(i["content"], i["status"]) for i in chat.plan.get("items", [])]


async def test_the_plan_trait_follows_write_todos_in_place():
    turns = [first_plan_turn(),
             ScriptedTurn(tool_calls=[todos("t2", ("Read the logs", "completed"), ("Restart the service", "in_progress"))]),
             "Done."]
    runtime, _, _ = review_runtime(turns)
    chat = ChatWidget(runtime)
    ChatFront(chat)
    updates: list[dict] = []
    chat.observe(lambda change: updates.append(change["new"]), names=["plan"])
    assert chat.plan == {}

    await runtime.run("The api is down")
    chat._flush()
    # The plan waits for review: nothing is applied, a plan card is pending, input is blocked.
    assert chat.plan == {}
    [card] = chat.approvals
    assert card["kind"] == "plan" and card["tool_name"] == "write_todos" and card["live"]
    assert [i["content"] for i in card["detail"]["plan"]["items"]] == ["Read the logs", "Restart the service"]
    assert card["detail"]["previous"] is None
    assert chat.input_block == "a plan waits for your review: approve or reject it first"

    chat._on_msg(chat, {"type": "approve", "approval_id": card["approval_id"], "request_id": 1})
    await _decided(chat, runtime)

    assert runtime.state.plan.version == 2
    assert chat.plan["version"] == 2 and chat.plan["approved"] is True and chat.plan["mode"] == "review"
    assert _plan_items(chat) == [("Read the logs", "completed"), ("Restart the service", "in_progress")]
    # The trait is replaced per plan change at most (flushes may fold two), never per token.
    assert 1 <= len(updates) <= 2 and updates[-1]["version"] == 2
    assert chat.approvals == [] and chat.input_block == ""
    chat.close()


async def test_a_rejection_from_the_card_sends_its_reason_to_the_model():
    runtime, model, _ = review_runtime([first_plan_turn(), "I will wait for a better plan."])
    chat = ChatWidget(runtime)
    front = ChatFront(chat)
    await runtime.run("go")
    chat._flush()
    [card] = chat.approvals

    chat._on_msg(chat, {"type": "deny", "approval_id": card["approval_id"], "reason": "check memory first",
                        "request_id": 7})
    await _decided(chat, runtime)
    assert runtime.last_result.stop_reason == "completed"
    assert "Reason: check memory first" in model.requests[-1].messages[-1].text
    [answer] = [m for m in front.of_type("action_result") if m["request_id"] == 7]
    assert answer["ok"] and answer["decision"] == "denied"
    chat.close()


async def test_a_chat_on_a_restored_runtime_shows_the_plan_and_the_pending_review(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    turns = [first_plan_turn(),
             ScriptedTurn(tool_calls=[todos("t2", "Read the logs", "Restart the service", "Write a post-mortem")])]
    runtime, _, _ = review_runtime(turns, storage=storage, session_id="plan-chat")
    await runtime.run("go")
    await runtime.controller.approve_plan()
    assert (await runtime.current_run).stop_reason == "awaiting_approval"  # the changed plan waits
    del runtime

    restored = await ark.AgentRuntime.restore("plan-chat", storage=storage, model=ark.ScriptedModel(["ok"]),
                                              plan_mode="review")
    chat = ChatWidget(restored)
    ChatFront(chat)
    assert chat.plan["version"] == 1 and chat.plan["approved"] is True
    assert _plan_items(chat) == [("Read the logs", "pending"), ("Restart the service", "pending")]
    [card] = chat.approvals
    assert card["kind"] == "plan" and card["live"]
    assert card["detail"]["previous"]["version"] == 1 and card["detail"]["plan"]["version"] == 2
    chat.close()


def test_a_replayed_chat_shows_the_last_plan():
    runtime_events = [
        {"type": EventTypes.PLAN_UPDATED, "run_id": "r", "payload": {
            "plan": {"version": 1, "items": [{"content": "a", "status": "pending"}]}, "approved": False,
            "mode": "auto"}},
        {"type": EventTypes.PLAN_UPDATED, "run_id": "r", "payload": {
            "plan": {"version": 2, "items": [{"content": "a", "status": "completed"}]}, "approved": False,
            "mode": "auto"}},
    ]
    chat = ChatWidget.from_events(runtime_events)
    assert chat.plan["version"] == 2 and chat.plan["items"] == [{"content": "a", "status": "completed"}]
    chat.close()


async def test_the_static_copy_shows_the_todo_list():
    runtime = ark.AgentRuntime(ark.ScriptedModel([
        ScriptedTurn(tool_calls=[todos("t1", ("Look <around>", "completed"), "Fix it")]), "ok"]), plan_mode="auto")
    chat = ChatWidget(runtime)
    ChatFront(chat)
    await runtime.run("go")
    chat._flush()
    html = chat.to_html()
    assert "<code>[x]</code> Look &lt;around&gt;" in html and "<code>[ ]</code> Fix it" in html
    assert "version 1" in html and "<around>" not in html
    chat.close()
