"""ev.first_divergence: the first difference between two runs' event transcripts."""

from __future__ import annotations

import pytest

import arknb as ark
import arknb.eval as ev
from arknb import ArkError

from ._kit import add, add_model, run_add


async def test_two_runs_of_the_same_script_do_not_diverge():
    _, first = await run_add(add_model())
    _, second = await run_add(add_model())
    # Ids, sequence numbers, timestamps and durations differ between the runs; nothing else.
    assert first[0].run_id != second[0].run_id and first[0].session_id != second[0].session_id
    assert ev.first_divergence(first, second) is None
    assert ev.first_divergence([e.to_dict() for e in first], second) is None


async def test_a_changed_tool_argument_is_named_by_turn_event_and_argument():
    _, expected = await run_add(add_model(b=2))
    _, actual = await run_add(add_model(b=3))
    d = ev.first_divergence(expected, actual)
    assert d is not None
    # the first event that differs is the call's streamed arguments (llm.chunk kind tool_call), parsed
    assert (d.turn, d.path, d.expected, d.actual) == (1, "arguments.b", 2, 3)
    assert d.event_type == "llm.chunk" and expected[d.index].payload["kind"] == "tool_call"
    assert str(d) == "turn 1, llm.chunk: arguments.b differs: 2 != 3"
    # a fragment that is not complete JSON is kept as text: still found at the same chunk
    fragment = [{**e.to_dict(), "payload": {**e.payload, "text": e.payload["text"][:-1]}} if e.type == "llm.chunk"
                and e.payload["kind"] == "tool_call" else e for e in actual]
    cut = ev.first_divergence(expected, fragment)
    assert (cut.index, cut.event_type) == (d.index, "llm.chunk")


async def test_a_hook_rewriting_a_call_shows_on_the_tool_event():
    _, expected = await run_add(add_model())
    runtime = ark.AgentRuntime(add_model(), tools=[add])

    @runtime.hooks.before_tool_call
    def bump(ctx):
        return ark.ToolCallHookResult.proceed(ctx.call.with_arguments({"a": 1, "b": 5}))

    actual = []
    runtime.bus.subscribe("*", actual.append)
    await runtime.run("What is 1 + 2?")
    d = ev.first_divergence(expected, actual)
    assert d.event_type == "hook.decision" or d.event_type == "tool.before", d
    tool_expected = [e for e in expected if e.type != "hook.decision"]
    tool_actual = [e for e in actual if e.type != "hook.decision"]
    d = ev.first_divergence(tool_expected, tool_actual)
    assert str(d) == "turn 1, tool.before: arguments.b differs: 2 != 5"


async def test_different_event_types_and_a_shorter_run_are_reported():
    _, full = await run_add(add_model())
    d = ev.first_divergence(full, full[:4])
    assert (d.index, d.expected, d.actual) == (4, full[4].type, None)
    assert "the actual run ended here" in str(d)
    d = ev.first_divergence(full[:4], full)
    assert d.expected is None and d.actual == full[4].type and "expected run ended" in str(d)
    i = next(i for i, e in enumerate(full) if e.type == "tool.before")
    swapped = full[:i] + [full[i + 1], full[i]] + full[i + 2:]
    d = ev.first_divergence(full, swapped)
    assert d.path == "" and d.index == i
    assert str(d) == f"turn 1, event {i}: expected tool.before, got {full[i + 1].type}"


async def test_events_before_the_first_model_call_are_turn_zero():
    _, a = await run_add(add_model(), prompt="one")
    _, b = await run_add(add_model(), prompt="two")
    d = ev.first_divergence(a, b)
    assert d.turn == 0 and d.event_type == "agent.started"
    assert str(d).startswith("before the first model call, agent.started: input[0].contents[0].text differs")


def test_it_refuses_what_is_not_a_list_of_events():
    with pytest.raises(ArkError, match="trace.from_jsonl"):
        ev.first_divergence("trace.jsonl", [])
    with pytest.raises(ArkError, match=r"expected_events\[0\]"):
        ev.first_divergence([42], [])
