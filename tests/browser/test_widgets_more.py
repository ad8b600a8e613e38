"""More of the chat in real browsers: Suspend / Resume from the buttons, Stop while a
run awaits approval, the same transcript in a re-displayed view and in a fresh tab,
a read-only replay, the dark theme, and a Notebook 7 smoke test.

As in ``test_widgets.py``, every run a widget drives is started with
``runtime.start`` so the cell returns and the kernel handles the clicks.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

from .conftest import (
    _JS_KERNEL_IDLE,
    DEFAULT_TIMEOUT_MS,
    RESULTS_DIR,
    LabPage,
    _in_ci,
    _prepare_root,
    _start_server,
    _stop_server,
    safe_name,
)

CHAT = "[data-testid='arknb-chat'][data-ready='true']"
TIMELINE = "[data-testid='arknb-timeline'][data-ready='true']"
PREAMBLE = "import arknb as ark\n"

ADD_TOOL = '''
@ark.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
'''


def _wait_for_chat_status(page: Any, *statuses: str, timeout: float = 30.0, index: int = 0) -> str:
    page.wait_for_function(
        "([statuses, i]) => { const c = document.querySelectorAll(\"[data-testid='arknb-chat']\")[i];"
        " return !!c && statuses.includes(c.dataset.status); }",
        arg=[list(statuses), index],
        timeout=timeout * 1000,
    )
    return page.locator(CHAT).nth(index).get_attribute("data-status")


_TRANSCRIPT_JS = """(root) => {
  const texts = (id) => [...root.querySelectorAll(`[data-testid='${id}']`)]
    .filter((n) => !n.closest('[hidden]')).map((n) => n.innerText.trim());
  const tools = [...root.querySelectorAll("[data-testid='arknb-tool-card']")].map((n) =>
    `${n.dataset.callId}|${n.dataset.status}|` +
    `${(n.querySelector("[data-testid='arknb-tool-result']") || {}).innerText || ''}`.trim());
  return { user: texts('arknb-user'), assistant: texts('arknb-assistant-text'), tools };
}"""


def _transcript_of(chat: Any) -> dict[str, list[str]]:
    """What a chat view shows, in order: user texts, assistant texts, tool cards."""
    return chat.evaluate(_TRANSCRIPT_JS)


def _expect_transcript(chat: Any, expected: dict[str, list[str]], timeout: float = 30.0) -> None:
    """Wait until the view shows ``expected``, then check it (a clear diff if it never does).

    The status comes with a trait, applied at once; the transcript's deltas are folded in
    at the next animation frame (and streamed text re-rendered at most every 60 ms), so a
    read right after the status can see the transcript a moment behind it.
    """
    try:
        chat.page.wait_for_function(
            f"([root, want]) => JSON.stringify(({_TRANSCRIPT_JS})(root)) === want",
            arg=[chat.element_handle(), json.dumps(expected)], timeout=timeout * 1000)
    except PlaywrightTimeoutError:
        pass  # the assertion below says what the view shows instead
    assert _transcript_of(chat) == expected


def test_suspend_then_resume_from_the_buttons(lab):
    """Suspend during a slow streamed turn with a tool call: the run finishes the tool
    batch (never between a call and its result), ends ``suspended`` and shows Resume;
    Resume continues with the next model call and the final answer streams in."""
    notebook = lab.server.write_notebook("suspend.ipynb", [
        PREAMBLE + ADD_TOOL + """
