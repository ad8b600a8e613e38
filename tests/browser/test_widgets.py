"""ChatWidget and TimelineWidget in real JupyterLab: approvals, Stop, sanitising,
the timeline's filter, and a 5,000-chunk stream that arrives whole and in order.

Every run a widget drives is started with ``runtime.start`` so the cell returns and
the kernel can handle the clicks (see ``../shared/RECIPES.md``).
"""

from __future__ import annotations

import json

from playwright.sync_api import expect

CHAT = "[data-testid='arknb-chat'][data-ready='true']"
TIMELINE = "[data-testid='arknb-timeline'][data-ready='true']"

PREAMBLE = "import arknb as ark\n"


def _assistant_texts(lab) -> list[str]:
    return lab.page.locator(f"{CHAT} [data-testid='arknb-assistant-text']").all_inner_texts()


def _wait_for_chat_status(lab, *statuses: str, timeout: float = 30.0) -> str:
    lab.page.wait_for_function(
        "(statuses) => { const c = document.querySelector(\"[data-testid='arknb-chat']\");"
        " return c && statuses.includes(c.dataset.status); }",
        arg=list(statuses),
        timeout=timeout * 1000,
    )
    return lab.page.locator(CHAT).first.get_attribute("data-status")


def test_quickstart_send_box_runs_the_agent(lab):
    """01_quickstart (what `make demo` opens): typing into the chat and pressing Enter
    starts a run in the background; the tool card and the answer stream in."""
    lab.open("01_quickstart.ipynb")
    lab.run_cell_containing("import arknb as ark")
    lab.run_cell_containing("def multiply")
    lab.run_cell_containing("ark.RuleModel([")
    lab.run_cell_containing("ark.ChatWidget(runtime)")
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    box = chat.get_by_test_id("arknb-input")
    box.fill("What is 1 + 2?")
    box.press("Enter")
    chat.locator("[data-testid='arknb-user']", has_text="What is 1 + 2?").wait_for()
    chat.locator("[data-testid='arknb-tool-card'][data-status='done']",
                 has=lab.page.locator("[data-testid='arknb-tool-result']", has_text="3")).wait_for()
    chat.locator("[data-testid='arknb-assistant-text']", has_text="1 + 2 is 3.").wait_for()
    assert _wait_for_chat_status(lab, "completed") == "completed"
    expect(chat.locator("[data-testid='arknb-assistant-text'] strong", has_text="3")).to_have_count(1)
    expect(box).to_have_value("")  # emptied when the kernel's answer to the send arrives


def test_approvals_notebook_approve_then_deny(lab):
    lab.open("03_approvals.ipynb")
    lab.run_cell_containing("def clear_cache")
    lab.run_cell_containing("ark.ChatWidget(runtime)")
    chat = lab.page.locator(CHAT).first
    chat.wait_for()

    # Approve: the card appears, the click reaches the controller, the tool runs.
    lab.run_cell_containing('runtime.start("Please clear the cache')
    card = chat.locator("[data-testid='arknb-approval'][data-approval-id]")
    card.first.wait_for()
    expect(card).to_have_count(1)
    expect(card.first).to_contain_text("clear_cache")
    lab.screenshot("approval_card", locator=chat)
    card.first.get_by_test_id("arknb-approve").click()

    chat.locator("[data-testid='arknb-tool-result']", has_text="cleared /tmp/cache").wait_for()
    chat.locator("[data-testid='arknb-assistant-text']", has_text="Done: /tmp/cache is cleared.").wait_for()
    expect(card).to_have_count(0)
    assert _wait_for_chat_status(lab, "completed") == "completed"

    # Deny, with a reason: the denial reaches the model as the tool's result.
    lab.run_cell_containing('runtime.start("Clear /var/log/app')
    card.first.wait_for()
    card.first.get_by_test_id("arknb-deny-reason").fill("logs are still needed")
    card.first.get_by_test_id("arknb-deny").click()
    chat.locator("[data-testid='arknb-assistant-text']",
                 has_text="Understood, I left /var/log/app alone.").wait_for()
    _wait_for_chat_status(lab, "completed")
    lab.screenshot("after_deny", locator=chat)

    seen = json.loads(lab.kernel_exec(
        "import json\n"
        "m = model.requests[-1].messages[-1]\n"
        "print(json.dumps({'role': m.role, 'text': m.text, 'id': m.tool_call_id}))"
    ))
    assert seen["role"] == "tool"
    assert seen["id"] == "c2"
    assert "logs are still needed" in seen["text"]
    assert lab.kernel_exec("print(clear_cache.name, len(model.requests))").split() == ["clear_cache", "4"]


