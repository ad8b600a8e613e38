"""The graders of DESIGN §11, llm_judge's strict verdicts, and @ev.grader."""

from __future__ import annotations

import pydantic
import pytest

import arknb as ark
import arknb.eval as ev
from arknb import ArkError
from arknb.eval.grading import grade_safely

from ._kit import add, add_model, record


async def _result(model=None, prompt="What is 1 + 2?", tools=(add,)) -> ev.CaseResult:
    runtime = ark.AgentRuntime(model or add_model(), tools=list(tools))
    events = record(runtime)
    run = await runtime.run(prompt)
    return ev.CaseResult.build([run], events, 0.01)


CASE = ev.Case("add", "What is 1 + 2?")


async def grade(g, result=None, case=CASE) -> ev.Grade:
    return await g(case, result or await _result())


async def test_the_case_result_a_grader_sees():
    result = await _result()
    assert result.final_text == "It is 3." and result.turns == 2 and result.stop_reason == "completed"
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("add", {"a": 1, "b": 2})]
    assert result.usage == ark.Usage(input_tokens=30, output_tokens=8)
    assert result.events[0].type == "agent.started" and result.run.run_id == result.events[0].run_id


async def test_exact_contains_and_regex():
    result = await _result()
    assert (await grade(ev.exact("It is 3."), result)).passed
    failed = await grade(ev.exact("It is 3"), result)
    assert not failed.passed and failed.score == 0.0 and "expected 'It is 3', got 'It is 3.'" in failed.explanation
    assert (await grade(ev.exact(" It is 3. ", strip=True), result)).passed
    assert (await grade(ev.contains("is 3"), result)).passed
    assert not (await grade(ev.contains("IS 3"), result)).passed
    assert (await grade(ev.contains("IS 3", case_sensitive=False), result)).passed
    assert (await grade(ev.regex(r"\b\d\.$"), result)).passed
    miss = await grade(ev.regex(r"four"), result)
    assert not miss.passed and "no match for /four/" in miss.explanation
    with pytest.raises(ArkError, match="not a valid regular expression"):
        ev.regex("(")
    with pytest.raises(ArkError, match="text is empty"):
        ev.contains("")


async def test_json_schema_with_a_schema_dict_and_with_a_pydantic_model():
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    good = await _result(ark.ScriptedModel(['{"answer": 3}']))
    fenced = await _result(ark.ScriptedModel(['```json\n{"answer": 3}\n```']))
    wrong = await _result(ark.ScriptedModel(['{"answer": "three"}']))
    prose = await _result(ark.ScriptedModel(["The answer is 3."]))
    g = ev.json_schema(schema)
    assert (await grade(g, good)).passed and (await grade(g, fenced)).passed
    bad = await grade(g, wrong)
    assert not bad.passed and "at answer" in bad.explanation and "'three' is not of type 'integer'" in bad.explanation
    assert "not JSON" in (await grade(g, prose)).explanation

    class Answer(pydantic.BaseModel):
        answer: int

    assert (await grade(ev.json_schema(Answer), good)).passed
    assert not (await grade(ev.json_schema(Answer), prose)).passed
    with pytest.raises(ArkError, match="not valid JSON Schema"):
        ev.json_schema({"type": "nonsense"})


async def test_tool_called_matches_a_subset_of_the_arguments():
    result = await _result()
    assert (await grade(ev.tool_called("add"), result)).passed
    assert (await grade(ev.tool_called("add", {"a": 1}), result)).passed
    assert (await grade(ev.tool_called("add", {"a": 1, "b": 2}), result)).passed
    wrong = await grade(ev.tool_called("add", {"b": 5}), result)
    assert not wrong.passed and "never with {'b': 5}" in wrong.explanation
    missing = await grade(ev.tool_called("search"), result)
    assert not missing.passed and "search was never called (calls: ['add'])" == missing.explanation
    nested = await _result(ark.ScriptedModel([
        ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="x", name="add", arguments_json='{"a": 1, "b": 2}')]), "ok"]))
    assert (await grade(ev.tool_called("add", {"a": 1}, grader_name="adds one"), nested)).name == "adds one"


async def test_trajectory_modes():
    calls = [ark.ToolCall(id=f"c{i}", name=n, arguments_json=f'{{"a": {i}, "b": 0}}', index=0)
             for i, n in enumerate(["add", "mul", "add"])]

    @ark.tool
    def mul(a: int, b: int) -> int:
        """Multiply."""
        return a * b

    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[c]) for c in calls] + ["done"])
    result = await _result(model, tools=(add, mul))
    assert [c.name for c in result.tool_calls] == ["add", "mul", "add"]
    assert (await grade(ev.trajectory(["add", "mul", "add"]), result)).passed
    assert not (await grade(ev.trajectory(["add", "mul"]), result)).passed
    assert (await grade(ev.trajectory(["add", "add"], mode="in_order"), result)).passed
    assert not (await grade(ev.trajectory(["mul", "mul"], mode="in_order"), result)).passed
    assert (await grade(ev.trajectory(["mul", "add", "add"], mode="any_order"), result)).passed
    assert not (await grade(ev.trajectory(["add", "add", "add"], mode="any_order"), result)).passed
    with pytest.raises(ArkError, match="trajectory mode"):
        ev.trajectory(["add"], mode="some")


