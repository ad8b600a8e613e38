"""A ``SubAgent.clone`` shares its parent's MCP servers (issue 22b): closing the child must
not break the parent's next MCP call (the connection may start again; the call must work)."""

from __future__ import annotations

import json

import arknb as ark
from arknb.memory.delegation import SubAgentsExtension


def call(call_id: str, name: str, **arguments) -> ark.ToolCall:
    return ark.ToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))


async def test_closing_a_cloned_child_leaves_the_parents_mcp_calls_working(kit):
    server = kit()
    model = ark.ScriptedModel([
        ark.ScriptedTurn(tool_calls=[call("d1", "delegate_task", agent="helper", task="Weather in Oslo?")]),
        ark.ScriptedTurn(tool_calls=[call("h1", "weather", city="Oslo")]),  # the child's MCP call
        "Oslo: 21.5.",                                                     # the child's answer
        "The helper says 21.5.",                                           # the parent's answer
        ark.ScriptedTurn(tool_calls=[call("p1", "weather", city="Bergen")]),  # the parent's own, later
        "Bergen: 21.5."])
    parent = ark.AgentRuntime(model, tools=[server], session_id="p",
                              subagents=[ark.SubAgent.clone("helper", "Looks things up.")])
    assert (await parent.run("Ask the helper.")).text == "The helper says 21.5."
    [extension] = [e for e in parent.extensions if isinstance(e, SubAgentsExtension)]
    [child] = extension.children.values()
    assert any(m.role == "tool" and "Oslo" in m.text for m in child.runtime.state.history)
    assert any(s is server for s in child.runtime.tools.sources)  # the very same connection

    before = server.process_id
    await child.runtime.aclose()
    assert before is not None and server.process_id == before  # the parent's connection stays open

    result = await parent.run("Now Bergen yourself.")
    assert result.stop_reason == "completed" and result.text == "Bergen: 21.5."
    [answer] = [m for m in parent.state.history if m.role == "tool" and m.tool_call_id == "p1"]
    assert not answer.is_error and "Bergen" in answer.text, answer.text
    await parent.aclose()