model = ark.ScriptedModel([
    ark.ScriptedTurn(text=["step "] * 100, chunk_delay=0.05,
                     tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json='{"a": 2, "b": 3}')]),
    ark.ScriptedTurn(text=["The sum ", "is ", "**5**."]),
])
runtime = ark.AgentRuntime(model, tools=[add])
chat = ark.ChatWidget(runtime)
chat
""",
        'handle = runtime.start("Add 2 and 3, slowly.")',
    ])
    lab.open(notebook)
    lab.run_cell(0)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    resume = chat.get_by_test_id("arknb-resume")
    expect(resume).to_be_hidden()
    lab.run_cell(1)
    chat.locator("[data-testid='arknb-assistant-text']", has_text="step step step").wait_for()
    expect(chat).to_have_attribute("data-status", "running")
    chat.get_by_test_id("arknb-suspend").click()

    assert _wait_for_chat_status(lab.page, "suspended", "completed", timeout=60) == "suspended"
    expect(chat.get_by_test_id("arknb-status")).to_have_text("suspended")
    expect(resume).to_be_visible()
    expect(resume).to_be_enabled()
    expect(chat.get_by_test_id("arknb-suspend")).to_be_disabled()
    # The safe checkpoint: the whole first turn and its tool call ran, the next model call did not.
    # (The cards follow the status by a frame: wait for them.)
    card = chat.locator("[data-testid='arknb-tool-card'][data-call-id='c1']")
    expect(card).to_have_attribute("data-status", "done")
    expect(card.get_by_test_id("arknb-tool-result")).to_have_text("5")
    out = lab.kernel_exec("r = await handle\nprint(r.stop_reason, len(model.requests), runtime.state.is_running)")
    assert out.split() == ["suspended", "1", "True"]
    expect(chat.locator("[data-testid='arknb-assistant-text']").last).to_have_text(" ".join(["step"] * 100))
    assert chat.locator("[data-testid='arknb-assistant-text']", has_text="The sum").count() == 0
    lab.screenshot("suspended", locator=chat)

    resume.click()
    chat.locator("[data-testid='arknb-assistant-text']", has_text="The sum is 5.").wait_for()
    assert _wait_for_chat_status(lab.page, "completed") == "completed"
    resume.wait_for(state="hidden")
    expect(chat.get_by_test_id("arknb-error")).to_be_hidden()
    out = lab.kernel_exec("print(runtime.last_result.stop_reason, len(model.requests), runtime.state.is_running)")
    assert out.split() == ["completed", "2", "False"]
    lab.screenshot("resumed", locator=chat)


def test_stop_while_awaiting_approval_cancels_the_run(lab):
    """Stop on a run paused for approval ends it ``cancelled``: the approval card goes,
    the status says cancelled, and the deferred tool never ran."""
    notebook = lab.server.write_notebook("stop_approval.ipynb", [
        PREAMBLE + """
ran = []

@ark.tool(risk="dangerous")
def drop_table(name: str) -> str:
    \"\"\"Drop a database table.\"\"\"
    ran.append(name)
    return f"dropped {name}"

