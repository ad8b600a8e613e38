"""A run a user would debug, in real JupyterLab + Chromium: hook decisions that read as
decisions (rewrite diffed as values, deny with what the model got, defer with the
approval's fate, a dropped chunk's text), status colours, nested spans with a resumed
run, run totals, the keyboard, the stacked layout at 400 px, and screenshots of the
timeline in the light and dark themes and at 400 px into test-results/."""

from __future__ import annotations

from playwright.sync_api import expect

TIMELINE = "[data-testid='arknb-timeline'][data-ready='true']"
ROWS = "[data-testid='arknb-timeline-row']"
_TWO_FRAMES = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 0))))"

STORY = """
import asyncio, json
import arknb as ark


@ark.tool
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b


@ark.tool
def rm(path: str) -> str:
    \"\"\"Delete a file.\"\"\"
    return f"deleted {path}"


@ark.tool(risk="dangerous")
def pay(amount: int) -> str:
    \"\"\"Pay an amount.\"\"\"
    raise RuntimeError("card declined")


model = ark.ScriptedModel([
    ark.ScriptedTurn(text=["Let me ", "sk-live-1234 ", "work."], usage=ark.Usage(input_tokens=40, output_tokens=12),
                     tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 50}', index=0),
                                 ark.ToolCall(id="c2", name="rm", arguments_json='{"path": "/etc"}', index=1),
                                 ark.ToolCall(id="c3", name="pay", arguments_json='{"amount": 5}', index=2)]),
    ark.ScriptedTurn(text=["Added: 21."], usage=ark.Usage(input_tokens=90, output_tokens=4)),
])
runtime = ark.AgentRuntime(model, tools=[add, rm, pay])


@runtime.hooks.before_tool_call(name="clamp")
def clamp(ctx):
    if ctx.call.name == "add":
        args = json.loads(ctx.call.arguments_json)
        if args["b"] > 20:
            return ark.ToolCallHookResult.proceed(
                call=ctx.call.model_copy(update={"arguments_json": json.dumps({**args, "b": 20})}))


@runtime.hooks.before_tool_call(name="guard")
def guard(ctx):
    if ctx.call.name == "rm":
        return ark.ToolCallHookResult.deny(ark.ToolResult.from_text("not allowed: rm", is_error=True),
                                           reason="no deleting")


@runtime.hooks.on_model_chunk(name="redact")
def redact(ctx):
    if ctx.text and "sk-" in ctx.text:
        return ark.ModelChunkHookResult.drop(reason="looks like a key")


timeline = ark.TimelineWidget(runtime)
timeline
"""

RUN = """
first = await runtime.run("Add, clean up and pay.")
item = runtime.controller.list_pending_approvals()[0]
await runtime.controller.approve(item.approval_id)
while runtime.is_running:
    await asyncio.sleep(0.05)
print(first.stop_reason, runtime.last_result.stop_reason)
"""

NARROW = """
narrow = ark.TimelineWidget(timeline.events, layout={"width": "400px"})
narrow
"""


def tall(lab, widget, rows):
    """Make the list tall enough that all ``rows`` are drawn (only rows on screen are)."""
    widget.get_by_test_id("arknb-timeline-rows").evaluate(
        "(el) => { el.style.height = '1400px'; el.style.maxHeight = 'none'; el.dispatchEvent(new Event('scroll')); }")
    lab.page.wait_for_function(
        f"() => document.querySelector(\"{TIMELINE}\").querySelectorAll(\"{ROWS}\").length === {rows}")


def shoot(lab, name, widget):
    """A screenshot of one widget at its normal size, on a page tall enough to hold it."""
    widget.get_by_test_id("arknb-timeline-rows").evaluate(
        "(el) => { el.style.height = ''; el.style.maxHeight = ''; el.dispatchEvent(new Event('scroll')); }")
    lab.page.set_viewport_size({"width": 1400, "height": 2000})
    widget.scroll_into_view_if_needed()
    lab.page.evaluate(_TWO_FRAMES)  # the resize and scroll are drawn
    lab.screenshot(name, locator=widget)
    lab.page.set_viewport_size({"width": 1400, "height": 1000})