def test_restored_runtime_shows_the_pending_card_and_it_works(lab):
    """03_approvals' restore section: a second runtime built from the saved state
    (what a kernel restart leaves) shows the same approval card, and Approve works."""
    lab.open("03_approvals.ipynb")
    lab.run_cell_containing("def clear_cache")
    out = lab.run_cell_containing('runtime.run("And clear /tmp/build.")')
    assert "awaiting_approval" in out
    lab.run_cell_containing("AgentRuntime.restore(")
    lab.run_cell_containing("ark.ChatWidget(restored)")
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    card = chat.locator("[data-testid='arknb-approval'][data-approval-id]")
    card.first.wait_for()
    expected_id = lab.kernel_exec("print(restored.controller.list_pending_approvals()[0].approval_id)").strip()
    assert card.first.get_attribute("data-approval-id") == expected_id
    card.first.get_by_test_id("arknb-approve").click()
    chat.locator("[data-testid='arknb-assistant-text']", has_text="Done: /tmp/build is cleared.").wait_for()
    _wait_for_chat_status(lab, "completed")
    expect(card).to_have_count(0)
    assert lab.kernel_exec("print(restored.last_result.stop_reason)").strip() == "completed"


def test_stop_cancels_a_slow_stream(lab):
    notebook = lab.server.write_notebook("stop.ipynb", [
        PREAMBLE + """
model = ark.ScriptedModel([ark.ScriptedTurn(text=["tick "] * 400, chunk_delay=0.05)])
runtime = ark.AgentRuntime(model)
chat = ark.ChatWidget(runtime)
chat
""",
        'handle = runtime.start("Count slowly.")',
    ])
    lab.open(notebook)
    lab.run_cell(0)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    lab.run_cell(1)
    # Some text has streamed, and the run is still going.
    chat.locator("[data-testid='arknb-assistant-text']", has_text="tick tick tick").wait_for()
    expect(chat).to_have_attribute("data-status", "running")
    chat.get_by_test_id("arknb-stop").click()
    assert _wait_for_chat_status(lab, "cancelled") == "cancelled"
    out = lab.kernel_exec("r = await handle\nprint(r.stop_reason, model.closed_streams)")
    assert out.split() == ["cancelled", "1"]
    streamed = _assistant_texts(lab)[-1].count("tick")
    assert 3 <= streamed < 400


XSS_ANSWER = (
    "Here you go: <img src=x onerror=\"window.__xss = 'img'; alert('img')\"> "
    "<script>window.__xss = 'script'; alert('script')</script> "
    "[a link](javascript:window.__xss='link';alert('link')) "
    "<a href=\"javascript:window.__xss='a'\" id=\"xss-a\">raw anchor</a> "
    "<svg><animate onbegin=\"window.__xss='svg'\" attributeName=x dur=1s></svg> "
    "**still bold** END"
)


def test_model_and_tool_html_executes_nothing(lab):
    notebook = lab.server.write_notebook("xss.ipynb", [
        PREAMBLE + f"""
ANSWER = {XSS_ANSWER!r}

@ark.tool
def fetch_page(url: str) -> str:
    \"\"\"Fetch a page.\"\"\"
    return "<img src=y onerror=\\"window.__xss='tool'\\"><script>window.__xss='tool-script'</script>page"

model = ark.ScriptedModel([
    ark.ScriptedTurn(text="<b onmouseover=\\"window.__xss='b'\\">Fetching</b>",
                     tool_calls=[ark.ToolCall(id="x1", name="fetch_page", arguments_json='{{"url": "<script>x</script>"}}')]),
    ark.ScriptedTurn(text=ANSWER),
])
runtime = ark.AgentRuntime(model, tools=[fetch_page])
chat = ark.ChatWidget(runtime)
chat
""",
        'handle = runtime.start("Show me something.")',
    ])
    dialogs: list[str] = []
    lab.page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    lab.open(notebook)
    lab.run_cell(0)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    lab.run_cell(1)
    chat.locator("[data-testid='arknb-assistant-text']", has_text="END").wait_for()
    _wait_for_chat_status(lab, "completed")

    # Give any injected handler its chance: hover and click everything in the chat.
    for link in chat.locator("a").all():
        link.click(timeout=2000)
    for text in chat.locator("[data-testid='arknb-assistant-text']").all():
        text.hover()
    # Two animation frames and a task: handlers that could fire on render have had their turn.
    lab.page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 0))))")

    assert lab.page.evaluate("() => window.__xss") is None
    assert dialogs == []
    assert chat.locator("script").count() == 0
    assert chat.locator("img[onerror], [onmouseover], [onbegin], svg").count() == 0
    hrefs = [a.get_attribute("href") or "" for a in chat.locator("a").all()]
    assert not any(h.strip().lower().startswith("javascript:") for h in hrefs), hrefs
    assert chat.locator("strong", has_text="still bold").count() == 1  # Markdown still renders
    lab.screenshot("sanitised", locator=chat)


