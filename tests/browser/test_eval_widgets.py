"""Notebook 06_eval in real JupyterLab: the suite's progress bar, the sortable report table,
the comparison table, a loaded trace in the timeline, and TimelineWidget.compare with its
first divergence marked."""

from __future__ import annotations

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
    names = lambda: report.locator("tbody tr td:first-child").all_inner_texts()  # noqa: E731
    assert names() == ["exact answer", "uses the tool", "judged", "structured"]
    assert report.locator(".st-failed").count() == 1 and report.locator(".st-passed").count() == 3
    status_header = report.locator("th", has_text="status")
    status_header.click()
    assert names()[0] == "structured" and status_header.get_attribute("data-dir") == "asc"
    status_header.click()
    assert names()[-1] == "structured" and status_header.get_attribute("data-dir") == "desc"
    lab.screenshot("report", locator=report)

    comparison = page.locator("[data-testid='arknb-comparison']").first
    assert comparison.locator(".st-regression").count() == 2

    # A loaded trace opens in the timeline.
    timeline = page.locator(TIMELINE).first
    timeline.wait_for()
    assert timeline.locator("[data-testid='arknb-timeline-row']").count() == 19

    # The comparison view: aligned by turn, the first divergence marked on both sides.
    compare = page.locator(COMPARE).first
    compare.wait_for()
    compare.scroll_into_view_if_needed()
    assert compare.get_by_test_id("arknb-compare-divergence-text").text_content() == (
        "turn 1, tool.before: arguments.currency differs: 'USD' != 'GBP'")
    assert compare.get_by_test_id("arknb-compare-label-actual").text_content().startswith("with pounds_only")
    turns = compare.locator("[data-testid='arknb-compare-turn']")
    assert [turns.nth(i).get_attribute("data-turn") for i in range(turns.count())] == ["0", "1", "2"]
    assert turns.nth(1).get_attribute("data-diverges") == "true"
    marked = compare.locator("[data-state='diverges']")
    assert marked.count() == 2 and marked.first.get_attribute("data-type") == "tool.before"
    compare.get_by_test_id("arknb-compare-jump").click()
    diff = compare.get_by_test_id("arknb-compare-detail").get_by_test_id("arknb-diff").inner_text()
    assert "USD" in diff and "GBP" in diff
    lab.screenshot("trace_compare", locator=compare)
    compare.get_by_test_id("arknb-compare-hide-chunks").check()
    assert compare.locator("[data-type='llm.chunk']").count() == 0
    lab.screenshot("trace_compare_no_chunks", locator=compare)
