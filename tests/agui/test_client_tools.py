"""Tools the client declares: the run ends with their calls unanswered; results come next input."""

from __future__ import annotations

import json

import arknb as ark
from arknb import ToolCall

from ._kit import post, run_input, user

PICK = {"name": "pick_color", "description": "Ask the page's user for a colour.",
        "parameters": {"type": "object", "properties": {"hint": {"type": "string"}}, "required": ["hint"]}}


def pick(call_id: str = "c1", **arguments) -> ToolCall:
    return ToolCall(id=call_id, name="pick_color", arguments_json=json.dumps(arguments or {"hint": "warm"}))


async def test_a_client_tool_call_ends_the_run_and_its_result_continues_it(serve, client):
    model = ark.ScriptedModel([ark.ScriptedTurn(text="Let me ask.", tool_calls=[pick()]), "Red it is."])
    server = await serve(lambda thread: ark.AgentRuntime(model, session_id=thread))
    events = await post(client, server.url, run_input("t", "r1", user("choose"), tools=[PICK]))
    assert model.requests[0].tools[0].name == "pick_color"  # offered to the model with the client's schema
    assert model.requests[0].tools[0].parameters["required"] == ["hint"]
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    assert start["toolCallName"] == "pick_color" and start["toolCallId"] == "c1"
    assert not [e for e in events if e["type"] == "TOOL_CALL_RESULT"]  # unanswered: the client runs it
    end = events[-1]
    assert end["type"] == "RUN_FINISHED" and end["outcome"] == {"type": "success", "pendingToolCallIds": ["c1"]}

    assistant = {"id": start["parentMessageId"], "role": "assistant", "content": "Let me ask.",
                 "toolCalls": [{"id": "c1", "type": "function",
                                "function": {"name": "pick_color", "arguments": '{"hint": "warm"}'}}]}
    answer = {"id": "tm1", "role": "tool", "toolCallId": "c1", "content": "red"}
    events = await post(client, server.url, run_input("t", "r2", user("choose"), assistant, answer, tools=[PICK]))
    end = events[-1]
    assert end["type"] == "RUN_FINISHED" and end["outcome"] == {"type": "success"}
    assert end["result"]["text"] == "Red it is."
    tool_message = model.requests[-1].messages[-1]
    assert tool_message.role == "tool" and tool_message.tool_call_id == "c1" and tool_message.text == "red"
    assert len(model.requests) == 2


async def test_a_new_message_before_the_client_tool_result_is_refused(serve, client):
    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[pick()]), "never"])
    server = await serve(lambda thread: ark.AgentRuntime(model, session_id=thread))
    await post(client, server.url, run_input("t", "r1", user("choose"), tools=[PICK]))
    events = await post(client, server.url, run_input("t", "r2", user("other", "u2"), tools=[PICK]))
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "pending_approval_blocks_input"
    assert "'c1'" in events[-1]["message"] and len(model.requests) == 1


async def test_arguments_that_break_the_clients_schema_go_back_to_the_model(serve, client):
    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[pick(hint=3)]), "Sorry."])
    server = await serve(lambda thread: ark.AgentRuntime(model, session_id=thread))
    events = await post(client, server.url, run_input("t", "r1", user("choose"), tools=[PICK]))
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")["content"]
    assert "invalid arguments for tool 'pick_color'" in result and "hint" in result
    assert events[-1]["outcome"] == {"type": "success"}


async def test_a_client_tool_named_like_a_server_tool_is_refused(serve, client):
    @ark.tool
    def pick_color(hint: str) -> str:
        """The server's own."""
        return "green"

    model = ark.ScriptedModel(["x"])
    server = await serve(lambda thread: ark.AgentRuntime(model, tools=[pick_color], session_id=thread))
    events = await post(client, server.url, run_input("t", "r1", user("choose"), tools=[PICK]))
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "invalid_argument"
    assert "pick_color" in events[-1]["message"] and model.requests == []
