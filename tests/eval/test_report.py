"""SuiteReport (HTML, Markdown, JSONL round trip, bad files), rescore and compare."""

from __future__ import annotations

import json

import pytest

import arknb as ark
import arknb.eval as ev
from arknb import ArkError

from ._kit import add, add_model, lines


@ev.grader
def broken(case, result):
    raise RuntimeError("no reference answer")


def _cases():
    return [ev.Case("sum", "What is 1 + 2?", graders=[ev.contains("3"), ev.tool_called("add")],
                    metadata={"tags": ["math"]}),
            ev.Case("wrong <b>bold</b>", "What is 1 + 2?", graders=[ev.contains("4")]),
            ev.Case("errors", ["What is 1 + 2?", "Again?"], graders=[broken])]


def _runtime(case):
    model = add_model()
    return ark.AgentRuntime(ark.ScriptedModel([*model.turns, "Still 3."]), tools=[add])


async def _report(**options) -> ev.SuiteReport:
    return await ev.run_suite(_cases(), _runtime, progress=False, **options)


async def test_rows_hold_what_the_table_shows():
    report = await _report()
    row = report.row("sum")
    assert (row.status, row.turns, row.tool_calls, row.tokens, row.stop_reason, row.passes, row.runs) == (
        "passed", 2, 1, 38, "completed", 1, 1)
    assert [g.name for g in row.grades] == ["contains('3')", "tool_called(add)"] and row.latency_s > 0
    assert report.row("errors").status == "errored"
    assert report.summary() == "3 case(s): 1 passed, 1 failed, 1 errored; pass rate 33%"
    with pytest.raises(ArkError, match="no case named 'nope'"):
        report.row("nope")


async def test_the_html_table_is_sortable_coloured_and_escaped():
    html = (await _report())._repr_html_()
    assert 'data-testid="arknb-report"' in html and "<table>" in html and "addEventListener(\"click\"" in html
    assert 'class="st st-passed"' in html and 'class="st st-failed"' in html and 'class="st st-errored"' in html
    assert "wrong &lt;b&gt;bold&lt;/b&gt;" in html and "<b>bold</b>" not in html
    assert "grader &#x27;broken&#x27;: RuntimeError: no reference answer" in html


async def test_markdown_table():
    md = (await _report()).to_markdown().splitlines()
    assert md[0] == "3 case(s): 1 passed, 1 failed, 1 errored; pass rate 33%"
    assert md[2].startswith("| case | status | passes | grades |")
    assert md[4].startswith("| sum | passed | 1/1 | ✓ contains('3'); ✓ tool_called(add) | 2 | 1 | 38 |")
    assert "| errors | errored | 0/1 | ⚠ broken |" in md[6]


async def test_a_report_round_trips_through_jsonl_with_its_events(tmp_path):
    report = await _report(repeats=2)
    path = report.to_jsonl(tmp_path / "report.jsonl")
    header = json.loads(lines(path)[0])
    assert header["arknb_report"] == 1 and header["cases"] == 3 and header["repeats"] == 2
    again = ev.SuiteReport.from_jsonl(path)
    assert again.rows == report.rows and again.repeats == 2
    assert again.case_input("errors") == ["What is 1 + 2?", "Again?"]
    assert again.case_metadata("sum") == {"tags": ["math"]}
    assert [e.to_dict() for e in again.events("sum", 1)] == [e.to_dict() for e in report.events("sum", 1)]
    assert again.to_markdown() == report.to_markdown()
    result = again.results("sum")[0]
    assert result.final_text == "It is 3." and [c.name for c in result.tool_calls] == ["add"]


async def test_malformed_report_lines_name_file_and_line_and_are_left_alone(tmp_path):
    path = (await _report()).to_jsonl(tmp_path / "report.jsonl")
    good = lines(path)
    case_line = json.loads(good[2])
    bad_status = json.loads(good[1])
    bad_status["runs"][0]["status"] = "great"
    bad_event = json.loads(good[1])
    bad_event["runs"][0]["events"][3]["sequence"] = "seven"
    variants = {
        "json": (good[:2] + ["{oops"] + good[3:], 3, "not valid JSON"),
        "status": (good[:1] + [json.dumps(bad_status)] + good[2:], 2, "runs[0].status must be one of"),
        "event": (good[:1] + [json.dumps(bad_event)] + good[2:], 2, "runs[0].events[3]: event field 'sequence'"),
        "duplicate": (good + [json.dumps(case_line)], 5, "repeats case"),
        "header": (['{"arknb_trace": 1}'] + good[1:], 1, "not an arknb report header"),
    }
    for name, (content, line, text) in variants.items():
        bad = tmp_path / f"{name}.jsonl"
        bad.write_text("\n".join(content) + "\n", encoding="utf-8")
        before = bad.read_bytes()
        with pytest.raises(ArkError) as info:
            ev.SuiteReport.from_jsonl(bad)
        assert info.value.code == "report_corrupt" and f"{bad}, line {line}" in info.value.message, name
        assert text in info.value.message, (name, info.value.message)
        assert bad.read_bytes() == before
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(good[:2]) + "\n", encoding="utf-8")
    with pytest.raises(ArkError, match="announces 3 cases but the file holds 1"):
        ev.SuiteReport.from_jsonl(cut)
    newer = tmp_path / "newer.jsonl"
    newer.write_text(json.dumps({"arknb_report": 7}) + "\n", encoding="utf-8")
    with pytest.raises(ArkError) as info:
        ev.SuiteReport.from_jsonl(newer)
    assert info.value.code == "report_version_unsupported"


