"""Typed answers in arknb.eval (DESIGN §17): cassettes record and replay them in the mode
they were asked in, and ``ev.output_is`` grades them."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

import arknb as ark
import arknb.eval as ev
from arknb import ArkError, ScriptedModel, ScriptedTurn

from ._kit import record


class Capital(BaseModel):
    country: str
    city: str


PARIS = Capital(country="France", city="Paris")


@pytest.mark.parametrize("native", [True, False], ids=["native", "tool"])
async def test_a_typed_answer_is_recorded_and_replayed_offline(tmp_path, native):
    path = tmp_path / "typed.jsonl"
    model = ScriptedModel(['{"country": "France", "city": 7}', ScriptedTurn(output=PARIS)], json_schema_output=native)
    recorder = ev.Recorder(model, path)
    assert recorder.capabilities.json_schema_output is native  # forwarded: asked the same way as unrecorded
    recorded = await ark.AgentRuntime(recorder, output_type=Capital).run("Capital of France?")
    assert recorded.output == PARIS

    records = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    assert len(records) == 2  # the wrong answer and its retry are both on the tape
    assert ("output" in records[0]["request"]) is native
    assert records[0]["request"].get("output", {}).get("name", "Capital") == "Capital"

    replay = ev.ReplayModel(path)
    assert replay.capabilities.json_schema_output is native  # the cassette shows how it was asked
    runtime = ark.AgentRuntime(replay, output_type=Capital)
    events = record(runtime)
    replayed = await runtime.run("Capital of France?")
    assert replayed.stop_reason == "completed" and replayed.output == PARIS and replayed.text == recorded.text
    assert [e.type for e in events].count("output.retry") == 1


async def test_replay_with_another_output_type_is_a_mismatch(tmp_path):
    path = tmp_path / "typed.jsonl"
    await ark.AgentRuntime(ev.Recorder(ScriptedModel([ScriptedTurn(output=PARIS)]), path),
                           output_type=Capital).run("Capital of France?")

    class City(BaseModel):
        name: str

    result = await ark.AgentRuntime(ev.ReplayModel(path), output_type=City).run("Capital of France?")
    assert result.stop_reason == "failed" and result.error.code == "cassette_mismatch"


async def _case_result(model, **options) -> ev.CaseResult:
    runtime = ark.AgentRuntime(model, **options)
    events = record(runtime)
    run = await runtime.run("Capital of France?")
    return ev.CaseResult.build([run], events, 0.01)


CASE = ev.Case("capital", "Capital of France?")


async def test_output_is_grades_the_typed_answer():
    result = await _case_result(ScriptedModel([ScriptedTurn(output=PARIS)]), output_type=Capital)
    assert result.output == {"country": "France", "city": "Paris"}
    assert (await ev.output_is(PARIS)(CASE, result)).passed
    assert (await ev.output_is({"city": "Paris"}, partial=True)(CASE, result)).passed
    wrong = await ev.output_is(Capital(country="France", city="Lyon"))(CASE, result)
    assert not wrong.passed and "Lyon" in wrong.explanation and "Paris" in wrong.explanation
    assert not (await ev.output_is({"city": "Paris"})(CASE, result)).passed  # not partial: the whole value


async def test_output_is_fails_clearly_without_a_typed_answer():
    result = await _case_result(ScriptedModel(['{"country": "France", "city": "Paris"}']))
    grade = await ev.output_is(PARIS)(CASE, result)
    assert not grade.passed and "no typed answer" in grade.explanation and "completed" in grade.explanation
    failed = await _case_result(ScriptedModel(["nope"] * 3), output_type=Capital)
    grade = await ev.output_is(PARIS)(CASE, failed)
    assert not grade.passed and "failed" in grade.explanation
    with pytest.raises(ArkError, match="expected is None"):
        ev.output_is(None)


async def test_output_is_reads_a_result_rebuilt_from_its_events():
    live = await _case_result(ScriptedModel([ScriptedTurn(output=PARIS)]), output_type=Capital)
    saved = ev.CaseResult.saved(stop_reason="completed", final_text=live.final_text, turns=1, usage=live.usage,
                                latency_s=0.0, error=None, run_error=None, events=list(live.events), repeat=0)
    assert saved.output == PARIS.model_dump()
    assert (await ev.output_is(PARIS)(CASE, saved)).passed


async def test_a_report_says_tokens_unknown_when_the_server_sent_no_usage(tmp_path):
    cases = [ev.Case("no_usage", "hi"), ev.Case("usage", "hi")]

    def make(case):
        usage = ark.Usage(reported=False) if case.name == "no_usage" else ark.Usage(input_tokens=3, output_tokens=2)
        return ark.AgentRuntime(ScriptedModel([ScriptedTurn("hello", usage=usage)]))

    report = await ev.run_suite(cases, make)
    assert report.row("no_usage").tokens is None and report.row("usage").tokens == 5
    markdown = report.to_markdown()
    assert "| unknown |" in markdown and "| 5 |" in markdown
    again = ev.SuiteReport.from_jsonl(report.to_jsonl(tmp_path / "r.jsonl"))
    assert again.row("no_usage").tokens is None and again.row("usage").tokens == 5
