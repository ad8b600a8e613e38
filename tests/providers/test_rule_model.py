"""RuleModel answers what was typed, offline (issue 25 item 3): a text rule replies, a tool
rule calls the tool the question asks for and words its result, an unknown question gets
the fallback, and a tool the runtime lacks is never called."""

from __future__ import annotations

import pytest

import arknb as ark


@ark.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def rules():
    return [
        ark.Rule(r"(-?\d+)\s*(?:\+|plus)\s*(-?\d+)", call="add",
                 arguments=lambda m: {"a": int(m[1]), "b": int(m[2])}, answer="{m[1]} + {m[2]} is **{result}**."),
        ark.Rule(r"\b(hi|hello|what can you do)\b", reply="Hi! I can add numbers: try 'what is 2 + 3?'."),
        ark.Rule(r"(\d+)\s*(?:\*|times)\s*(\d+)", call="multiply", arguments={"a": "{m[1]}", "b": "{m[2]}"}),
    ]


async def test_a_greeting_gets_the_greeting_rule_and_any_order_works():
    runtime = ark.AgentRuntime(ark.RuleModel(rules(), fallback="I only know sums."), tools=[add])
    assert (await runtime.run("Hi! What can you do?")).text == "Hi! I can add numbers: try 'what is 2 + 3?'."
    result = await runtime.run("what is 12 + 30?")
    assert result.text == "12 + 30 is **42**."
    call = next(m for m in runtime.history if m.role == "assistant" and m.tool_calls).tool_calls[0]
    assert (call.name, call.arguments) == ("add", {"a": 12, "b": 30})
    assert (await runtime.run("hello again")).text.startswith("Hi!")  # the same question, the same answer


async def test_an_unknown_question_gets_the_fallback_and_a_missing_tool_is_not_called():
    model = ark.RuleModel(rules(), fallback="I only know sums.")
    runtime = ark.AgentRuntime(model, tools=[add])
    assert (await runtime.run("What is the weather?")).text == "I only know sums."
    assert (await runtime.run("6 times 7")).text == "I only know sums."  # no multiply tool here
    assert all(not m.tool_calls for m in runtime.history if m.role == "assistant")


async def test_the_answer_streams_in_words():
    runtime = ark.AgentRuntime(ark.RuleModel(rules()), tools=[add])
    chunks = []
    runtime.bus.subscribe(ark.EventTypes.LLM_CHUNK, lambda e: chunks.append(e.payload.get("text")))
    await runtime.run("hello")
    assert len(chunks) > 3 and "".join(chunks) == "Hi! I can add numbers: try 'what is 2 + 3?'."


def test_a_rule_without_an_answer_or_a_bad_pattern_is_refused():
    with pytest.raises(ark.ArkError, match="needs reply="):
        ark.Rule(r"x")
    with pytest.raises(ark.ArkError, match="not a regular expression"):
        ark.Rule(r"(", reply="x")