async def test_rescore_grades_saved_runs_again_without_running_anything(tmp_path):
    report = await _report()
    saved = ev.SuiteReport.from_jsonl(report.to_jsonl(tmp_path / "r.jsonl"))
    judge = ark.ScriptedModel(["PASS: gives 3"] * 3)
    again = await ev.rescore(saved, [ev.contains("3."), ev.trajectory(["add"], mode="in_order"),
                                     ev.llm_judge("States the sum.", judge)])
    assert [r.status for r in again.rows] == ["passed", "passed", "passed"]
    assert len(judge.requests) == 3                      # graded: yes; re-run: no (no model was given)
    assert [g.name for g in again.row("sum").grades][0] == "contains('3.')"
    assert again.events("sum") and [e.to_dict() for e in again.events("sum")] == [
        e.to_dict() for e in saved.events("sum")]
    per_case = await ev.rescore(report, {"sum": [ev.contains("nope")]})
    assert per_case.row("sum").status == "failed" and per_case.row("errors").grades == ()


async def test_rescore_keeps_a_case_that_raised_errored(tmp_path):
    def make_runtime(case):
        raise RuntimeError("no model")

    report = await ev.run_suite([ev.Case("x", "hi")], make_runtime, progress=False)
    again = await ev.rescore(report, [ev.contains("hi")])
    assert again.row("x").status == "errored" and "no model" in again.row("x").error


async def test_compare_finds_regressions_improvements_additions_and_removals():
    baseline = await _report()
    cases = [ev.Case("sum", "What is 1 + 2?", graders=[ev.contains("4")]),
             ev.Case("wrong <b>bold</b>", "What is 1 + 2?", graders=[ev.contains("3")]),
             ev.Case("new", "What is 1 + 2?")]
    candidate = await ev.run_suite(cases, lambda c: ark.AgentRuntime(add_model(), tools=[add]), progress=False)
    comparison = ev.compare(baseline, candidate)
    assert comparison.regressions == [ev.CaseChange("sum", "passed", "failed")]
    assert comparison.improvements == [ev.CaseChange("wrong <b>bold</b>", "failed", "passed")]
    assert comparison.unchanged == [] and comparison.added == ["new"] and comparison.removed == ["errors"]
    assert comparison.has_regressions
    assert comparison.summary().startswith("1 regression(s), 1 improvement(s), 0 unchanged, 1 added, 1 removed")
    html = comparison._repr_html_()
    assert 'class="st st-regression"' in html and "wrong &lt;b&gt;" in html and 'data-testid="arknb-comparison"' in html
    md = comparison.to_markdown()
    assert "| sum | regression | passed | failed |" in md and "| errors | removed | errored | — |" in md
    assert not ev.compare(baseline, baseline).has_regressions
    with pytest.raises(ArkError, match="takes a SuiteReport"):
        ev.compare(baseline, "candidate.jsonl")


@pytest.mark.parametrize("repeats", [1, 3])
async def test_graders_sharing_a_name_keep_their_own_grades(repeats):
    # Two graders of one kind and text get the same default name; each keeps its grade.
    case = ev.Case("twice", "What is 1 + 2?", graders=[ev.contains("3"), ev.contains("3", case_sensitive=False),
                                                         ev.contains("nine")])
    report = await ev.run_suite([case], lambda c: ark.AgentRuntime(add_model(), tools=[add]), repeats=repeats,
                                progress=False)
    row = report.row("twice")
    assert [g.name for g in row.grades] == ["contains('3')", "contains('3')", "contains('nine')"]
    assert [g.passed for g in row.grades] == [True, True, False] and row.status == "failed"
    if repeats > 1:
        assert row.grades[0].explanation.startswith(f"passed {repeats}/{repeats}:")


async def test_a_grade_passes_over_repeats_only_when_it_passed_in_every_run():
    calls = {"n": 0}

    def make(case):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("no runtime this time")   # this run has no grades at all
        return ark.AgentRuntime(add_model(), tools=[add])

    case = ev.Case("sometimes", "What is 1 + 2?", graders=[ev.contains("3")])
    report = await ev.run_suite([case], make, repeats=2, concurrency=1, progress=False)
    row = report.row("sometimes")
    assert (row.status, row.passes, row.runs) == ("errored", 1, 2)
    assert not row.grades[0].passed and row.grades[0].explanation.startswith("passed 1/2:")
