"""Notebook 01 in real JupyterLab (issue 25 items 2 and 3): the offline chat answers what a
student types (a greeting, a sum through the add tool, a product through multiply, anything
else with the fallback), and the Stop/Suspend section teaches both buttons: Stop ends the
slow run at once, a Suspend that finds no checkpoint says it gave up."""

from __future__ import annotations

from playwright.sync_api import expect

from .test_widgets import CHAT


def _open_quickstart_chat(lab):
    lab.open("01_quickstart.ipynb")
    for text in ("import arknb as ark", "def multiply", "ark.RuleModel([", "chat = ark.ChatWidget(runtime)"):
        lab.run_cell_containing(text)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    return chat


def _ask(chat, text):
    expect(chat).not_to_have_attribute("data-status", "running")  # a send waits for the run before
    box = chat.get_by_test_id("arknb-input")
    box.fill(text)
    box.press("Enter")
    chat.locator("[data-testid='arknb-user']", has_text=text).wait_for()


def test_the_quickstart_chat_answers_what_is_typed_and_calls_the_tool_asked_for(lab):
    chat = _open_quickstart_chat(lab)
    answers = chat.get_by_test_id("arknb-assistant-text")
    _ask(chat, "Hi! What can you do?")
    answers.filter(has_text="I add and multiply whole numbers").wait_for()
    _ask(chat, "and 6 times 7?")
    card = chat.locator("[data-testid='arknb-tool-card'][data-status='done']", has_text="multiply")
    card.wait_for()
    expect(card.get_by_test_id("arknb-tool-result")).to_have_text("42")
    answers.filter(has_text="6 × 7 = 42.").wait_for()
    _ask(chat, "What is the capital of France?")
    answers.filter(has_text="Offline I only understand sums and products").wait_for()
    expect(chat.locator("[data-testid='arknb-tool-card']", has_text="multiply")).to_have_count(1)
    # Each message has its time and a Copy button.
    expect(chat.locator("[data-testid='arknb-user'] [data-testid='arknb-msg-time'][data-time]").first).to_be_attached()
    copy = chat.locator("[data-testid='arknb-assistant'] [data-testid='arknb-copy']").last
    copy.click()
    expect(copy).to_have_attribute("data-copied", "true")
    lab.screenshot("quickstart_chat_answers_what_is_typed", locator=chat)


def test_stop_ends_the_slow_run_and_a_suspend_without_a_checkpoint_says_it_gave_up(lab):
    lab.open("01_quickstart.ipynb")
    lab.run_cell_containing("import arknb as ark")
    lab.run_cell_containing("slow_chat = ark.ChatWidget(slow)")
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    # Suspend while only text streams: no checkpoint before the end, and the chat says so.
    lab.run_cell_containing("slow_handle = slow.start(")
    chat.locator("[data-testid='arknb-assistant'][data-streaming='true']").wait_for()
    chat.get_by_test_id("arknb-suspend").click()
    notice = chat.locator("[data-testid='arknb-notice']", has_text="Suspend gave up")
    notice.wait_for(timeout=30_000)
    expect(chat).to_have_attribute("data-status", "completed")
    out = lab.run_cell_containing("result = await slow_handle")
    assert "stop_reason: completed" in out
    lab.screenshot("suspend_gave_up", locator=chat)
    # Stop while it streams: cancelled at once, what streamed so far stays.
    lab.run_cell_containing("slow_handle = slow.start(")
    chat.locator("[data-testid='arknb-assistant'][data-streaming='true']").wait_for()
    chat.get_by_test_id("arknb-stop").click()
    expect(chat).to_have_attribute("data-status", "cancelled", timeout=10_000)
    chat.locator("[data-testid='arknb-notice']", has_text="stopped").wait_for()
    expect(chat).not_to_contain_text("cancelled by user")
    assert "stop_reason: cancelled" in lab.run_cell_containing("result = await slow_handle")
    lab.screenshot("stopped", locator=chat)
