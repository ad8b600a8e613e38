"""The browser infrastructure itself: JupyterLab starts, a notebook runs, an inline
anywidget renders, and a click reaches the kernel while a background task runs."""

from __future__ import annotations

SMOKE = "_fixtures/smoke.ipynb"


def test_notebook_runs_a_cell_and_saves_a_screenshot(lab):
    lab.open(SMOKE)
    assert lab.run_cell(0).strip() == "2"
    shot = lab.screenshot("one_plus_one")
    assert shot.stat().st_size > 0


def test_anywidget_click_reaches_kernel_during_background_task(lab):
    lab.open(SMOKE)
    lab.run_cell(1)
    probe = lab.page.locator("[data-testid='probe'][data-ready='true']")
    probe.wait_for()

    lab.run_cell(2)  # returns at once; the ticker keeps running on the kernel's loop
    ticks = lab.page.get_by_test_id("probe-ticks")
    lab.page.wait_for_function(
        "() => Number(document.querySelector(\"[data-testid='probe-ticks']\").textContent) >= 3"
    )

    lab.page.get_by_test_id("probe-ping").click()
    reply = lab.page.get_by_test_id("probe-reply")
    reply.filter(has_text="pong 1 running=true").wait_for()
    # The ticker kept going after the click: the kernel was not blocked.
    before = int(ticks.text_content())
    lab.page.wait_for_function(
        "(n) => Number(document.querySelector(\"[data-testid='probe-ticks']\").textContent) > n",
        arg=before,
    )
    lab.screenshot("probe", locator=probe)

    assert lab.run_cell(3).strip() == "pings: 1"
    assert lab.kernel_exec("print(ticker_task.done(), pings)").strip() == "True 1"
    assert lab.comm_msg_count() > 0
