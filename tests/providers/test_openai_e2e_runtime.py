"""A full agent run through the loopback server: model → tool call → tool result → answer."""

from __future__ import annotations

import asyncio

import arknb as ark
from arknb.providers.openai_compat import OpenAICompatibleClient, deepseek
from openai_sse_server import Reply, chunk, sse


@ark.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def turn_with_tool_call() -> Reply:
    return Reply([sse(
        chunk(reasoning="Need the tool."),
        chunk("Let me "), chunk("add."),
        chunk(tool_calls=[{"index": 0, "id": "call_1", "type": "function",
                           "function": {"name": "add", "arguments": ""}}]),
        chunk(tool_calls=[{"index": 0, "function": {"arguments": '{"a": 1, '}}]),
        chunk(tool_calls=[{"index": 0, "function": {"arguments": '"b": 2}'}}]),
        chunk(finish="tool_calls"),
        chunk(usage={"prompt_tokens": 20, "completion_tokens": 10}, choices=False))])


async def test_agent_run_with_a_tool_call_end_to_end(server):
    server.script(turn_with_tool_call(),
                  Reply([sse(chunk("It is "), chunk("3."), chunk(finish="stop"),
                             chunk(usage={"prompt_tokens": 40, "completion_tokens": 4}, choices=False))]))
    async with OpenAICompatibleClient(deepseek().replace(base_url=server.base_url), api_key="sk-e2e-secret",
                                      model="deepseek-chat") as model:
        runtime = ark.AgentRuntime(model, tools=[add], system_prompt="Be brief.")
        seen = []
        runtime.bus.subscribe("*", lambda event: seen.append(event.type))
        result = await runtime.run("What is 1 + 2?")

    assert result.stop_reason == "completed", result.error
    assert result.final_message.text == "It is 3."
    assert len(server.requests) == 2
    first, second = (r.body for r in server.requests)
    assert first["messages"] == [{"role": "system", "content": "Be brief."},
                                 {"role": "user", "content": "What is 1 + 2?"}]
    assert first["tools"][0]["function"]["name"] == "add"
    assert second["messages"][2] == {"role": "assistant", "content": "Let me add.", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]}
    assert second["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "3"}
    assert seen.count(ark.EventTypes.TOOL_AFTER) == 1
    assert ark.EventTypes.LLM_CHUNK in seen
    assert "sk-e2e-secret" not in repr(runtime.state.model_dump())


async def test_runtime_cancel_closes_the_model_connection(server):
    server.script(Reply([sse(chunk("Thinking about it"), done=False)], hang=True))
    async with OpenAICompatibleClient(deepseek().replace(base_url=server.base_url), api_key="sk-x",
                                      model="deepseek-chat") as model:
        runtime = ark.AgentRuntime(model)
        streaming = asyncio.Event()
        runtime.bus.subscribe(ark.EventTypes.LLM_CHUNK, lambda event: streaming.set())
        handle = runtime.start("go")
        await streaming.wait()
        runtime.cancel()
        result = await handle
    assert result.stop_reason == "cancelled"
    assert await asyncio.to_thread(server.requests[0].disconnected.wait, 5)