def test_timeline_shows_the_run_and_filters_and_screenshots(lab):
    notebook = lab.server.write_notebook("timeline.ipynb", [
        PREAMBLE + """
@ark.tool
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b

model = ark.ScriptedModel([
    ark.ScriptedTurn(text=["Let me ", "add."],
                     tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')]),
    ark.ScriptedTurn(text=["It ", "is ", "3."]),
])
runtime = ark.AgentRuntime(model, tools=[add])
chat = ark.ChatWidget(runtime)
timeline = ark.TimelineWidget(runtime)
""",
        "chat",
        "timeline",
        'handle = runtime.start("What is 1 + 2?")',
    ])
    lab.open(notebook)
    lab.run_cells(range(0, 3))
    chat = lab.page.locator(CHAT).first
    timeline = lab.page.locator(TIMELINE).first
    chat.wait_for()
    timeline.wait_for()
    lab.run_cell(3)
    _wait_for_chat_status(lab, "completed")
    timeline.locator("[data-testid='arknb-timeline-row'][data-type='agent.success']").wait_for()

    rows = timeline.locator("[data-testid='arknb-timeline-row']")
    expected = json.loads(lab.kernel_exec("import json; print(json.dumps([e['type'] for e in timeline.events]))"))
    expect(rows).to_have_count(len(expected))
    types = rows.evaluate_all("(rs) => rs.map((r) => r.dataset.type)")
    assert types == expected
    for needed in ("agent.started", "llm.before", "llm.chunk", "llm.after", "tool.before", "tool.after",
                   "agent.success"):
        assert needed in types, needed
    sequences = [int(rows.nth(i).get_attribute("data-sequence")) for i in range(rows.count())]
    assert sequences == sorted(sequences)
    # run, model calls, tool call (the waterfall redraws at most every few frames)
    lab.page.wait_for_function("() => document.querySelectorAll(\"[data-testid='arknb-span']\").length >= 3")

    # Filter by type: only the tool call's rows remain.
    timeline.get_by_test_id("arknb-timeline-type").select_option("tool.after")
    lab.page.wait_for_function(
        "() => [...document.querySelectorAll(\"[data-testid='arknb-timeline-row']\")]"
        ".every((r) => r.dataset.type === 'tool.after')"
    )
    expect(rows).to_have_count(1)  # `every` above also holds for a list drawn empty for a moment
    rows.first.click()
    detail = timeline.get_by_test_id("arknb-timeline-detail")
    expect(detail).to_contain_text("tool.after")
    expect(detail).to_contain_text("batch_id")

    # Clear the type filter; the search box narrows by text.
    timeline.get_by_test_id("arknb-timeline-type").select_option("")
    timeline.get_by_test_id("arknb-timeline-filter").fill("llm.after")
    lab.page.wait_for_function(
        "() => [...document.querySelectorAll(\"[data-testid='arknb-timeline-row']\")]"
        ".every((r) => r.dataset.type === 'llm.after')"
    )
    expect(rows).to_have_count(2)
    timeline.get_by_test_id("arknb-timeline-filter").fill("")

    # DOM replaceChildren() turns a null child into the text "null"; none may leak.
    card_lines = chat.get_by_test_id("arknb-tool-card").inner_text().splitlines()
    assert "null" not in [line.strip() for line in card_lines], card_lines
    detail_lines = timeline.get_by_test_id("arknb-timeline-detail").inner_text().splitlines()
    assert "null" not in [line.strip() for line in detail_lines], detail_lines

    lab.screenshot("chat", locator=chat)
    lab.screenshot("timeline", locator=timeline)
    lab.screenshot("chat_and_timeline", full_page=True)


def test_five_thousand_chunks_arrive_whole_and_in_order(lab):
    notebook = lab.server.write_notebook("stream.ipynb", [
        PREAMBLE + """
CHUNKS = [chr(ord("a") + (i * 7) % 26) for i in range(5000)]
EXPECTED = "".join(CHUNKS)
model = ark.ScriptedModel([ark.ScriptedTurn(text=CHUNKS)])
runtime = ark.AgentRuntime(model)
chat = ark.ChatWidget(runtime)
chat
""",
        'handle = runtime.start("Stream.")',
    ])
    lab.open(notebook)
    lab.run_cell(0)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    before = lab.comm_msg_count()
    lab.run_cell(1)
    _wait_for_chat_status(lab, "completed", timeout=60)
    expected = "".join(chr(ord("a") + (i * 7) % 26) for i in range(5000))
    lab.page.wait_for_function(
        "(n) => { const t = document.querySelectorAll(\"[data-testid='arknb-assistant-text']\");"
        " return t.length && t[t.length - 1].innerText.trim().length >= n; }",
        arg=len(expected),
    )
    assert _assistant_texts(lab)[-1].strip() == expected
    sent = lab.comm_msg_count() - before
    assert lab.kernel_exec("print(handle.result().stop_reason)").strip() == "completed"
    # Coalesced: far fewer kernel->browser comm messages than chunks (no flood, no drops).
    assert 0 < sent < 1000, sent
    print(f"5,000 chunks arrived in {sent} comm messages")
