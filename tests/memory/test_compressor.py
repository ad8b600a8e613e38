"""Context compression (DESIGN §14): summaries in the request, raw history kept, reuse, limits."""

from __future__ import annotations

import json

import pytest

import arknb as ark
from arknb import AgentMessage, EventTypes, ScriptedModel, ScriptedTurn, ToolCall
from arknb.memory import SEARCH_HISTORY, ContextCompressor
from arknb.memory.summaries import SUMMARY_INSTRUCTIONS

from ..runtime._events_kit import of, record


class Summaries:
    """A summarize function that records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[list[AgentMessage]] = []

    def __call__(self, messages: list[AgentMessage]) -> str:
        self.asked.append(list(messages))
        return f"S{len(self.asked)}: {len(messages)} messages about " + ", ".join(
            m.text.split()[0] for m in messages if m.text)


def chatty(n: int, words: int = 30) -> ScriptedModel:
    return ScriptedModel([ScriptedTurn(text=f"answer{i} " + "lorem " * words) for i in range(n)])


async def converse(runtime: ark.AgentRuntime, n: int, words: int = 20) -> None:
    for i in range(n):
        result = await runtime.run(f"question{i} " + "ipsum " * words)
        assert result.stop_reason == "completed", result.error


async def test_a_request_under_the_budget_is_sent_as_it_is() -> None:
    model = chatty(2)
    summarize = Summaries()
    runtime = ark.AgentRuntime(model, system_prompt="Be brief.",
                               compressor=ContextCompressor(10_000, summarize=summarize))
    events = record(runtime)
    await converse(runtime, 2)
    assert [len(r.messages) for r in model.requests] == [2, 4]
    assert model.requests[1].messages[1:] == runtime.state.history[:3]
    assert summarize.asked == [] and runtime.state.context_summaries == ()
    assert of(events, EventTypes.CONTEXT_COMPRESSED) == []
    assert SEARCH_HISTORY not in [t.name for t in model.requests[1].tools]


async def test_older_messages_become_one_summary_in_the_request_and_history_keeps_them(tmp_path) -> None:
    model = chatty(6)
    summarize = Summaries()
    storage = ark.FileStateStorage(tmp_path)
    runtime = ark.AgentRuntime(model, system_prompt="Be brief.", storage=storage, session_id="long",
                               compressor=ContextCompressor(400, keep_last=2, summarize=summarize))
    events = record(runtime)
    await converse(runtime, 6)

    history = runtime.state.history
    assert len(history) == 12  # every raw message is kept
    assert [m.text.split()[0] for m in history[::2]] == [f"question{i}" for i in range(6)]
    compressed = of(events, EventTypes.CONTEXT_COMPRESSED)
    assert compressed, "a 400-token budget must compress this conversation"
    last = model.requests[-1]
    payload = compressed[-1].payload
    end = payload["replaced"]["end"]
    assert payload["before_tokens"] > 400 >= payload["after_tokens"]
    assert payload["replaced"]["start"] == 0 and payload["kept_messages"] == 11 - end
    # System prompt, one summary message, then the raw tail of the conversation.
    assert last.messages[0].text == "Be brief."
    summary = last.messages[1]
    assert summary.role == "user" and summary.text.startswith("[Summary of the first")
    assert last.messages[2:] == history[end:11]
    assert len(last.messages) - 2 >= 2  # keep_last
    assert SEARCH_HISTORY in [t.name for t in last.tools]
    recorded = runtime.state.context_summaries
    assert recorded[0].start == 0 and all(a.end == b.start for a, b in zip(recorded, recorded[1:]))
    assert recorded[-1].end == end and all(s.source == "summarize" for s in recorded)
    saved = await storage.load("long")
    assert saved.context_summaries == recorded and saved.history == history


async def test_the_summarizer_is_asked_only_about_newly_overflowing_messages(tmp_path) -> None:
    model = chatty(14)
    summarize = Summaries()
    runtime = ark.AgentRuntime(model, compressor=ContextCompressor(500, keep_last=2, summarize=summarize))
    await converse(runtime, 14)
    assert len(summarize.asked) >= 2
    assert not any(m.text.startswith("Summary of messages") for b in summarize.asked for m in b)  # no merge here
    asked = [m for batch in summarize.asked for m in batch]
    history = list(runtime.state.history)
    # Each message was summarised at most once, in order, and the batches are consecutive ranges.
    assert asked == history[:len(asked)]
    ranges = [(s.start, s.end) for s in runtime.state.context_summaries]
    assert [e - s for s, e in ranges] == [len(b) for b in summarize.asked]
    # Requests without a new summary reuse the recorded ones: fewer summaries than compressed calls.
    assert len(summarize.asked) < len([r for r in model.requests if r.messages[0].text.startswith("[Summary")])


async def test_a_restored_session_reuses_its_summaries(tmp_path) -> None:
    storage = ark.FileStateStorage(tmp_path)
    first = Summaries()
    runtime = ark.AgentRuntime(chatty(5), storage=storage, session_id="s",
                               compressor=ContextCompressor(300, keep_last=2, summarize=first))
    await converse(runtime, 5)
    recorded = runtime.state.context_summaries
    assert recorded
    again = Summaries()
    model = chatty(1, words=1)
    restored = await ark.AgentRuntime.restore("s", storage=storage, model=model,
                                              compressor=ContextCompressor(300, keep_last=2, summarize=again))
    result = await restored.run("question5 short")
    assert result.stop_reason == "completed"
    covered = recorded[-1].end
    # Nothing already summarised is sent to the summarizer again.
    assert all(m not in runtime.state.history[:covered] for batch in again.asked for m in batch)
    assert recorded[0].text in model.requests[0].messages[0].text


async def test_without_a_summarize_function_the_runtimes_model_writes_the_summary() -> None:
    turns: list = [ScriptedTurn(text=f"answer{i} " + "lorem " * 30) for i in range(4)]
    # The fourth run is the first over the budget: its model call asks for the summary first.
    turns.insert(3, ScriptedTurn(text="The user asked three questions; all were answered."))
    model = ScriptedModel(turns)
    runtime = ark.AgentRuntime(model, compressor=ContextCompressor(300, keep_last=2))
    events = record(runtime)
    await converse(runtime, 4)
    summary_request = model.requests[3]
    assert summary_request.messages[0].text == SUMMARY_INSTRUCTIONS and summary_request.tools == ()
    assert "question0" in summary_request.messages[1].text and "answer0" in summary_request.messages[1].text
    assert runtime.state.context_summaries[0].source == "model"
    assert "all were answered" in model.requests[4].messages[0].text
    assert runtime.state.history[-1].text.startswith("answer3")
    assert of(events, EventTypes.CONTEXT_COMPRESSED)[0].payload["summarizer"] == "model"


async def test_one_huge_tool_result_ends_the_model_call_with_a_clear_error_and_is_not_truncated() -> None:
    @ark.tool
    def read_log() -> str:
        """Read the whole log."""
        return "line\n" * 5_000

    model = ScriptedModel([ScriptedTurn(tool_calls=[ToolCall(id="c1", name="read_log")]), "never sent"])
    runtime = ark.AgentRuntime(model, tools=[read_log],
                               compressor=ContextCompressor(1_000, summarize=Summaries()))
    result = await runtime.run("read the log")
    assert result.stop_reason == "failed"
    assert result.error.code == "context_budget_exceeded" and result.error.layer == "runtime"
    assert "message 3 (the tool result for call c1)" in result.error.message
    assert "Nothing was truncated" in result.error.message
    assert len(model.requests) == 1  # the second model call was never made
    assert runtime.state.history[2].text == "line\n" * 5_000  # the raw result is whole


async def test_search_history_finds_the_exact_text_of_a_replaced_message() -> None:
    turns = [ScriptedTurn(text="noted " + "lorem " * 40),
             *[ScriptedTurn(text=f"answer{i} " + "lorem " * 40) for i in range(3)],
             ScriptedTurn(tool_calls=[ToolCall(id="s1", name=SEARCH_HISTORY,
                                               arguments_json=json.dumps({"query": "zebra password"}))]),
             "The password is zebra-42."]
    model = ScriptedModel(turns)
    runtime = ark.AgentRuntime(model, compressor=ContextCompressor(400, keep_last=2, summarize=Summaries()))
    await runtime.run("remember: the zebra password is zebra-42 " + "ipsum " * 20)
    await converse(runtime, 3)
    result = await runtime.run("what was the zebra password?")
    assert result.text == "The password is zebra-42."
    answer = runtime.state.history[-2]
    assert answer.role == "tool" and "message 1 (user" in answer.text and "zebra-42" in answer.text


async def test_each_message_is_counted_once() -> None:
    counted: list[str] = []

    def count(message: AgentMessage) -> int:
        counted.append(message.text[:12])
        return 10 + len(message.text) // 4

    runtime = ark.AgentRuntime(chatty(8), compressor=ContextCompressor(
        300, keep_last=2, summarize=Summaries(), count_tokens=count))
    await converse(runtime, 8)
    raw = [m.text[:12] for m in runtime.state.history[:-1]]
    counted_raw = [c for c in counted if not c.startswith("[Summary")]
    assert sorted(counted_raw) == sorted(raw)  # each history message once, whatever the number of calls


async def test_a_summary_whose_messages_a_hook_now_shows_differently_is_not_reused() -> None:
    model = chatty(6)
    summarize = Summaries()
    runtime = ark.AgentRuntime(model, compressor=ContextCompressor(300, keep_last=2, summarize=summarize))
    await converse(runtime, 4)
    stale = runtime.state.context_summaries[0]

    @runtime.hooks.before_model_call
    def redact(ctx):
        messages = tuple(AgentMessage.user("[redacted]") if m.text.startswith("question0") else m
                         for m in ctx.request.messages)
        return ark.ModelCallHookResult.proceed(ctx.request.model_copy(update={"messages": messages}))

    asked_before = len(summarize.asked)
    await converse(runtime, 1)
    # The compressor reads the effective view: the old summary no longer matches it (seed 004 §6).
    fresh = [batch for batch in summarize.asked[asked_before:]]
    assert fresh and fresh[0][0].text == "[redacted]"
    assert stale.text not in model.requests[-1].messages[0].text


async def test_a_failing_summarizer_fails_the_run_with_context_summary_failed() -> None:
    def broken(messages):
        raise RuntimeError("summary service down")

    runtime = ark.AgentRuntime(chatty(5), compressor=ContextCompressor(250, keep_last=2, summarize=broken))
    results = [await runtime.run(f"question{i} " + "ipsum " * 20) for i in range(4)]
    failed = results[-1]
    assert failed.stop_reason == "failed" and failed.error.code == "context_summary_failed"
    assert "summary service down" in failed.error.message


@pytest.mark.parametrize("kwargs, fragment", [
    ({"max_tokens": 0}, "max_tokens"), ({"max_tokens": 10, "keep_last": 0}, "keep_last"),
    ({"max_tokens": 10, "summarize": "no"}, "summarize"), ({"max_tokens": 10, "count_tokens": 3}, "count_tokens"),
])
def test_bad_settings_are_refused_with_the_setting_named(kwargs, fragment) -> None:
    with pytest.raises(ark.ArkError) as info:
        ContextCompressor(**kwargs)
    assert info.value.code == "invalid_argument" and fragment in info.value.message


def test_compressor_takes_a_context_compressor() -> None:
    with pytest.raises(ark.ArkError) as info:
        ark.AgentRuntime(chatty(1), compressor=4000)
    assert "ContextCompressor" in info.value.message


async def test_a_bad_count_tokens_result_is_named() -> None:
    runtime = ark.AgentRuntime(chatty(1), compressor=ContextCompressor(100, count_tokens=lambda m: "many"))
    result = await runtime.run("hi")
    assert result.stop_reason == "failed" and "count_tokens must return an int" in result.error.message


async def test_the_summary_call_is_announced_counted_and_kept_out_of_the_users_hooks_and_the_chat() -> None:
    turns: list = [ScriptedTurn(text=f"answer{i} " + "lorem " * 30, usage=ark.Usage(input_tokens=10, output_tokens=5))
                   for i in range(4)]
    turns.insert(3, ScriptedTurn(text="Three questions, all answered.",
                                 usage=ark.Usage(input_tokens=700, output_tokens=9)))
    runtime = ark.AgentRuntime(ScriptedModel(turns), compressor=ContextCompressor(300, keep_last=2))
    seen_by_hook: list[int] = []

    @runtime.hooks.before_model_call(name="count")
    def count(ctx):
        seen_by_hook.append(len(ctx.request.messages))

    events = record(runtime)
    await converse(runtime, 3)
    result = await runtime.run("question3 " + "ipsum " * 20)
    assert result.stop_reason == "completed"

    # Announced: llm.before / llm.after with its purpose, in the run and turn it served.
    befores = [e for e in of(events, EventTypes.LLM_BEFORE) if e.run_id == result.run_id]
    afters = [e for e in of(events, EventTypes.LLM_AFTER) if e.run_id == result.run_id]
    assert [e.payload.get("purpose") for e in befores] == ["context_summary", None]
    assert [e.payload.get("purpose") for e in afters] == ["context_summary", None]
    assert befores[0].payload["turn"] == befores[1].payload["turn"] and not befores[0].payload["tools"]
    assert afters[0].payload["message"]["contents"][0]["text"] == "Three questions, all answered."
    # Counted: in the run's usage and in the session's usages (one entry per model call).
    assert result.usage.input_tokens == 710 and result.usage.output_tokens == 14
    assert len(runtime.state.usages) == 5 and runtime.state.total_usage.input_tokens == 740
    # Not through the user's hooks: they saw the four turns only.
    assert len(seen_by_hook) == 4
    # The chat shows no assistant message for it.
    from arknb.widgets._transcript import Transcript
    transcript = Transcript()
    for event in events:
        transcript.apply(event)
    texts = [e.get("text") for e in transcript.snapshot()["entries"] if e.get("kind") == "assistant"]
    assert "Three questions, all answered." not in texts and len(texts) == 4


async def test_the_compressions_hook_decision_names_the_replaced_range_and_the_summary_not_the_request() -> None:
    runtime = ark.AgentRuntime(chatty(6), compressor=ContextCompressor(300, keep_last=2, summarize=Summaries()))
    events = record(runtime)
    await converse(runtime, 6)
    decisions = [e.payload for e in of(events, EventTypes.HOOK_DECISION) if e.payload["hook"] == "context_compressor"]
    compressed = of(events, EventTypes.CONTEXT_COMPRESSED)
    assert decisions and len(decisions) == len(compressed)
    for decision, mark in zip(decisions, compressed):
        before, after = decision["before"], decision["after"]
        replaced = mark.payload["replaced"]
        # The range that became the summary (after the system prompt, none here) ...
        assert before["replaced"]["start"] == replaced["start"] and before["replaced"]["end"] == replaced["end"]
        assert "messages" not in before["replaced"] or len(before["replaced"]["messages"]) <= 4
        # ... and the one message put in its place; the messages both requests share are left out.
        [summary] = after["inserted"]["messages"]
        assert summary["contents"][0]["text"].startswith("[Summary of the first")
        assert after["message_count"] == before["message_count"] - replaced["end"] + 1
        assert len(json.dumps(decision)) < 2_000  # not the history: it grows with every turn
