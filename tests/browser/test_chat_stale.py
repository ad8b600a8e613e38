"""Widgets never act on stale state (issue 10 item 4), on notebook 03 in real JupyterLab:
after Run All there is exactly one live card per pending approval; clicking every
enabled Approve button runs the dangerous tool once per approval (side effects counted
in the kernel's ``CLEARED``); the chat of the replaced runtime says it is detached and
its buttons do nothing; Run All again, and a kernel restart + Run All, keep both true."""

from __future__ import annotations

import json

from playwright.sync_api import expect

CHAT = "[data-testid='arknb-chat'][data-ready='true']"
NOTEBOOK = "03_approvals.ipynb"

_RUN_ALL = """async () => {
  const app = window.jupyterapp;
  const panel = app.shell.currentWidget;
  await app.commands.execute('notebook:clear-all-cell-outputs');
  await app.commands.execute('notebook:run-all-cells');
}"""

_ALL_RAN = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const code = panel.content.widgets.filter((c) => c.model.type === 'code');
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  return code.every((c) => c.model.executionCount !== null && !c.node.querySelector('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'))
    && kernel && kernel.status === 'idle';
}"""


def _run_all(lab) -> None:
    lab.page.evaluate(_RUN_ALL)
    lab.page.wait_for_function(_ALL_RAN, timeout=180_000, polling=250)
    errors = lab.page.evaluate("""() => window.jupyterapp.shell.currentWidget.content.widgets
      .flatMap((c) => c.model.type === 'code' ? c.model.outputs.toJSON() : [])
      .filter((o) => o.output_type === 'error').map((o) => `${o.ename}: ${o.evalue}`)""")
    assert errors == [], errors


def _cleared(lab) -> list[str]:
    return json.loads(lab.kernel_exec("import json; print(json.dumps(CLEARED))"))


def _live_approves(lab):
    return lab.page.locator(f"{CHAT} [data-testid='arknb-approval'][data-state='live'] [data-testid='arknb-approve']")


def _click_every_enabled_approve(lab) -> int:
    """Click each enabled Approve button on the page, as a reader would; returns how many."""
    clicked = 0
    for button in lab.page.locator(f"{CHAT} [data-testid='arknb-approve']").all():
        if button.evaluate("(b) => b.closest(\"[data-testid='arknb-approvals']\").hidden"):
            button.dispatch_event("click")  # a chat another chat took over hides its dead cards
            continue
        button.scroll_into_view_if_needed()  # JupyterLab skips rendering cells off screen
        if button.is_enabled():
            button.click()
            clicked += 1
        else:  # a dead card's button must not act either, even when forced (a detached chat hides it)
            button.dispatch_event("click")
    return clicked


def _pending_everywhere(lab) -> int:
    return int(lab.kernel_exec(
        "print(sum(len(r.controller.list_pending_approvals()) for r in (restored, later)))").strip())


def test_run_all_notebook_03_then_approve_everything_runs_each_call_once(lab):
    lab.open(NOTEBOOK)
    _run_all(lab)
    assert _cleared(lab) == ["/tmp/cache", "/tmp/build"]
    chats = lab.page.locator(CHAT)
    expect(chats).to_have_count(3)
    # The first chat's runtime was replaced by the restored one: detached, nothing live.
    first = chats.nth(0)
    expect(first).to_have_attribute("data-detached", "true")
    expect(first.get_by_test_id("arknb-detached")).to_contain_text("A newer chat took over this session")
    expect(first.locator("[data-testid='arknb-approve']:not([disabled])")).to_have_count(0)
    first.scroll_into_view_if_needed()
    lab.screenshot("detached_first_chat", locator=first)
    # Its banner links to the live chat of its session on this page (issue 25 item 4).
    first.get_by_test_id("arknb-go-live").click()
    live = lab.page.evaluate("""(stale) => {
      const input = document.activeElement, chat = input && input.closest("[data-testid='arknb-chat']");
      return chat && input.dataset.testid === 'arknb-input' && chat !== stale
        && chat.dataset.session === stale.dataset.session && chat.dataset.detached === 'false'
        && chat.getBoundingClientRect().bottom > 0 && chat.getBoundingClientRect().top < innerHeight;
    }""", first.element_handle())
    assert live, "Go to the live chat did not bring the live chat of the session into view"
    lab.screenshot("went_to_live_chat")
    assert _pending_everywhere(lab) == 1
    expect(_live_approves(lab)).to_have_count(1)
    lab.screenshot("run_all_03", full_page=True)

    assert _click_every_enabled_approve(lab) == 1
    chats.nth(2).locator("[data-testid='arknb-assistant-text']", has_text="Done: /tmp/downloads is cleared.").wait_for()
    lab.page.wait_for_function(_ALL_RAN)
    assert _cleared(lab) == ["/tmp/cache", "/tmp/build", "/tmp/downloads"]
    assert _pending_everywhere(lab) == 0
    expect(_live_approves(lab)).to_have_count(0)

    # Run All again in the same kernel: the re-run cells replace their chats.
    _run_all(lab)
    expect(lab.page.locator(CHAT)).to_have_count(3)
    expect(_live_approves(lab)).to_have_count(1)
    assert _click_every_enabled_approve(lab) == 1
    lab.page.locator(CHAT).nth(2).locator("[data-testid='arknb-assistant-text']",
                                          has_text="Done: /tmp/downloads is cleared.").wait_for()
    lab.page.wait_for_function(_ALL_RAN)
    assert _cleared(lab) == ["/tmp/cache", "/tmp/build", "/tmp/downloads"]  # CLEARED restarts with cell 1
    # The chats of the first Run All were closed when their cells ran again.
    assert lab.kernel_exec("import ipywidgets\nprint(sum(isinstance(w, ark.ChatWidget) "
                           "for w in ipywidgets.widgets.widget._instances.values()))").strip() == "3"


def test_restart_with_a_card_waiting_then_run_all_brings_it_back_once(lab):
    lab.open(NOTEBOOK)
    _run_all(lab)
    expect(_live_approves(lab)).to_have_count(1)
    lab.page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()")
    lab.wait_idle()
    # The old views belong to a dead kernel: none of their buttons is live any more.
    lab.page.wait_for_function(
        "() => [...document.querySelectorAll(\"[data-testid='arknb-chat']\")].every((c) => c.dataset.detached === 'true')")
    expect(_live_approves(lab)).to_have_count(0)
    _run_all(lab)
    expect(_live_approves(lab)).to_have_count(1)
    assert _click_every_enabled_approve(lab) == 1
    lab.page.locator(CHAT).nth(2).locator("[data-testid='arknb-assistant-text']",
                                          has_text="Done: /tmp/downloads is cleared.").wait_for()
    lab.page.wait_for_function(_ALL_RAN)
    assert _cleared(lab) == ["/tmp/cache", "/tmp/build", "/tmp/downloads"]
