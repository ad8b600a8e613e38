"""The compression budget error tells the truth (issue 26 item 7): what was called to try
(no summary is paid for when none can help), what does not fit, and the token
arithmetic, naming only tool definitions the request has (``search_history`` is the
compressor's own)."""

from __future__ import annotations

import re

import arknb as ark
from arknb import ScriptedModel
from arknb.memory import ContextCompressor


def _parts(message: str) -> tuple[int, list[int]]:
    total = int(re.search(r"needs about (\d+) tokens", message).group(1))
    inside = re.search(r"needs about \d+ tokens \((.*?)\)\. Messages", message).group(1)
    return total, [int(p.split()[0]) for p in inside.split(" + ")]


async def test_when_no_summary_can_help_none_is_paid_for_and_the_arithmetic_adds_up():
    asked: list = []

    def summarize(messages):
        asked.append(messages)
        return "short"

    model = ScriptedModel(["hi", "never"])
    runtime = ark.AgentRuntime(model, compressor=ContextCompressor(150, keep_last=1, summarize=summarize))
    assert (await runtime.run("hello")).stop_reason == "completed"
    result = await runtime.run("tell me " + "about this " * 200)
    assert (result.stop_reason, result.error.code) == ("failed", "context_budget_exceeded")
    message = result.error.message
    assert asked == [] and len(model.requests) == 1, "a summary was paid for that could not help"
    assert "no summary was written" in message and "the model was not called" in message
    assert "search_history is the compressor's own" in message
    assert "message 3 (a user message)" in message
    total, parts = _parts(message)
    assert total == sum(parts) and total > 150
    assert f"Raise max_tokens to at least {total}" in message


async def test_a_summary_written_in_vain_is_said_so_with_the_model_calls_it_cost():
    # The runtime's own model writes the summary, and it is long: what is left does not fit.
    model = ScriptedModel(["hi " * 5, "hello again " * 5, "SUMMARY " + "detail " * 400, "never"])
    runtime = ark.AgentRuntime(model, compressor=ContextCompressor(400, keep_last=1))
    assert (await runtime.run("first " * 100)).stop_reason == "completed"
    assert (await runtime.run("second " * 100)).stop_reason == "completed"
    result = await runtime.run("third " * 60)
    assert (result.stop_reason, result.error.code) == ("failed", "context_budget_exceeded"), result.error
    message = result.error.message
    assert "1 summary was written to try (1 call(s) to the model for summaries)" in message
    assert "the model was not asked to answer" in message and "the model was not called" not in message
    total, parts = _parts(message)
    assert total == sum(parts)
    assert len(model.requests) == 3  # two answers and the summary: never the third answer
