"""A real MCP server's question (elicitation) over AG-UI, end to end (issue 22b): the stream
ends with it as an interrupt while the run waits mid-call; a resume answers it through the
controller and streams the rest of the same run; the server receives the answer."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import arknb as ark

from ._kit import interrupts, post, run_input, user

KIT = str(Path(__file__).resolve().parents[1] / "tools" / "mcp" / "kit_server.py")


def ask(call_id: str) -> ark.ScriptedTurn:
    return ark.ScriptedTurn(tool_calls=[ark.ToolCall(id=call_id, name="ask", arguments_json="{}")])


async def test_an_mcp_elicitation_is_an_interrupt_resumed_over_agui(serve, client, tmp_path):
    effects = tmp_path / "effects.log"
    effects.touch()
    mcp = ark.MCPServer.stdio(sys.executable, [KIT], env={"ARKNB_MCP_LOG": str(effects)}, name="kit")
    model = ark.ScriptedModel([ask("a1"), ask("a2"), "Both answered."])
    runtimes: list[ark.AgentRuntime] = []

    def factory(thread: str) -> ark.AgentRuntime:
        runtimes.append(ark.AgentRuntime(model, tools=[mcp], session_id=thread))
        return runtimes[-1]

    server = await serve(factory)
    first = await post(client, server.url, run_input("t1", "r1", user("ask me")))
    [question] = interrupts(first)
    assert question["reason"] == "elicitation" and question["message"] == "Which color?"
    assert question["toolCallId"] == "a1" and question["metadata"]["arknb"]["kind"] == "elicitation"
    assert set(question["responseSchema"]["properties"]["content"]["properties"]) == {"color", "count"}
    [runtime] = runtimes
    assert runtime.is_running  # the call waits for the answer, mid-run
    assert [(i.approval_id, i.kind) for i in runtime.controller.list_pending_approvals()] == \
        [(question["id"], "elicitation")]

    # A payload that does not match the form is refused before anything is decided.
    bad = await post(client, server.url, run_input("t1", "r2", resume=[
        {"interruptId": question["id"], "status": "resolved", "payload": {"action": "maybe"}}]))
    assert bad[-1]["type"] == "RUN_ERROR" and bad[-1]["code"] == "agui_input_invalid"

    second = await post(client, server.url, run_input("t1", "r3", resume=[
        {"interruptId": question["id"], "status": "resolved",
         "payload": {"action": "accept", "content": {"color": "green", "count": 2}}}]))
    results = [e["content"] for e in second if e["type"] == "TOOL_CALL_RESULT"]
    assert results == ["accepted green x2"]
    [again] = interrupts(second)  # the same run went on and the server asked again
    assert again["toolCallId"] == "a2" and again["id"] != question["id"]

    third = await post(client, server.url, run_input("t1", "r4", resume=[
        {"interruptId": again["id"], "status": "cancelled"}]))
    assert [e["content"] for e in third if e["type"] == "TOOL_CALL_RESULT"] == ["cancel"]
    assert third[-1]["type"] == "RUN_FINISHED" and third[-1]["outcome"]["type"] == "success"
    assert effects.read_text().split() == ["elicit", "accept", "elicit", "cancel"]
    assert not runtime.is_running and runtime.controller.list_pending_approvals() == []
    assert json.dumps(third[-1]["result"]).count("Both answered.") == 1
    await runtime.aclose()