model = ark.ScriptedModel([
    ark.ScriptedTurn(text="Dropping it.",
                     tool_calls=[ark.ToolCall(id="d1", name="drop_table", arguments_json='{"name": "users"}')]),
    ark.ScriptedTurn(text="never reached"),
])
runtime = ark.AgentRuntime(model, tools=[drop_table])
chat = ark.ChatWidget(runtime)
chat
""",
        'handle = runtime.start("Drop the users table.")',
    ])
    lab.open(notebook)
    lab.run_cell(0)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    lab.run_cell(1)
    card = chat.locator("[data-testid='arknb-approval'][data-approval-id]")
    card.first.wait_for()
    assert _wait_for_chat_status(lab.page, "awaiting_approval") == "awaiting_approval"
    stop = chat.get_by_test_id("arknb-stop")
    expect(stop).to_be_enabled()
    stop.click()

    assert _wait_for_chat_status(lab.page, "cancelled") == "cancelled"
    card.first.wait_for(state="detached")
    expect(chat.get_by_test_id("arknb-approvals")).to_be_hidden()
    expect(chat.get_by_test_id("arknb-status")).to_have_text("stopped")
    # The card's closing delta follows the status (a trait) by a frame.
    tool = chat.locator("[data-testid='arknb-tool-card'][data-call-id='d1']")
    expect(tool).not_to_have_attribute("data-status", "awaiting_approval")
    expect(stop).to_be_disabled()
    out = json.loads(lab.kernel_exec(
        "import json\n"
        "print(json.dumps([runtime.last_result.stop_reason, ran, len(model.requests),"
        " len(runtime.controller.list_pending_approvals()), runtime.state.is_running]))"
    ))
    assert out == ["cancelled", [], 1, 0, False]
    lab.screenshot("cancelled_while_awaiting_approval", locator=chat)


RUN_WITH_TOOL = PREAMBLE + ADD_TOOL + """
model = ark.ScriptedModel([
    ark.ScriptedTurn(text=["Let me ", "add."],
                     tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')]),
    ark.ScriptedTurn(text=["It ", "is ", "**3**."]),
])
runtime = ark.AgentRuntime(model, tools=[add])
recorded = []
runtime.bus.subscribe(ark.EventTypes.ANY, recorded.append)
chat = ark.ChatWidget(runtime)
chat
"""

EXPECTED_TRANSCRIPT = {"user": ["What is 1 + 2?"], "assistant": ["Let me add.", "It is 3."], "tools": ["c1|done|3"]}


def test_redisplay_and_a_fresh_tab_show_the_same_transcript(lab, chromium_browser):
    notebook = lab.server.write_notebook("redisplay.ipynb", [
        RUN_WITH_TOOL,
        'handle = runtime.start("What is 1 + 2?")',
        "chat",
    ])
    lab.open(notebook)
    lab.run_cell(0)
    first = lab.page.locator(CHAT).first
    first.wait_for()
    lab.run_cell(1)
    first.locator("[data-testid='arknb-assistant-text']", has_text="It is 3.").wait_for()
    _wait_for_chat_status(lab.page, "completed")
    _expect_transcript(first, EXPECTED_TRANSCRIPT)

    # The same widget displayed again in another cell (same kernel, same page).
    lab.run_cell(2)
    second = lab.page.locator(CHAT).nth(1)
    second.wait_for()
    _wait_for_chat_status(lab.page, "completed", index=1)
    _expect_transcript(second, EXPECTED_TRANSCRIPT)
    expect(second.get_by_test_id("arknb-status")).to_have_text("completed")

    # A fresh tab (its own browser context) on the saved notebook while the kernel lives:
    # the widget models come from the kernel, the transcript from the synced snapshot.
    lab.page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    lab.page.wait_for_function(
        "() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    try:
        tab = LabPage(context.new_page(), lab.server, lab.output_dir)
        tab.open(notebook)
        views = tab.page.locator(CHAT)
        views.first.wait_for()
        views.nth(1).wait_for()
        for index in range(2):
            view = views.nth(index)
            view.locator("[data-testid='arknb-assistant-text']", has_text="It is 3.").wait_for()
            _wait_for_chat_status(tab.page, "completed", index=index)
            _expect_transcript(view, EXPECTED_TRANSCRIPT)
        # Same kernel, not a new one.
        assert tab.kernel_exec("print(len(recorded) > 0, runtime.state.is_running)").split() == ["True", "False"]
        tab.screenshot("fresh_tab", locator=views.first)
    finally:
        context.close()
    lab.screenshot("redisplayed", full_page=True)


def test_read_only_replay_of_recorded_events(lab):
    """ChatWidget.from_events: the recorded transcript, no send box, no enabled buttons,
    and a pending approval shows as a card without Approve / Deny."""
    notebook = lab.server.write_notebook("replay.ipynb", [
        RUN_WITH_TOOL.replace("chat = ark.ChatWidget(runtime)\nchat\n", ""),
        "result = await runtime.run('What is 1 + 2?')\nprint(result.stop_reason, len(recorded))",
        "replay = ark.ChatWidget.from_events(recorded)\nreplay",
    ])
    lab.open(notebook)
    lab.run_cell(0)
    assert lab.run_cell(1).split()[0] == "completed"
    lab.run_cell(2)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    expect(chat).to_have_attribute("data-read-only", "true")
    assert _wait_for_chat_status(lab.page, "completed") == "completed"
    # The whole recorded transcript, in the view's first drawing already. (It once stayed
    # empty for good under load: a frame folded in the kernel's first delta before the
    # snapshot landed, and the view rendered in between; tests/js covers that order.)
    _expect_transcript(chat, EXPECTED_TRANSCRIPT)
    expect(chat.get_by_test_id("arknb-input")).to_be_hidden()
    expect(chat.get_by_test_id("arknb-send")).to_be_hidden()
    visible_enabled = chat.evaluate(
        "(root) => [...root.querySelectorAll('button, textarea, input, select')]"
        ".filter((b) => b.offsetParent !== null && !b.disabled && b.dataset.testid !== 'arknb-copy')"
        ".map((b) => b.outerHTML)")
    assert visible_enabled == []  # (Copy only reads the page: a replay keeps it)
    # Actions sent by hand are refused by the kernel as well.
    out = lab.kernel_exec(
        "replay._on_msg(replay, {'type': 'send', 'text': 'hi', 'request_id': 'x'})\n"
        "print(repr(replay.error), len(model.requests))")
    assert out.strip() == "'this chat is a read-only replay' 2"
    lab.screenshot("replay", locator=chat)


def test_dark_theme_follows_jupyterlab_variables(lab):
    notebook = lab.server.write_notebook("theme.ipynb", [
        RUN_WITH_TOOL,
        "timeline = ark.TimelineWidget(runtime)\ntimeline",
        "result = await runtime.run('What is 1 + 2?')",
    ])
    lab.open(notebook)
    lab.run_cells(range(3))
    chat = lab.page.locator(CHAT).first
    timeline = lab.page.locator(TIMELINE).first
    chat.locator("[data-testid='arknb-assistant-text']", has_text="It is 3.").wait_for()
    timeline.locator("[data-testid='arknb-timeline-row'][data-type='agent.success']").wait_for()

    def colours() -> dict[str, str]:
        return lab.page.evaluate(
            """() => {
              const style = (sel) => getComputedStyle(document.querySelector(sel));
              const chat = style("[data-testid='arknb-chat']");
              const timeline = style("[data-testid='arknb-timeline']");
              const body = getComputedStyle(document.body);
              return { chat: chat.color, chatBg: chat.backgroundColor, timeline: timeline.color,
                       timelineBg: timeline.backgroundColor,
                       jpFont: body.getPropertyValue('--jp-ui-font-color1').trim() };
            }""")

    light = colours()
    lab.screenshot("light_chat", locator=chat)
    try:
        lab.page.evaluate(
            "() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
        lab.page.wait_for_function(
            "() => document.body.dataset.jpThemeLight === 'false'", timeout=60_000)
        dark = lab.page.wait_for_function(
            "(before) => { const c = getComputedStyle(document.querySelector(\"[data-testid='arknb-chat']\"));"
            " return c.color !== before ? c.color : false; }",
            arg=light["chat"], timeout=30_000).json_value()
        assert dark != light["chat"]
        now = colours()
        assert now["chat"] == dark
        assert now["timeline"] != light["timeline"]
        assert now["chatBg"] != light["chatBg"]
        lab.screenshot("dark_chat", locator=chat)
        lab.screenshot("dark_timeline", locator=timeline)
    finally:
        # The theme is a user setting shared by the whole test session: put it back.
        lab.page.evaluate(
            "() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
        lab.page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'", timeout=60_000)


# --------------------------------------------------------------------------- Notebook 7


@pytest.fixture(scope="module")
def notebook7_server(tmp_path_factory: pytest.TempPathFactory, chromium_browser: Any) -> Any:
    """A Jupyter Notebook 7 server with the same isolation as the JupyterLab one."""
    try:
        import notebook  # noqa: F401  (the `dev` extra installs it)
    except ImportError as exc:
        if _in_ci():
            pytest.fail(f"the Notebook 7 test must run in CI: {exc}", pytrace=False)
        pytest.skip(f"the notebook package (Jupyter Notebook 7) is not installed: {exc}")
    home = tmp_path_factory.mktemp("notebook7-home")
    _prepare_root(home / "root")
    server = _start_server(home, home / "root", app="notebook")
    try:
        yield server
    finally:
        _stop_server(server)


def test_notebook7_quickstart_chat_renders_and_runs(notebook7_server, chromium_browser, request):
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    page = context.new_page()
    nb = LabPage(page, notebook7_server, RESULTS_DIR / safe_name(request.node.name))
    page.on("console", lambda msg: nb.console.append(f"{msg.type}: {msg.text}"))
    try:
        page.goto(f"{notebook7_server.base_url}/notebooks/01_quickstart.ipynb"
                  f"?token={notebook7_server.token}&reset={uuid.uuid4().hex[:6]}")
        page.wait_for_selector(".jp-Notebook", timeout=60_000)
        page.wait_for_function(_JS_KERNEL_IDLE, timeout=60_000, polling=100)
        assert "/notebooks/" in page.url and "/lab" not in page.url
        nb.run_cell_containing("import arknb as ark")
        nb.run_cell_containing("def multiply")
        nb.run_cell_containing("ark.RuleModel([")
        nb.run_cell_containing("ark.ChatWidget(runtime)")
        chat = page.locator(CHAT).first
        chat.wait_for()
        box = chat.get_by_test_id("arknb-input")
        box.fill("What is 1 + 2?")
        box.press("Enter")
        chat.locator("[data-testid='arknb-tool-card'][data-status='done']",
                     has=page.locator("[data-testid='arknb-tool-result']", has_text="3")).wait_for()
        chat.locator("[data-testid='arknb-assistant-text']", has_text="1 + 2 is 3.").wait_for()
        assert _wait_for_chat_status(page, "completed") == "completed"
        box.fill("hello")  # the offline model answers what is typed
        box.press("Enter")
        chat.locator("[data-testid='arknb-assistant-text']", has_text="I add and multiply whole numbers").wait_for()
        nb.screenshot("notebook7_chat", locator=chat)
    except Exception:
        nb.screenshot("failure", full_page=True)
        nb.output_dir.mkdir(parents=True, exist_ok=True)
        (nb.output_dir / "console.log").write_text("\n".join(nb.console))
        raise
    finally:
        context.close()
        notebook7_server.shutdown_all_sessions()


def test_notebook7_approvals_card_click_then_the_cell_after_it(notebook7_server, chromium_browser, request):
    """03 in Notebook 7 (issue 25): Approve on the card, then the cells that decide the same
    in code run without an error and report the run as it ended."""
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    page = context.new_page()
    nb = LabPage(page, notebook7_server, RESULTS_DIR / safe_name(request.node.name))
    try:
        page.goto(f"{notebook7_server.base_url}/notebooks/03_approvals.ipynb"
                  f"?token={notebook7_server.token}&reset={uuid.uuid4().hex[:6]}")
        page.wait_for_selector(".jp-Notebook", timeout=60_000)
        page.wait_for_function(_JS_KERNEL_IDLE, timeout=60_000, polling=100)
        nb.run_cell_containing("def clear_cache")
        nb.run_cell_containing("chat = ark.ChatWidget(runtime)")
        nb.run_cell_containing('handle = runtime.start("Please clear the cache')
        chat = page.locator(CHAT).first
        card = chat.locator("[data-testid='arknb-approval'][data-state='live']")
        card.get_by_test_id("arknb-approve").click()
        chat.locator("[data-testid='arknb-assistant-text']", has_text="Done: /tmp/cache is cleared.").wait_for()
        assert "stop_reason: awaiting_approval" in nb.run_cell_containing("result = await handle")
        out = nb.run_cell_containing("decision = await runtime.controller.approve(item.approval_id)")
        assert "Done: /tmp/cache is cleared." in out and "ok:" not in out
        assert nb.kernel_exec("print(CLEARED)").strip() == "['/tmp/cache']"
        nb.screenshot("notebook7_approved", locator=chat)
    except Exception:
        nb.screenshot("failure", full_page=True)
        raise
    finally:
        context.close()
        notebook7_server.shutdown_all_sessions()
