"""Notebook 06_eval in real JupyterLab: the suite's progress bar, the sortable report table,
the comparison table, a loaded trace in the timeline, and TimelineWidget.compare with its
first divergence marked."""

from __future__ import annotations

import re

from playwright.sync_api import expect

COMPARE = "[data-testid='arknb-compare'][data-ready='true']"
TIMELINE = "[data-testid='arknb-timeline'][data-ready='true']"


def test_eval_notebook_widgets(lab):
    lab.open("06_eval.ipynb")
    for index in range(lab.cell_count()):
        lab.run_cell(index, timeout=120)
    page = lab.page

    # run_suite drew an ipywidgets progress bar that reached the end.
    bar = page.locator(".jupyter-widgets.widget-hprogress, .widget-hprogress").first
    bar.wait_for()
    page.locator(".widget-label", has_text="4/4 · 3 passed · 1 failed · 0 errored").first.wait_for()

    # The report: a table with a coloured badge per status, sortable by a click.
    report = page.locator("[data-testid='arknb-report']").first
    report.wait_for()
    names = report.locator("tbody tr td:first-child")
    expect(names).to_have_text(["exact answer", "uses the tool", "judged", "structured"])
    expect(report.locator(".st-failed")).to_have_count(1)
    expect(report.locator(".st-passed")).to_have_count(3)
    status_header = report.locator("th", has_text="status")
    status_header.click()
    expect(status_header).to_have_attribute("data-dir", "asc")
    expect(names.first).to_have_text("structured")
    status_header.click()
    expect(status_header).to_have_attribute("data-dir", "desc")
    expect(names.last).to_have_text("structured")
    lab.screenshot("report", locator=report)

    comparison = page.locator("[data-testid='arknb-comparison']").first
    expect(comparison.locator(".st-regression")).to_have_count(2)

    # A loaded trace opens in the timeline.
    timeline = page.locator(TIMELINE).first
    timeline.wait_for()
    # 20 rows: the recorded run streamed its tool call's arguments as an llm.chunk too (kind tool_call)
    expect(timeline.locator("[data-testid='arknb-timeline-row']")).to_have_count(20)

    # The comparison view: aligned by turn, the first divergence marked on both sides.
    compare = page.locator(COMPARE).first
    compare.wait_for()
    compare.scroll_into_view_if_needed()
    expect(compare.get_by_test_id("arknb-compare-divergence-text")).to_have_text(
        "turn 1, tool.before: arguments.currency differs: 'USD' != 'GBP'")
    expect(compare.get_by_test_id("arknb-compare-label-actual")).to_have_text(re.compile(r"^with pounds_only"))
    turns = compare.locator("[data-testid='arknb-compare-turn']")
    expect(turns).to_have_count(3)
    assert turns.evaluate_all("(ts) => ts.map((t) => t.dataset.turn)") == ["0", "1", "2"]
    expect(turns.nth(1)).to_have_attribute("data-diverges", "true")
    marked = compare.locator("[data-state='diverges']")
    expect(marked).to_have_count(2)
    expect(marked.first).to_have_attribute("data-type", "tool.before")
    compare.get_by_test_id("arknb-compare-jump").click()
    diff = compare.get_by_test_id("arknb-compare-detail").get_by_test_id("arknb-diff")
    expect(diff).to_contain_text("USD")
    expect(diff).to_contain_text("GBP")
    lab.screenshot("trace_compare", locator=compare)
    compare.get_by_test_id("arknb-compare-hide-chunks").check()
    expect(compare.locator("[data-type='llm.chunk']")).to_have_count(0)
    lab.screenshot("trace_compare_no_chunks", locator=compare)
