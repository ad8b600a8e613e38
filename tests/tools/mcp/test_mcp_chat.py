"""The chat shows a server's question as an elicitation card and answers it (Python side, fake front end)."""

from __future__ import annotations

import asyncio

import arknb as ark
from arknb.events import EventTypes
from arknb.widgets import ChatWidget


async def test_the_chat_lists_the_question_with_its_form_and_answers_it(kit):
    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="c1", name="ask", arguments_json="{}")]),
                               "Thanks."])
    runtime = ark.AgentRuntime(model, tools=[kit()])
    chat = ChatWidget(runtime)
    sent: list = []
    chat.send = lambda content, buffers=None: sent.append(content)  # the fake front end
    announced = asyncio.get_running_loop().create_future()
    runtime.bus.subscribe(EventTypes.APPROVAL_REQUIRED, lambda e: announced.done() or announced.set_result(e))
    handle = runtime.start("ask me")
    await asyncio.wait_for(announced, 30)
    [row] = [a for a in chat._cards.items(detached=False) if a["kind"] == "elicitation"]
    assert row["detail"]["message"] == "Which color?" and row["detail"]["server"] == "kit"
    assert set(row["detail"]["schema"]["properties"]) == {"color", "count"} and row["live"]
    chat._on_msg(chat, {"type": "elicit", "approval_id": row["approval_id"], "action": "accept",
                        "content": {"color": "blue", "count": 3}, "request_id": 7})
    result = await asyncio.wait_for(handle.wait(), 30)
    assert result.stop_reason == "completed"
    answer = {m.tool_call_id: m.text for m in runtime.state.history if m.role == "tool"}["c1"]
    assert answer == "accepted blue x3"
    replies = [m for m in sent if m.get("type") == "action_result" and m.get("request_id") == 7]
    assert replies and replies[-1]["ok"] is True
    chat.close()
    await runtime.aclose()
