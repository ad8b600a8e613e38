"""The chat's typed answers and cut answers from real runs, with the fake front end
(DESIGN §17): the field data a view gets, the final_result card closed, the refusal said,
the truncated mark, and the static copy's table (escaped)."""

import json

from pydantic import BaseModel

import arknb as ark
from arknb.widgets import ChatWidget

from .chat_front import ChatFront


class Weather(BaseModel):
    city: str
    temp_c: float


OSLO = Weather(city="Oslo <b>", temp_c=4.5)


def chat_for(runtime, timers):
    chat = ChatWidget(runtime, clock=timers.clock, call_later=timers.call_later)
    return chat, ChatFront(chat)


async def test_a_native_typed_answer_reaches_the_view_with_its_refused_try_said(timers):
    model = ark.ScriptedModel(['{"city": "Oslo", "temp_c": "cold"}', ark.ScriptedTurn(output=OSLO)])
    runtime = ark.AgentRuntime(model, output_type=Weather)
    chat, front = chat_for(runtime, timers)
    await runtime.run("Weather?")
    timers.advance(0.1)
    assert front.entries == chat._transcript.current_entries()
    answers = [e for e in front.entries if e["kind"] == "assistant"]
    assert "output" not in answers[0]  # the refused try stays text
    assert answers[1]["output"] == {"name": "Weather", "value": {"city": "Oslo <b>", "temp_c": 4.5}}
    notices = [e["text"] for e in front.entries if e["kind"] == "notice"]
    assert notices == ["the answer is not a valid Weather (temp_c: Input should be a valid number, unable to parse "
                       "string as a number); asked the model again"]


async def test_a_tool_mode_answer_closes_its_final_result_card(timers):
    wrong = ark.ToolCall(id="f0", name="final_result", arguments_json='{"city": "Oslo"}')
    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[wrong]), ark.ScriptedTurn(output=OSLO)],
                              json_schema_output=False)
    runtime = ark.AgentRuntime(model, output_type=Weather)
    chat, front = chat_for(runtime, timers)
    await runtime.run("Weather?")
    timers.advance(0.1)
    cards = [e for e in front.entries if e["kind"] == "tool"]
    assert [(c["call_id"], c["status"]) for c in cards] == [("f0", "error"), (cards[1]["call_id"], "done")]
    assert "temp_c" in cards[0]["result"] and cards[1]["result"] == "Final answer accepted."
    answer = [e for e in front.entries if e["kind"] == "assistant"][-1]
    assert answer["text"] == "" and answer["output"]["value"] == OSLO.model_dump()
    # nothing is left "not executed" by the run's end
    assert all(c["status"] not in ("not_executed", "requested") for c in cards)


async def test_a_cut_answer_is_marked_in_the_view_and_the_static_copy(timers):
    model = ark.ScriptedModel([ark.ScriptedTurn("The capital of France is", finish_reason="length")])
    runtime = ark.AgentRuntime(model)
    chat, front = chat_for(runtime, timers)
    result = await runtime.run("Capital?")
    timers.advance(0.1)
    assert result.truncated
    answer = [e for e in front.entries if e["kind"] == "assistant"][-1]
    assert answer["truncated"] is True and answer["text"] == "The capital of France is"
    assert "cut short" in chat.to_html() and "max_tokens" in chat.to_html()


async def test_the_static_copy_shows_the_typed_answer_as_an_escaped_table(timers):
    runtime = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(output=OSLO)]), output_type=Weather)
    chat, _ = chat_for(runtime, timers)
    await runtime.run("Weather?")
    timers.advance(0.1)
    page = chat.to_html()
    assert 'typed answer · <code>Weather</code>' in page
    assert '<th scope="row">city</th><td>Oslo &lt;b&gt;</td>' in page
    assert '<th scope="row">temp_c</th><td><code>4.5</code></td>' in page
    assert "Oslo <b>" not in page
    assert "<summary>raw answer</summary>" in page  # the raw JSON is kept, folded
    assert "&quot;city&quot;: &quot;Oslo &lt;b&gt;&quot;" in page


# -- after a restore (issue 24: the notes are saved with the message) ------------------------------


async def test_a_restored_chat_shows_a_typed_answer_as_its_table_and_a_cut_answer_marked(tmp_path, timers):
    storage = ark.SQLiteStore(tmp_path / "s.sqlite3")
    first = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(output=OSLO),
                                                ark.ScriptedTurn("It is rather", finish_reason="length")]),
                             output_type=Weather, storage=storage, session_id="s")
    await first.run("Weather?")
    await first.run("And tomorrow?", output_type=str)
    await first.aclose()
    again = await ark.AgentRuntime.restore("s", storage=storage, model=ark.ScriptedModel([]))
    chat, front = chat_for(again, timers)
    typed, cut = [e for e in front.entries if e["kind"] == "assistant"]
    assert typed["output"] == {"name": "Weather", "value": {"city": "Oslo <b>", "temp_c": 4.5}}
    assert "truncated" not in typed
    assert cut["truncated"] is True and cut["text"] == "It is rather" and "output" not in cut
    assert front.entries == chat.transcript["entries"]
    page = chat.to_html()
    assert '<th scope="row">city</th><td>Oslo &lt;b&gt;</td>' in page and "cut short" in page
    chat.close()
    await again.aclose()


async def test_a_tool_mode_typed_answer_is_restored_with_its_table(tmp_path, timers):
    storage = ark.FileStateStorage(tmp_path)
    model = ark.ScriptedModel([ark.ScriptedTurn(output=OSLO)], json_schema_output=False)
    first = ark.AgentRuntime(model, output_type=Weather, storage=storage, session_id="s")
    await first.run("Weather?")
    again = await ark.AgentRuntime.restore("s", storage=storage, model=ark.ScriptedModel([]))
    chat, front = chat_for(again, timers)
    answer = [e for e in front.entries if e["kind"] == "assistant"][-1]
    assert answer["output"]["value"] == {"city": "Oslo <b>", "temp_c": 4.5}
    card = [e for e in front.entries if e["kind"] == "tool"][-1]
    assert (card["name"], card["status"]) == ("final_result", "done")
    chat.close()
