"""Every card click has a twin cell (issue 25 item 1), in real JupyterLab: in notebooks 03,
07, 08 and 09 a reader may decide on the card and then run the cell that decides the same
thing, or run the cell first and look at the card after. Either way every later cell runs
without an error, nothing is decided twice, and the outputs tell the same story.

Each test opens the tutorial itself (the committed notebook), runs its cells in order
through JupyterLab's command registry, and clicks where a reader would.
"""

from __future__ import annotations

import json

from playwright.sync_api import expect

from .test_widgets import CHAT, _wait_for_chat_status


def _code_cells_from(lab, first: int) -> list[int]:
    return lab.page.evaluate(
        "(first) => window.jupyterapp.shell.currentWidget.content.widgets"
        ".map((c, i) => [c.model.type, i]).filter(([t, i]) => t === 'code' && i >= first).map(([, i]) => i)",
        first)


def _run_rest(lab, first: int) -> dict[int, str]:
    """Run every code cell from ``first`` to the end (a cell that raises fails the test)."""
    return {index: lab.run_cell(index, timeout=120) for index in _code_cells_from(lab, first)}


def _run_up_to(lab, text: str) -> int:
    """Run the code cells before the one containing ``text``, and that one; its index."""
    last = lab.cell_index(text)
    for index in _code_cells_from(lab, 0):
        if index > last:
            break
        lab.run_cell(index, timeout=120)
    return last


# --------------------------------------------------------------------------- 07


def _07_restored_with_its_card(lab):
    lab.open("07_durable.ipynb")
    _run_up_to(lab, "chat = ark.ChatWidget(runtime)")
    chat = lab.page.locator(CHAT).first
    card = chat.get_by_test_id("arknb-in-doubt")
    card.wait_for()
    # Before anyone decides: the fetches that finished before the kill read "reused" (their
    # saved results stand), the call in doubt does not (issue 25 item 2).
    badge = "[data-call-id='{}'] [data-testid='arknb-tool-status']"
    expect(chat.locator(badge.format("c1"))).to_have_text("reused")
    expect(chat.locator(badge.format("c2"))).to_have_text("reused")
    expect(chat.locator(badge.format("c3"))).not_to_have_text("reused")
    return chat, card


def _07_story(lab, outputs: dict[int, str], sent: str) -> None:
    decide = outputs[lab.cell_index("none left if you decided on the card")]
    assert "still in doubt: 0" in decide and "stop_reason: completed" in decide
    effects = outputs[lab.cell_index("print(Counter(")]
    assert "'send_report': 1" in effects and "'fetch_page': 2" in effects  # nothing ran twice
    assert f"c3 -> {sent}" in effects
    ops = outputs[lab.cell_index("for op in await store.list_operations")]
    assert "settled by=person" in ops


def test_07_mark_done_on_the_card_then_run_the_cells(lab):
    chat, card = _07_restored_with_its_card(lab)
    card.get_by_test_id("arknb-in-doubt-text").fill("sent (I read the mail log)")
    card.get_by_test_id("arknb-mark-done").click()
    assert _wait_for_chat_status(lab, "completed") == "completed"
    outputs = _run_rest(lab, lab.cell_index("none left if you decided on the card"))
    decide = outputs[lab.cell_index("none left if you decided on the card")]
    assert "marked done" not in decide  # the cell decided nothing: the card had
    _07_story(lab, outputs, "sent (I read the mail log)")
    lab.screenshot("07_clicked_then_ran", locator=chat)


def test_07_run_the_cell_then_the_card_is_gone(lab):
    chat, card = _07_restored_with_its_card(lab)
    outputs = _run_rest(lab, lab.cell_index("none left if you decided on the card"))
    assert "marked done: send_report | ok: True" in outputs[lab.cell_index("none left if you decided on the card")]
    _07_story(lab, outputs, "sent to oncall@example.org (seen in the mail log)")
    expect(card).to_have_count(0)
    assert chat.get_attribute("data-status") == "completed"


def test_07_rerun_on_the_card_runs_the_report_again_and_the_cells_still_work(lab):
    chat, card = _07_restored_with_its_card(lab)
    card.get_by_test_id("arknb-rerun").click()
    assert _wait_for_chat_status(lab, "completed") == "completed"
    outputs = _run_rest(lab, lab.cell_index("none left if you decided on the card"))
    assert "stop_reason: completed" in outputs[lab.cell_index("none left if you decided on the card")]
    assert "'send_report': 2" in outputs[lab.cell_index("print(Counter(")]  # the reader chose to send again


# --------------------------------------------------------------------------- 08


