"""Chat fixes in real JupyterLab (issue 10 item 11, issue 15 item 5): a literal tag keeps
the text after it, a chat built while an approval is pending shows the assistant message
once, the send box keeps refused text and says why it is blocked, Approve/Deny move
focus on and show visible focus, Suspend says it waits for a checkpoint, and long tool
results collapse with "show more"."""

from __future__ import annotations

from playwright.sync_api import expect

CHAT = "[data-testid='arknb-chat'][data-ready='true']"

APPROVALS = '''
import arknb as ark

@ark.tool(risk="dangerous")
def clear_cache(path: str) -> str:
    """Delete a cache folder."""
    return f"cleared {path}"

def clear(cid, path):
    return ark.ToolCall(id=cid, name="clear_cache", arguments_json=f'{{"path": "{path}"}}')

model = ark.ScriptedModel([
    ark.ScriptedTurn(text="Never trust <script> tags in model output: they would run. The rest stays.",
                     tool_calls=[clear("c1", "/tmp/a"), clear("c2", "/tmp/b")]),
    ark.ScriptedTurn(text="Both decided."),
])
runtime = ark.AgentRuntime(model, tools=[clear_cache])
result = await runtime.run("Clear both caches.")
print(result.stop_reason)
'''


def test_literal_tags_rehydration_blocked_input_and_focus(lab):
    notebook = lab.server.write_notebook("chat_items.ipynb", [APPROVALS, "chat = ark.ChatWidget(runtime)\nchat"])
    lab.open(notebook)
    assert lab.run_cell(0).strip() == "awaiting_approval"
    lab.run_cell(1)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    # Built while an approval is pending: the assistant message once, all of its text.
    expect(chat.locator("[data-testid='arknb-assistant-text']")).to_have_text(
        ["Never trust <script> tags in model output: they would run. The rest stays."])
    assert chat.locator("[data-testid='arknb-assistant-text'] script").count() == 0

    # The approvals block new input: the box says so, keeps what was typed, sends nothing.
    box = chat.get_by_test_id("arknb-input")
    box.fill("and clear the logs")
    expect(chat.get_by_test_id("arknb-send")).to_be_disabled()
    expect(chat.get_by_test_id("arknb-input-block")).to_contain_text("approve or deny")
    box.press("Enter")
    assert box.input_value() == "and clear the logs"  # nothing was sent: nothing can change it

    # Keyboard: Tab reaches Approve with a visible ring; Enter decides and moves focus on.
    first = chat.locator("[data-testid='arknb-approval']").nth(0)
    first.get_by_test_id("arknb-approve").focus()
    lab.page.keyboard.press("Shift+Tab")
    lab.page.keyboard.press("Tab")
    ring = lab.page.evaluate("() => { const s = getComputedStyle(document.activeElement);"
                             " return [document.activeElement.dataset.testid, s.outlineStyle, s.outlineWidth]; }")
    assert ring == ["arknb-approve", "solid", "2px"]
    lab.screenshot("approve_focus_ring", locator=chat)
    lab.page.keyboard.press("Enter")
    # The second card's button (the cards are rebuilt as the kernel's answer arrives: the
    # focus stays on the same control of the same card).
    second = chat.locator("[data-testid='arknb-approval']").nth(1)
    expect(second.get_by_test_id("arknb-approve")).to_be_focused()
    expect(second).to_have_attribute("data-state", "live")
    chat.locator("[data-testid='arknb-approval'][data-state='decided']").wait_for()
    lab.page.keyboard.press("Enter")  # the second card: the batch resolves and the run goes on
    expect(box).to_be_focused()
    chat.locator("[data-testid='arknb-assistant-text']", has_text="Both decided.").wait_for()
    chat.locator("[data-status='completed']").first.wait_for()
    cards = chat.locator("[data-testid='arknb-tool-card']")
    expect(cards).to_have_count(2)
    expect(chat.locator("[data-testid='arknb-tool-card'][data-status='done']")).to_have_count(2)
    assert lab.kernel_exec("print(len(model.requests))").strip() == "2"
    # Unblocked now: the kept text goes out.
    expect(chat.get_by_test_id("arknb-send")).to_be_enabled()
    expect(box).to_have_value("and clear the logs")


