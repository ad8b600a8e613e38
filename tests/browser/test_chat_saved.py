"""A notebook reopened without its kernel (issue 15 item 6): with JupyterLab's "Save
Widget State Automatically" on, the saved chat shows the whole conversation as it stood
and says it is detached; its buttons do nothing."""

from __future__ import annotations

import json

from playwright.sync_api import expect

from .conftest import DEFAULT_TIMEOUT_MS, LabPage, wait_until

CHAT = "[data-testid='arknb-chat'][data-ready='true']"
SAVE_STATE = "@jupyter-widgets/jupyterlab-manager:saveWidgetState"

CELLS = ['''
import arknb as ark

@ark.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

runtime = ark.AgentRuntime(ark.ScriptedModel([
    ark.ScriptedTurn(text="Let me add.", tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')]),
    ark.ScriptedTurn(text="It is **3**."),
    ark.ScriptedTurn(text="Still here."),
]), tools=[add])
chat = ark.ChatWidget(runtime)
chat
''', 'result = await runtime.run("What is 1 + 2?")', 'result = await runtime.run("And now?")']


def _toggle_save_state(page) -> bool:
    return page.evaluate(f"""async () => {{
      const app = window.jupyterapp;
      await app.commands.execute('{SAVE_STATE}');
      return app.commands.isToggled('{SAVE_STATE}');
    }}""")


def _run_the_chat(lab, name: str):
    notebook = lab.server.write_notebook(name, CELLS)
    lab.open(notebook)
    for i in range(3):
        lab.run_cell(i)
    chat = lab.page.locator(CHAT).first
    chat.locator("[data-testid='arknb-assistant-text']", has_text="Still here.").wait_for()
    return notebook, chat


def _saved_snapshots(lab, notebook: str) -> list[dict]:
    """Save the notebook; the chat snapshots in its saved widget state."""
    lab.page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    lab.page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
    saved = json.loads((lab.server.root_dir / notebook).read_text())
    widgets = saved["metadata"].get("widgets") or {}
    state = (widgets.get("application/vnd.jupyter.widget-state+json") or {}).get("state") or {}
    return [m["state"]["_snapshot"] for m in state.values() if "_snapshot" in m.get("state", {})]


def test_saved_widget_state_shows_the_conversation_without_its_kernel(lab, chromium_browser):
    notebook, chat = _run_the_chat(lab, "chat_saved.ipynb")
    if not _toggle_save_state(lab.page):
        _toggle_save_state(lab.page)
    try:
        # The view's copy of the snapshot catches up 1.5 s after the last change: save until
        # the saved state holds the whole conversation (the last answer included).
        snapshots = wait_until(
            lambda: [s for s in _saved_snapshots(lab, notebook) if "Still here." in json.dumps(s)],
            timeout=30, interval=0.5, what="the saved widget state to hold the whole conversation")
        assert "And now?" in json.dumps(snapshots[0])
    finally:
        if _toggle_save_state(lab.page):
            _toggle_save_state(lab.page)
    lab.server.shutdown_all_sessions()  # the kernel, and with it the widget, is gone

    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    try:
        tab = LabPage(context.new_page(), lab.server, lab.output_dir)
        tab.open(notebook)  # JupyterLab starts a new kernel that knows nothing of the chat
        view = tab.page.locator(CHAT).first
        view.wait_for(timeout=60_000)
        expect(view.locator("[data-testid='arknb-user']")).to_have_text(["What is 1 + 2?", "And now?"])
        expect(view.locator("[data-testid='arknb-assistant-text'] strong", has_text="3")).to_have_count(1)
        view.locator("xpath=self::*[@data-detached='true']").wait_for(timeout=20_000)
        expect(view.get_by_test_id("arknb-send")).to_be_disabled()
        tab.screenshot("reopened_without_kernel", locator=view)
    finally:
        context.close()


def test_a_notebook_saved_without_widget_state_shows_the_static_copy_instead_of_an_error(lab):
    notebook, chat = _run_the_chat(lab, "chat_companion.ipynb")
    companion = lab.page.locator("[data-arknb-static]").first
    lab.page.wait_for_function(
        "() => { const s = document.querySelector('[data-arknb-static]'); return s && s.textContent.includes('Still here.'); }",
        timeout=30_000)
    assert not companion.is_visible() and chat.is_visible()  # live: the view hides its copy
    lab.page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    lab.page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
    lab.server.shutdown_all_sessions()
    lab.open(notebook)  # a new kernel, no saved widget state: the view cannot come back
    companion = lab.page.locator("[data-arknb-static]").first
    companion.wait_for(state="visible", timeout=60_000)
    text = companion.inner_text()
    assert "What is 1 + 2?" in text and "Still here." in text and "It is 3." in text
    lab.page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-OutputArea-output')].some((o) => o.textContent.includes('model not found'))",
        timeout=60_000)
    shown = lab.page.evaluate(
        "() => [...document.querySelectorAll('.jp-OutputArea-output')].filter((o) =>"
        " o.textContent.includes('model not found') && o.offsetParent !== null).length")
    assert shown == 0
    lab.screenshot("companion_without_kernel", locator=lab.cell_locator(0))
