"""The chat at session scale in real JupyterLab (issue 15 item 2): bytes per run stay flat
as the session grows, re-opened views (another cell, a fresh tab) show the whole
transcript, a re-run cell leaves one listener, and a view whose kernel restarted says
it is detached."""

from __future__ import annotations

import json

from playwright.sync_api import expect

from .conftest import DEFAULT_TIMEOUT_MS, LabPage

CHAT = "[data-testid='arknb-chat'][data-ready='true']"

SESSION = '''
import arknb as ark

@ark.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

turns = []
for n in range(1, 400):
    turns.append(ark.ScriptedTurn(text=["Let me ", "add."], tool_calls=[
        ark.ToolCall(id=f"c{n}", name="add", arguments_json=f'{{"a": {n}, "b": 2}}')]))
    turns.append(ark.ScriptedTurn(text=["It is ", f"{n + 2}."]))
runtime = ark.AgentRuntime(ark.ScriptedModel(turns), tools=[add])
done = 0

async def runs(k):
    global done
    for _ in range(k):
        done += 1
        result = await runtime.run(f"What is {done} + 2?")
        assert result.stop_reason == "completed", result
'''


def _frame_bytes(lab: LabPage) -> int:
    return sum(len(f) for f in lab.comm_frames)


def _one_run_bytes(lab: LabPage) -> int:
    """Comm bytes the browser received for one run (trailing flush included)."""
    lab.kernel_exec("import asyncio\nawait asyncio.sleep(0.1)")
    before = _frame_bytes(lab)
    lab.kernel_exec("await runs(1)\nimport asyncio\nawait asyncio.sleep(0.1)")
    return _frame_bytes(lab) - before


def _user_texts(view) -> list[str]:
    return view.locator("[data-testid='arknb-user']").all_inner_texts()


def test_bytes_per_run_stay_flat_and_reopened_views_get_the_whole_transcript(lab, chromium_browser):
    notebook = lab.server.write_notebook("chat_scale.ipynb", [SESSION, "chat = ark.ChatWidget(runtime)\nchat", "chat"])
    lab.open(notebook)
    lab.run_cell(0)
    lab.run_cell(1)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    lab.kernel_exec("await runs(4)")
    early = sorted(_one_run_bytes(lab) for _ in range(3))[1]
    lab.kernel_exec("await runs(250)")
    late = sorted(_one_run_bytes(lab) for _ in range(3))[1]
    print(f"comm bytes per run: run ~6: {early:,}; run ~257: {late:,}")
    assert late <= 1.2 * early, (early, late)
    total = int(lab.kernel_exec("print(done)").strip())
    chat.locator("[data-testid='arknb-user']", has_text=f"What is {total} + 2?").wait_for()
    expect(chat.locator("[data-testid='arknb-user']")).to_have_count(total)

    # Another view of the same widget (another cell's output) shows everything at once.
    lab.run_cell(2)
    second = lab.page.locator(CHAT).nth(1)
    second.wait_for()
    expect(second.locator("[data-testid='arknb-user']")).to_have_count(total)
    assert _user_texts(second) == _user_texts(chat)

    # A fresh tab: the views ask the kernel for a fresh snapshot.
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    try:
        lab.page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        lab.page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
        tab = LabPage(context.new_page(), lab.server, lab.output_dir)
        tab.open(notebook)
        view = tab.page.locator(CHAT).first
        view.locator("[data-testid='arknb-user']", has_text=f"What is {total} + 2?").wait_for()
        expect(view.locator("[data-testid='arknb-user']")).to_have_count(total)
        tab.screenshot("fresh_tab_long_session", locator=view)
    finally:
        context.close()


def test_re_running_the_chat_cell_leaves_one_listener_and_one_view(lab):
    notebook = lab.server.write_notebook("chat_rerun.ipynb", [
        SESSION, "chat = ark.ChatWidget(runtime)\nchat",
        "print(sum(len(v) for v in runtime.bus._by_type.values()))"])
    lab.open(notebook)
    lab.run_cell(0)
    base = int(lab.run_cell(2).strip())
    for _ in range(12):
        lab.run_cell(1)
    lab.page.locator(CHAT).first.wait_for()
    assert int(lab.run_cell(2).strip()) == base + 1
    expect(lab.page.locator("[data-testid='arknb-chat']")).to_have_count(1)
    lab.kernel_exec("await runs(1)")
    lab.page.locator(CHAT).first.locator("[data-testid='arknb-user']", has_text="What is 1 + 2?").wait_for()


def test_a_chat_whose_kernel_restarted_says_it_is_detached(lab):
    notebook = lab.server.write_notebook("chat_restart.ipynb", ['''
import arknb as ark

@ark.tool(risk="dangerous")
def clear_cache(path: str) -> str:
    """Delete a cache folder."""
    return f"cleared {path}"

runtime = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(text="Clearing.", tool_calls=[
    ark.ToolCall(id="c1", name="clear_cache", arguments_json='{"path": "/tmp/x"}')])]), tools=[clear_cache])
chat = ark.ChatWidget(runtime)
chat
''', 'handle = runtime.start("clear it")'])
    lab.open(notebook)
    lab.run_cell(0)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    lab.run_cell(1)
    card = chat.locator("[data-testid='arknb-approval'][data-state='live']")
    card.wait_for()
    lab.page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()")
    lab.wait_idle()
    chat.locator("xpath=self::*[@data-detached='true']").wait_for()
    expect(chat.get_by_test_id("arknb-detached")).to_contain_text("kernel behind this chat is gone")
    expect(chat.get_by_test_id("arknb-approve")).to_be_disabled()
    expect(chat.get_by_test_id("arknb-send")).to_be_disabled()
    lab.screenshot("detached_after_restart", locator=chat)
    assert json.loads(lab.kernel_exec("import json; print(json.dumps('runtime' in globals()))")) is False