SLOW = '''
import arknb as ark

@ark.tool
def dump(rows: int) -> str:
    """Print rows."""
    return "\\n".join(f"row {i}: " + "x" * 40 for i in range(rows))

model = ark.ScriptedModel([
    ark.ScriptedTurn(text=["step "] * 60, chunk_delay=0.05,
                     tool_calls=[ark.ToolCall(id="c1", name="dump", arguments_json='{"rows": 300}')]),
    ark.ScriptedTurn(text="after the checkpoint"),
])
runtime = ark.AgentRuntime(model, tools=[dump])
chat = ark.ChatWidget(runtime)
chat
'''


def test_suspend_waits_for_the_checkpoint_and_long_results_collapse(lab):
    notebook = lab.server.write_notebook("chat_suspend.ipynb", [SLOW, 'handle = runtime.start("go")'])
    lab.open(notebook)
    lab.run_cell(0)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    lab.run_cell(1)
    chat.locator("[data-testid='arknb-assistant-text']", has_text="step step step").wait_for()
    chat.get_by_test_id("arknb-suspend").click()
    notice = chat.get_by_test_id("arknb-suspending")
    notice.wait_for()
    expect(notice).to_have_text("suspending at the next checkpoint…")
    expect(chat.get_by_test_id("arknb-suspend")).to_have_text("Suspending…")
    lab.screenshot("suspending", locator=chat)
    chat.locator("xpath=self::*[@data-status='suspended']").wait_for(timeout=60_000)
    expect(notice).to_be_hidden()
    # The tool batch finished before the pause: its long result is collapsed. (The card's
    # delta follows the status, a trait, by a frame.)
    result = chat.locator("[data-testid='arknb-tool-result']").first
    more = chat.get_by_test_id("arknb-show-more")
    expect(more).to_be_visible()
    expect(more).to_contain_text("show more")
    height = result.evaluate("(n) => n.getBoundingClientRect().height")
    assert height < 250
    lab.screenshot("long_result_collapsed", locator=chat)
    more.click()
    expect(more).to_have_text("show less")
    assert result.evaluate("(n) => n.getBoundingClientRect().height") > 3 * height
    chat.get_by_test_id("arknb-resume").click()
    chat.locator("[data-testid='arknb-assistant-text']", has_text="after the checkpoint").wait_for()


def test_a_chat_at_400_px_fits_its_width(lab):
    """At 400 px nothing in the chat reaches past its right edge (cards, buttons, the
    send box, long words) and nothing scrolls sideways; a screenshot for a reviewer."""
    notebook = lab.server.write_notebook("chat_narrow.ipynb", [
        APPROVALS, 'chat = ark.ChatWidget(runtime, layout={"width": "400px"})\nchat'])
    lab.open(notebook)
    assert lab.run_cell(0).strip() == "awaiting_approval"
    lab.run_cell(1)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    chat.locator("[data-testid='arknb-approval']").first.wait_for()
    overflow = chat.evaluate("""(root) => {
        const edge = root.getBoundingClientRect().right + 1;
        const out = [...root.querySelectorAll('*')].filter((el) => {
            const r = el.getBoundingClientRect();
            return r.width > 0 && r.right > edge && getComputedStyle(el).position !== 'fixed';
        }).map((el) => el.dataset.testid || el.className || el.tagName);
        const sideways = [root, ...root.querySelectorAll('*')].filter((el) =>
            el.scrollWidth > el.clientWidth + 1 && ['auto', 'scroll'].includes(getComputedStyle(el).overflowX))
            .map((el) => el.dataset.testid || el.className || el.tagName);
        return {width: root.getBoundingClientRect().width, out, sideways};
    }""")
    assert overflow["width"] <= 402 and overflow["out"] == [] and overflow["sideways"] == [], overflow
    for name in ("arknb-approve", "arknb-deny"):
        expect(chat.get_by_test_id(name).first).to_be_visible()
    lab.screenshot("chat_400px", locator=chat)