def open_row(lab, timeline, locator):
    locator.scroll_into_view_if_needed()
    locator.click()
    return timeline.get_by_test_id("arknb-timeline-detail")


def test_a_run_with_hooks_and_an_approval_reads_as_a_story(lab):
    notebook = lab.server.write_notebook("timeline_story.ipynb", [STORY, RUN, NARROW])
    lab.open(notebook)
    lab.run_cell(0)
    timeline = lab.page.locator(TIMELINE).first
    timeline.wait_for()
    assert lab.run_cell(1).strip().endswith("awaiting_approval completed")
    timeline.locator(f"{ROWS}[data-type='agent.success']").wait_for()
    total = int(lab.kernel_exec("print(len(timeline.events))").strip())
    tall(lab, timeline, total)

    # Status colours: success, error, denied and deferred rows differ.
    colour = lambda sel: timeline.locator(sel).first.evaluate("(r) => getComputedStyle(r).borderLeftColor")  # noqa: E731
    colours = {
        "ok": colour(f"{ROWS}[data-type='agent.success']"),
        "error": colour(f"{ROWS}[data-type='tool.after'][data-status='error']"),
        "denied": colour(f"{ROWS}[data-type='tool.denied']"),
        "deferred": colour(f"{ROWS}[data-type='agent.suspended']"),
    }
    assert len(set(colours.values())) == 4, colours

    # Spans nest; the run continued after the approval has its own run span.
    # The waterfall redraws at most every few frames: wait for the draw with both runs ended.
    lab.page.wait_for_function("""() => [...document.querySelectorAll("[data-testid='arknb-span'][data-kind='run']")]
        .map((s) => s.dataset.status).join() === 'deferred,ok'""")
    spans = lab.page.evaluate("""() => [...document.querySelectorAll("[data-testid='arknb-span']")]
        .map((s) => [s.dataset.kind, s.querySelector('.arknb-span-label').textContent, Number(s.dataset.depth), s.dataset.status])""")
    runs = [s for s in spans if s[0] == "run"]
    assert [r[3] for r in runs] == ["deferred", "ok"] and "resumed after" in runs[1][1]
    assert {s[0] for s in spans} == {"run", "turn", "model", "tool"}
    assert all(s[2] >= 1 for s in spans if s[0] != "run")

    # rewrite: a key-by-key diff of the arguments, and a link to the call as it ran
    detail = open_row(lab, timeline, timeline.locator(f"{ROWS}[data-type='hook.decision']", has_text="clamp rewrite"))
    entries = detail.get_by_test_id("arknb-diff-entry")
    expect(entries).to_have_count(2)
    assert entries.evaluate_all("(es) => es.map((e) => e.dataset.key)") == ["arguments_json", "b"]
    expect(detail.get_by_test_id("arknb-diff-before")).to_have_text("50")
    expect(detail.get_by_test_id("arknb-diff-after")).to_have_text("20")
    detail.get_by_test_id("arknb-hook-link").click()
    expect(timeline.locator(f"{ROWS}[aria-selected='true']")).to_have_attribute("data-type", "tool.before")

    # deny: the reason and the synthetic result given to the model
    detail = open_row(lab, timeline, timeline.locator(f"{ROWS}[data-type='hook.decision']", has_text="guard deny"))
    expect(detail.get_by_test_id("arknb-hook-reason")).to_have_text("reason: no deleting")
    expect(detail.get_by_test_id("arknb-hook-synthetic")).to_have_text("not allowed: rm")

    # defer: "deferred for approval" and the approval's fate
    detail = open_row(lab, timeline, timeline.locator(f"{ROWS}[data-type='hook.decision']", has_text="defer"))
    expect(detail.get_by_test_id("arknb-hook-fate")).to_have_attribute("data-fate", "approved")

    # drop: the text that never reached anyone
    detail = open_row(lab, timeline, timeline.locator(f"{ROWS}[data-type='hook.decision']", has_text="redact drop"))
    expect(detail.get_by_test_id("arknb-hook-affected")).to_have_text("sk-live-1234")
    shoot(lab, "timeline_light", timeline)

    # Totals of the selected run.
    run_ids = lab.page.evaluate(
        "() => [...document.querySelectorAll(\"[data-testid='arknb-timeline-run'] option\")].map((o) => o.value)")
    # The run continued after the approval goes on under its own id (its operations are
    # keyed by it: DESIGN §13), so the run filter lists one run and its totals cover both spans.
    assert len(run_ids) == 2, run_ids
    timeline.get_by_test_id("arknb-timeline-run").select_option(run_ids[1])
    totals = timeline.get_by_test_id("arknb-timeline-totals")
    lab.page.wait_for_function(
        "(r) => document.querySelector(\"[data-testid='arknb-timeline-totals']\").textContent.startsWith('run ' + r)",
        arg=run_ids[1])
    # What the kernel's events say of the run, counted here independently of the front end.
    expected = lab.kernel_exec(
        "evs = [e for e in timeline.events if e['run_id'] == %r]\n"
        "turns = len({e['payload']['turn'] for e in evs if e['type'] == 'llm.before'})\n"
        "calls = sum(e['type'] in ('tool.after', 'tool.denied') for e in evs)\n"
        "tin = sum(e['payload']['usage']['input_tokens'] for e in evs if e['type'] == 'llm.after')\n"
        "tout = sum(e['payload']['usage']['output_tokens'] for e in evs if e['type'] == 'llm.after')\n"
        "print(f' · {turns} turns · {calls} tool calls · {tin:,} in / {tout:,} out tokens · ')" % run_ids[1]).strip("\n")
    assert expected.startswith(" · 2 turns · 3 tool calls · "), expected   # before and after the approval
    expect(totals).to_contain_text(expected)
    expect(totals).to_contain_text(" · 1 error · 1 denied · ")
    timeline.get_by_test_id("arknb-timeline-run").select_option("")

    # Keyboard: one Tab stop in the list, arrows move, Enter opens.
    row = timeline.locator(f"{ROWS}[data-type='agent.resumed']")
    row.click()
    start = int(row.get_attribute("data-sequence"))
    expect(timeline.locator(f"{ROWS}[tabindex='0']")).to_have_count(1)
    lab.page.keyboard.press("ArrowDown")
    lab.page.keyboard.press("ArrowDown")
    expect(timeline.locator(f"{ROWS}[data-sequence='{start + 2}']")).to_be_focused()
    lab.page.keyboard.press("Enter")
    expect(timeline.locator(f"{ROWS}[aria-selected='true']")).to_have_attribute("data-sequence", str(start + 2))
    expect(timeline.locator(f"{ROWS}[tabindex='0']")).to_have_attribute("data-sequence", str(start + 2))

    # At 400 px the detail pane stacks under the list.
    lab.run_cell(2)
    narrow = lab.page.locator(TIMELINE).nth(1)
    narrow.wait_for()
    narrow.locator(ROWS).first.wait_for()
    narrow.locator(ROWS).first.click()
    list_box = narrow.get_by_test_id("arknb-timeline-rows").bounding_box()
    detail_box = narrow.get_by_test_id("arknb-timeline-detail").bounding_box()
    root_box = narrow.bounding_box()
    assert root_box["width"] <= 402
    assert detail_box["y"] >= list_box["y"] + list_box["height"] - 1
    assert detail_box["x"] + detail_box["width"] <= root_box["x"] + root_box["width"] + 1
    shoot(lab, "timeline_400px", narrow)

    light_bg = timeline.evaluate("(t) => getComputedStyle(t).backgroundColor")
    try:
        lab.page.evaluate(
            "() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
        lab.page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=60_000)
        lab.page.wait_for_function(
            "(before) => getComputedStyle(document.querySelector(\"[data-testid='arknb-timeline']\")).backgroundColor !== before",
            arg=light_bg, timeout=30_000)
        tall(lab, timeline, total)
        dark = {name: colour(sel) for name, sel in (
            ("ok", f"{ROWS}[data-type='agent.success']"), ("error", f"{ROWS}[data-type='tool.after'][data-status='error']"),
            ("denied", f"{ROWS}[data-type='tool.denied']"), ("deferred", f"{ROWS}[data-type='agent.suspended']"))}
        assert len(set(dark.values())) == 4, dark
        shoot(lab, "timeline_dark", timeline)
    finally:
        lab.page.evaluate(
            "() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
        lab.page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'", timeout=60_000)