def _08_first_card(lab):
    lab.open("08_planning_and_skills.ipynb")
    _run_up_to(lab, 'result = await runtime.run("The api service is down. Fix it.")')
    chat = lab.page.locator(CHAT).first
    card = chat.locator("[data-testid='arknb-plan-review'][data-state='live']")
    card.wait_for()
    expect(card).to_contain_text("version 1")
    return chat, card


def _08_story(lab, outputs: dict[int, str], reason: str) -> None:
    reject = outputs[lab.cell_index("review.plan.version == 1")]
    assert "stop_reason: awaiting_approval" in reject
    assert f"the model read: The reviewer rejected this plan. Reason: {reason}" in reject
    approved = outputs[lab.cell_index("approved on the card already?")]
    assert "stop_reason: completed" in approved and "Restarted it with 4 GB" in approved
    events = outputs[lab.cell_index("watched = (ark.EventTypes.PLAN_UPDATED")]
    assert [line.split()[:2] for line in events.splitlines() if "review_resolved" in line] == [
        ["plan.review_resolved", "denied"], ["plan.review_resolved", "approved"]]  # rejected once, not twice


def test_08_reject_on_the_card_then_run_the_cells(lab):
    chat, card = _08_first_card(lab)
    card.get_by_test_id("arknb-plan-reason").fill("look at the memory first")
    card.get_by_test_id("arknb-plan-reject").click()
    revised = chat.locator("[data-testid='arknb-plan-review'][data-state='live']")
    revised.locator("[data-testid='arknb-plan-item']", has_text="Check the memory use").wait_for()
    expect(revised).to_contain_text("version 2")
    lab.screenshot("08_revised_plan_card", locator=chat)
    outputs = _run_rest(lab, lab.cell_index("show_review()"))
    assert "plan version 2 waits for review" in outputs[lab.cell_index("show_review()")]
    reject = outputs[lab.cell_index("review.plan.version == 1")]
    assert "decision: denied" not in reject  # the cell rejected nothing: the card had
    _08_story(lab, outputs, "look at the memory first")


def test_08_run_the_cells_then_approve_the_revised_plan_on_the_card(lab):
    chat, card = _08_first_card(lab)
    outputs = _run_rest(lab, lab.cell_index("show_review()"))  # the cells decide both reviews
    assert "ok: True | decision: denied" in outputs[lab.cell_index("review.plan.version == 1")]
    _08_story(lab, outputs, "Check the memory use first, and raise the limit.")
    expect(chat.locator("[data-testid='arknb-plan-review'][data-state='live']")).to_have_count(0)


def test_08_approve_the_revised_plan_on_the_card_then_run_the_approve_cell(lab):
    chat, card = _08_first_card(lab)
    for index in _code_cells_from(lab, lab.cell_index("show_review()")):
        if index >= lab.cell_index("approved on the card already?"):
            break
        lab.run_cell(index)
    revised = chat.locator("[data-testid='arknb-plan-review'][data-state='live']")
    expect(revised).to_contain_text("version 2")
    revised.get_by_test_id("arknb-plan-approve").click()
    assert _wait_for_chat_status(lab, "completed", timeout=60) == "completed"
    outputs = _run_rest(lab, lab.cell_index("approved on the card already?"))
    assert "stop_reason: completed" in outputs[lab.cell_index("approved on the card already?")]
    assert "plan version 4" in outputs[lab.cell_index("plan_now = runtime.state.plan")]


# --------------------------------------------------------------------------- 09


def _09_card(lab):
    lab.open("09_memory_and_subagents.ipynb")
    _run_up_to(lab, 'handle = ops.start("The build server is out of disk space.")')
    chat = lab.page.locator(CHAT).first
    card = chat.locator("[data-testid='arknb-approval'][data-state='live']")
    card.wait_for()
    return chat, card


def _09_story(lab, outputs: dict[int, str]) -> None:
    approve = outputs[lab.cell_index("pending = ops.controller.list_pending_approvals()")]
    assert "stop_reason: completed" in approve and "clear_cache ran 1 time(s)" in approve
    assert "ended: completed" in outputs[lab.cell_index('child = await storage.load("ops.cleaner.1")')]


def test_09_approve_on_the_card_then_run_the_cells(lab):
    chat, card = _09_card(lab)
    card.get_by_test_id("arknb-approve").click()
    assert _wait_for_chat_status(lab, "completed") == "completed"
    outputs = _run_rest(lab, lab.cell_index("pending = ops.controller.list_pending_approvals()"))
    assert "ok:" not in outputs[lab.cell_index("pending = ops.controller.list_pending_approvals()")]
    _09_story(lab, outputs)