async def test_max_turns_and_stop_reason():
    result = await _result()
    assert (await grade(ev.max_turns(2), result)).passed
    over = await grade(ev.max_turns(1), result)
    assert not over.passed and over.explanation == "2 model call(s), limit 1"
    assert (await grade(ev.stop_reason("completed"), result)).passed
    assert not (await grade(ev.stop_reason("max_turns"), result)).passed
    with pytest.raises(ArkError, match="not a stop reason"):
        ev.stop_reason("finished")


# -- llm_judge ----------------------------------------------------------------------------

async def test_llm_judge_asks_the_model_and_reads_pass_and_fail():
    judge = ark.ScriptedModel(["PASS: it gives the sum, 3.", "FAIL: it does not say what the tool did"])
    g = ev.llm_judge("The answer states the sum.", judge)
    result = await _result()
    passed = await grade(g, result)
    assert (passed.passed, passed.score, passed.explanation, passed.error) == (True, 1.0, "it gives the sum, 3.", None)
    failed = await grade(g, result)
    assert (failed.passed, failed.score, failed.error) == (False, 0.0, None)
    prompt = judge.requests[0].messages[-1].text
    assert "The answer states the sum." in prompt and "It is 3." in prompt and "add(" in prompt
    assert "What is 1 + 2?" in prompt


@pytest.mark.parametrize("reply", [
    "I think it passes.", "pass: fine", "Verdict: PASS", "PASSED: yes", "**PASS**: ok", "", "MAYBE",
    "The answer is good.\nPASS: good",
])
async def test_an_unparsable_verdict_is_an_errored_grade_never_a_pass(reply):
    g = ev.llm_judge("Any rubric.", ark.ScriptedModel([reply]))
    out = await grade(g)
    assert not out.passed and out.errored and "unparsable verdict" in out.error


async def test_a_failing_judge_model_is_an_errored_grade():
    boom = ark.ScriptedModel([ark.ScriptedTurn(error=ArkError("provider", "provider_unavailable", "down"))])
    out = await grade(ev.llm_judge("Any rubric.", boom))
    assert out.errored and "the judge model failed" in out.error and "provider_unavailable" in out.error


def test_parse_verdict_accepts_only_the_two_forms():
    from arknb.eval.judge import parse_verdict

    assert parse_verdict("  PASS: because\nmore reason ") == (True, "because\nmore reason")
    assert parse_verdict("FAIL") == (False, "")
    with pytest.raises(ValueError):
        parse_verdict("FAIL because")


# -- @ev.grader ---------------------------------------------------------------------------

async def test_function_graders_sync_and_async_returning_bool_float_or_grade():
    @ev.grader
    def short(case, result):
        return len(result.final_text) < 20

    @ev.grader(threshold=0.8)
    async def closeness(case, result):
        return 0.75

    @ev.grader(name="custom")
    def graded(case, result):
        return ev.Grade("custom", True, 0.9, "looks right")

    result = await _result()
    assert (await grade(short, result)) == ev.Grade("short", True, 1.0, "true")
    low = await grade(closeness, result)
    assert (low.passed, low.score, low.name) == (False, 0.75, "closeness")
    assert "0.75 < threshold 0.8" in low.explanation
    assert (await grade(graded, result)).score == 0.9


async def test_a_grader_that_raises_or_returns_junk_gives_an_errored_grade():
    @ev.grader
    def broken(case, result):
        raise KeyError("reference")

    @ev.grader
    def junk(case, result):
        return "yes"

    @ev.grader
    def too_big(case, result):
        return 1.5

    result = await _result()
    for g, text in ((broken, "KeyError: 'reference'"), (junk, "returned a str"), (too_big, "outside [0, 1]")):
        out = await grade_safely(g, CASE, result)
        assert out.errored and not out.passed and text in out.error, out


def test_grade_values_are_checked():
    with pytest.raises(ArkError, match=r"score must be a number in \[0, 1\]"):
        ev.Grade("x", True, 2.0)
    with pytest.raises(ArkError, match="cannot pass"):
        ev.Grade("x", True, 1.0, error="boom")
    with pytest.raises(ArkError, match="threshold"):
        ev.grader(threshold=3)(lambda c, r: True)


@pytest.mark.parametrize("threshold", [3, -0.1, "0.5", True, None])
def test_a_bad_threshold_is_refused_at_the_decorator_line(threshold):
    with pytest.raises(ArkError, match=r"threshold must be a number in \[0, 1\]") as info:
        ev.grader(threshold=threshold)            # before any function is decorated
    assert info.value.code == "invalid_argument"
