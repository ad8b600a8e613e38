"""Notebook 07 in real JupyterLab: an agent process is killed mid-batch, the session is
restored in the notebook's kernel, the chat shows the in-doubt call as a card, a click
on "Mark done" resolves it and the run completes (issue 11 item 4); or Stop ends it, and
each card says what became of its call."""

from __future__ import annotations

from playwright.sync_api import expect

from .test_widgets import CHAT, _wait_for_chat_status


def _killed_restored_and_in_the_chat(lab):
    """Run notebook 07 up to the restored runtime's chat: (chat, its in-doubt card)."""
    lab.open("07_durable.ipynb")
    lab.run_cell_containing("import signal")
    out = lab.run_cell_containing("os.kill(agent.pid, signal.SIGKILL)", timeout=120)
    assert "exit code: -9" in out and "send_report c3" in out
    out = lab.run_cell_containing("AgentRuntime.restore(")
    assert "send_report" in out and "awaiting_approval" in out
    lab.run_cell_containing("chat = ark.ChatWidget(runtime)")
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    card = chat.locator("[data-testid='arknb-in-doubt']")
    card.wait_for()
    return chat, card


def test_kill_restore_open_the_chat_click_mark_done_and_the_run_completes(lab):
    chat, card = _killed_restored_and_in_the_chat(lab)
    expected = lab.kernel_exec("print(runtime.controller.list_in_doubt()[0].operation_id)").strip()
    assert card.get_attribute("data-approval-id") == expected
    assert card.get_by_test_id("arknb-approve").count() == 0
    lab.screenshot("in-doubt card", locator=chat)
    card.get_by_test_id("arknb-in-doubt-text").fill("sent (the mail log shows it)")
    card.get_by_test_id("arknb-mark-done").click()
    chat.locator("[data-testid='arknb-assistant-text']", has_text="the on-call team has the report").wait_for()
    assert _wait_for_chat_status(lab, "completed") == "completed"
    expect(card).to_have_count(0)
    lab.screenshot("run completed", locator=chat)
    answers = lab.kernel_exec(
        "print([m.text for m in runtime.history if m.role == 'tool'])\n"
        "print(sorted(l.split()[0] for l in EFFECTS.read_text().splitlines()))")
    assert "sent (the mail log shows it)" in answers
    assert "['fetch_page', 'fetch_page', 'send_report']" in answers  # nothing ran twice


def test_stopping_the_restored_run_leaves_the_in_doubt_card_interrupted_and_the_finished_ones_done(lab):
    # Stop ends the run with the call's fate still unknown: the card says it may or may
    # not have run (as the model is told), never "not executed", which would invite a
    # person to run it again by hand; the calls that finished before the kill show their results.
    chat, card = _killed_restored_and_in_the_chat(lab)
    call_id = lab.kernel_exec("print(runtime.controller.list_in_doubt()[0].tool_call.id)").strip()
    chat.get_by_test_id("arknb-stop").click()
    assert _wait_for_chat_status(lab, "cancelled") == "cancelled"
    expect(card).to_have_count(0)
    tool = chat.locator(f"[data-testid='arknb-tool-card'][data-call-id='{call_id}']")
    expect(tool).to_have_attribute("data-status", "interrupted")
    expect(tool.get_by_test_id("arknb-tool-status")).to_have_text("interrupted")
    expect(tool).to_contain_text("may or may not have run")
    expect(tool).not_to_contain_text("not executed")
    # The calls that had finished before the kill keep their results (answered from their records).
    finished = chat.locator("[data-testid='arknb-tool-card']", has_text="fetch_page")
    expect(finished).to_have_count(2)
    for i in range(2):
        expect(finished.nth(i)).to_have_attribute("data-status", "done")
    expect(chat).not_to_contain_text("not executed")
    lab.screenshot("stopped in doubt", locator=chat)
    told = lab.kernel_exec(f"print([m.text for m in runtime.history if m.tool_call_id == {call_id!r}])")
    assert "outcome was unknown" in told