def test_09_run_the_cell_then_the_card_is_decided(lab):
    chat, card = _09_card(lab)
    outputs = _run_rest(lab, lab.cell_index("pending = ops.controller.list_pending_approvals()"))
    assert "ok: True | all decided: True" in outputs[lab.cell_index("pending = ops.controller.list_pending_approvals()")]
    _09_story(lab, outputs)
    expect(chat.locator("[data-testid='arknb-approval'][data-state='live']")).to_have_count(0)
    # The timeline opened at the cell that promises it shows the child's run nested under the
    # delegate_task call, live (it was an empty box when it was opened after the run).
    timeline = lab.page.locator("[data-testid='arknb-timeline'][data-ready='true']").first
    delegate = timeline.locator("[data-testid='arknb-span'][data-kind='tool']", has_text="delegate_task d1").first
    delegate.wait_for()
    depth = int(delegate.get_attribute("data-depth"))
    timeline.locator(f"[data-testid='arknb-span'][data-kind='run'][data-depth='{depth + 1}']").first.wait_for()
    clears = timeline.locator("[data-testid='arknb-span'][data-kind='tool']", has_text="clear_cache")
    assert int(clears.first.get_attribute("data-depth")) > depth + 1  # inside the child's run
    durations = clears.get_by_test_id("arknb-span-duration").all_inner_texts()
    assert any(d.endswith("ms") and d != "<1 ms" and int(d.split()[0]) >= 250 for d in durations), durations
    timeline.scroll_into_view_if_needed()
    lab.screenshot("09_live_timeline_nested", locator=timeline)


# --------------------------------------------------------------------------- 03


def _cleared(lab) -> list[str]:
    return json.loads(lab.kernel_exec("import json; print(json.dumps(CLEARED))"))


def test_03_click_every_card_then_run_the_cells(lab):
    lab.open("03_approvals.ipynb")
    _run_up_to(lab, 'handle = runtime.start("Please clear the cache')
    chat = lab.page.locator(CHAT).first
    live = chat.locator("[data-testid='arknb-approval'][data-state='live']")
    live.first.wait_for()
    live.first.get_by_test_id("arknb-approve").click()
    chat.locator("[data-testid='arknb-assistant-text']", has_text="Done: /tmp/cache is cleared.").wait_for()
    for index in _code_cells_from(lab, lab.cell_index("result = await handle")):
        if index > lab.cell_index('handle = runtime.start("Clear /var/log/app as well.")'):
            break
        out = lab.run_cell(index)
        if "final text" in out:
            assert "Done: /tmp/cache is cleared." in out and "ok:" not in out
    live.first.wait_for()
    live.first.get_by_test_id("arknb-deny-reason").fill("keep the logs")
    live.first.get_by_test_id("arknb-deny").click()
    chat.locator("[data-testid='arknb-assistant-text']", has_text="Understood, I left /var/log/app alone.").wait_for()
    out = lab.run_cell(lab.cell_index('reason="logs are still needed"'))
    assert "decision: denied" not in out and "Understood" in out
    assert "keep the logs" in lab.run_cell(lab.cell_index("tool_message = model.requests[-1]"))
    restored_chat_index = lab.cell_index("ark.ChatWidget(restored)")
    for index in _code_cells_from(lab, lab.cell_index('result = await runtime.run("And clear /tmp/build.")')):
        if index > restored_chat_index:
            break
        lab.run_cell(index)
    restored_chat = lab.page.locator(CHAT).nth(1)
    restored_chat.locator("[data-testid='arknb-approval'][data-state='live']").get_by_test_id("arknb-approve").click()
    restored_chat.locator("[data-testid='arknb-assistant-text']", has_text="Done: /tmp/build is cleared.").wait_for()
    outputs = _run_rest(lab, restored_chat_index + 1)
    assert "Done: /tmp/build is cleared." in outputs[lab.cell_index("empty if you clicked the card")]
    assert _cleared(lab) == ["/tmp/cache", "/tmp/build"]  # each approved call ran once; the denied one never


def test_03_run_the_cells_then_the_cards_are_decided(lab):
    lab.open("03_approvals.ipynb")
    outputs = _run_rest(lab, 0)
    assert "decision: denied" in outputs[lab.cell_index('reason="logs are still needed"')]
    assert "Done: /tmp/build is cleared." in outputs[lab.cell_index("empty if you clicked the card")]
    # Only the last section's card waits (left waiting on purpose): every other card is decided or dead.
    live = lab.page.locator(f"{CHAT} [data-testid='arknb-approval'][data-state='live']")
    expect(live).to_have_count(1)
    assert _cleared(lab) == ["/tmp/cache", "/tmp/build"]
