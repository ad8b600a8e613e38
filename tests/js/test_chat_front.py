"""ChatWidget's front end with a fake model: sanitizing, the delta protocol, buttons,
approvals, detached views, focus and layout details."""

import json

from playwright.sync_api import expect

XSS = (
    "Here: <img src=x onerror=\"window.__xss='img'\"> <script>window.__xss='script'</script> "
    "[a link](javascript:window.__xss='link') <a href=\"javascript:window.__xss='a'\">raw</a> "
    "<svg><animate onbegin=\"window.__xss='svg'\" attributeName=x dur=1s></svg> "
    "<iframe src=\"javascript:window.__xss='iframe'\"></iframe> ![remote](http://example.org/x.png) "
    "<b onmouseover=\"window.__xss='b'\">**bold**</b> END"
)


def base_state(entries=(), approvals=(), status="idle", read_only=False, seq=1, n=1, **extra):
    return {"_snapshot": {"seq": seq, "n": n, "status": status, "entries": list(entries)}, "approvals": list(approvals),
            "status": status, "read_only": read_only, "error": "", "detached": "", "input_block": "",
            "suspending": False, **extra}


def assistant(eid="e2", text="", streaming=False, reasoning=""):
    return {"id": eid, "kind": "assistant", "text": text, "reasoning": reasoning, "streaming": streaming, "run_id": "r"}


def tool(cid="c1", status="done", result="3", **kw):
    return {"id": f"tool:{cid}", "kind": "tool", "call_id": cid, "name": "add", "arguments": "{}", "status": status,
            "result": result, "is_error": False, "duration_ms": None, "reason": None, **kw}


def approval(aid, cid="c2", **kw):
    return {"approval_id": aid, "call_id": cid, "tool_name": "clear_cache", "arguments": '{"path": "/tmp"}',
            "risk_level": "dangerous", "reason": "needs approval", "decision": "pending", "deny_reason": None,
            "deciding": False, "error": None, "note": None, "live": True, **kw}


DANGER = """(root) => {
  const bad = [];
  for (const el of root.querySelectorAll('*')) {
    if (['SCRIPT', 'IFRAME', 'OBJECT', 'EMBED'].includes(el.tagName)) bad.push(el.tagName);
    for (const a of el.attributes) {
      if (a.name.startsWith('on')) bad.push(el.tagName + ' ' + a.name);
      if ((a.name === 'href' || a.name === 'src' || a.name === 'xlink:href') && /^\\s*javascript:/i.test(a.value))
        bad.push(el.tagName + ' ' + a.name + '=' + a.value);
      if (el.tagName === 'IMG' && a.name === 'src' && !a.value.startsWith('data:')) bad.push('remote img ' + a.value);
    }
  }
  return bad;
}"""

LAST_TEXT = "() => [...document.querySelectorAll(\"[data-testid='arknb-assistant-text']\")].at(-1).textContent"


def non_hello(harness):
    return [m for m in harness.sent() if m["type"] != "hello"]


def test_model_and_tool_html_executes_nothing(harness):
    entries = [
        {"id": "e1", "kind": "user", "text": XSS},
        assistant("e2", XSS, reasoning=XSS),
        {**tool(result=XSS), "name": "<img src=x onerror=\"window.__xss='name'\">", "arguments": json.dumps({"html": XSS})},
        {"id": "e4", "kind": "hook", "slot": "before_tool_call", "hook": "<script>x</script>", "action": "rewrite",
         "reason": XSS, "before": {"a": XSS}, "after": {"a": "ok"}, "count": 1},
        {"id": "e5", "kind": "notice", "level": "error", "text": XSS},
        assistant("e6", "", streaming=True),
    ]
    approvals = [approval("ap1", tool_name=XSS, arguments=XSS, risk_level=XSS, reason=XSS, error=XSS, note=XSS)]
    harness.mount("chat", base_state(entries, approvals, status="running"))
    harness.emit({"type": "delta", "seq": 2, "ops": [["text", "e6", 0, len(XSS), XSS]]})
    harness.page.locator("[data-testid='arknb-hook'] summary").click()  # open the diff too
    harness.page.wait_for_function(LAST_TEXT + ".includes('END')")
    harness.page.mouse.move(10, 10)
    harness.frames()  # handlers that could fire on render or hover have had their turn
    assert harness.page.evaluate("() => window.__xss") is None
    assert harness.dialogs == []
    root = harness.page.locator("[data-testid='arknb-chat']")
    assert root.evaluate(DANGER) == []
    assert harness.foreign_requests == []
    # the markdown still renders; raw HTML is shown as text; the javascript: link lost its href
    text = harness.page.locator("[data-testid='arknb-assistant-text']").first
    assert text.locator("strong").count() >= 1
    assert text.locator("a:not([href])").count() >= 1
    assert "<script>window.__xss='script'</script>" in text.inner_text()
    assert "END" in root.inner_text()


def test_text_after_a_literal_tag_is_kept_and_shown_escaped(harness):
    answer = "Never trust <script> tags in model output. They run in the page; <b>bold</b> stays text too."
    harness.mount("chat", base_state([assistant("e2", answer), tool(result="see <iframe> below: still here")]))
    assert harness.page.locator("[data-testid='arknb-assistant-text']").inner_text() == answer
    assert harness.page.locator("[data-testid='arknb-tool-result']").inner_text() == "see <iframe> below: still here"
    assert harness.page.locator("[data-testid='arknb-chat'] script, [data-testid='arknb-chat'] b").count() == 0


def test_five_thousand_single_char_deltas_arrive_in_order(harness):
    harness.mount("chat", base_state([assistant("e2", "", streaming=True)], status="running"))
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    text = "".join(alphabet[(i * 7) % len(alphabet)] for i in range(5000))
    harness.page.evaluate("""(text) => {
      for (let i = 0; i < text.length; i++)
        window.w.model.emit({type: 'delta', seq: i + 2, ops: [['text', 'e2', i, i + 1, text[i]]]});
    }""", text)
    harness.page.wait_for_function(
        "(n) => document.querySelector(\"[data-testid='arknb-assistant-text']\").textContent.length >= n", arg=5000)
    got = harness.page.locator("[data-testid='arknb-assistant-text']").text_content()
    assert got == text
    assert [m for m in harness.sent() if m["type"] == "hello"] == [{"type": "hello"}]  # only initialize's


def test_added_and_patched_entries_show_and_repeats_are_skipped(harness):
    harness.mount("chat", base_state([assistant("e2", "Let me add.")]))
    card = tool("c1", status="running", result=None)
    harness.emit({"type": "delta", "seq": 2, "ops": [["add", card]]})
    harness.page.locator("[data-testid='arknb-tool-card'][data-status='running']").wait_for()
    harness.emit({"type": "delta", "seq": 3, "ops": [["patch", "tool:c1", {"status": "done", "result": "3"}],
                                                      ["add", {"id": "e4", "kind": "user", "text": "thanks"}]]})
    harness.page.locator("[data-testid='arknb-tool-card'][data-status='done']").wait_for()
    harness.emit({"type": "delta", "seq": 3, "ops": [["add", {"id": "e5", "kind": "user", "text": "repeat"}]]})
    harness.emit({"type": "delta", "seq": 2, "ops": [["add", {"id": "e6", "kind": "user", "text": "old"}]]})
    harness.frames()  # the frame that would have folded them in has run
    users = harness.page.locator("[data-testid='arknb-user']").all_inner_texts()
    assert users == ["thanks"]
    assert harness.page.locator("[data-testid='arknb-tool-result']").inner_text() == "3"
    assert [m for m in harness.sent() if m["type"] == "hello"] == [{"type": "hello"}]


def test_a_missed_delta_asks_once_for_a_snapshot_that_replaces_the_view(harness):
    harness.mount("chat", base_state([assistant("e2", "Hel", streaming=True)], status="running"))
    harness.set("_snapshot", base_state([assistant("e2", "Hel", streaming=True)], n=2)["_snapshot"])  # hello answered
    harness.emit({"type": "delta", "seq": 2, "ops": [["text", "e2", 0, 3, "Hel"], ["text", "e2", 1, 5, "ello"],
                                                      ["text", "e2", 5, 6, "😀"], ["text", "e2", 6, 7, "!"]]})
    harness.page.wait_for_function(LAST_TEXT + " === 'Hello😀!'")
    harness.page.evaluate("() => window.w.model.sent.length = 0")
    harness.emit({"type": "delta", "seq": 5, "ops": [["text", "e2", 7, 8, "?"]]})   # 3 and 4 went missing
    harness.emit({"type": "delta", "seq": 6, "ops": [["text", "e2", 8, 9, "?"]]})
    harness.frames()
    assert harness.sent() == [{"type": "hello"}]  # once, not once per message
    assert harness.page.evaluate(LAST_TEXT) == "Hello😀!"
    # the kernel answers with a fresh snapshot; the view replaces its state with it
    harness.set("_snapshot", {"seq": 6, "status": "running", "entries": [assistant("e2", "fresh", streaming=True)]})
    harness.page.wait_for_function(LAST_TEXT + " === 'fresh'")
    harness.emit({"type": "delta", "seq": 7, "ops": [["text", "e2", 5, 6, "!"]]})
    harness.page.wait_for_function(LAST_TEXT + " === 'fresh!'")


def test_enter_sends_and_the_box_empties_only_when_the_runtime_took_it(harness):
    harness.mount("chat", base_state())
    box = harness.page.get_by_test_id("arknb-input")
    box.fill("first line")
    box.press("Shift+Enter")
    box.type("second")
    box.press("Enter")
    (msg,) = [m for m in harness.sent() if m["type"] == "send"]
    assert msg["text"] == "first line\nsecond" and msg["request_id"]
    assert box.input_value() == "first line\nsecond"  # until the kernel answers
    harness.emit({"type": "action_result", "action": "send", "request_id": msg["request_id"], "ok": True, "error": None})
    assert box.input_value() == ""

    box.fill("refused text")
    box.press("Enter")
    rid = harness.sent()[-1]["request_id"]
    harness.emit({"type": "action_result", "action": "send", "request_id": rid, "ok": False,
                  "error": "pending_approval_blocks_input: decide first"})
    harness.set("error", "pending_approval_blocks_input: decide first")
    assert box.input_value() == "refused text"
    assert "pending_approval_blocks_input" in harness.page.get_by_test_id("arknb-error").inner_text()


def test_the_send_box_is_disabled_with_its_reason_while_input_is_blocked(harness):
    harness.mount("chat", base_state(status="running"))
    box = harness.page.get_by_test_id("arknb-input")
    box.fill("next question")
    harness.set("input_block", "a run is in progress: wait for it to finish, or press Stop")
    send = harness.page.get_by_test_id("arknb-send")
    assert send.is_disabled() and box.is_editable()
    assert box.get_attribute("aria-describedby") == harness.page.get_by_test_id("arknb-input-block").get_attribute("id")
    assert harness.page.get_by_test_id("arknb-input-block").inner_text().startswith("a run is in progress")
    box.press("Enter")
    assert [m for m in harness.sent() if m["type"] == "send"] == []
    box.type(" please")  # the next message can be written meanwhile
    assert box.input_value() == "next question please"
    harness.set("input_block", "")
    assert send.is_enabled() and not harness.page.get_by_test_id("arknb-input-block").is_visible()
    box.press("Enter")
    assert [m["text"] for m in harness.sent() if m["type"] == "send"] == ["next question please"]


def test_control_buttons_follow_status_and_suspend_says_it_waits_for_a_checkpoint(harness):
    harness.mount("chat", base_state(status="running"))
    stop, suspend, resume = (harness.page.get_by_test_id(t) for t in ("arknb-stop", "arknb-suspend", "arknb-resume"))
    assert stop.is_enabled() and suspend.is_enabled() and not resume.is_visible()
    assert harness.page.get_by_test_id("arknb-status").get_attribute("data-status") == "running"
    suspend.focus()
    harness.page.keyboard.press("Enter")  # keyboard reachable: real <button>s
    assert [m["type"] for m in non_hello(harness)] == ["suspend"]
    bar = harness.page.get_by_test_id("arknb-suspending")
    assert bar.inner_text() == "suspending at the next checkpoint…" and suspend.inner_text() == "Suspending…"
    rid = harness.sent()[-1]["request_id"]
    harness.emit({"type": "action_result", "action": "suspend", "request_id": rid, "ok": True, "error": None})
    harness.set("suspending", True)
    assert bar.is_visible() and suspend.is_disabled()  # still waiting for the checkpoint
    harness.set("suspending", False)
    harness.set("status", "suspended")
    assert not bar.is_visible() and resume.is_visible()
    resume.click()
    assert harness.sent()[-1]["type"] == "resume"
    stop.click()
    assert harness.sent()[-1]["type"] == "stop" and stop.inner_text() == "Stopping…"


def test_approve_disables_the_card_at_the_first_click_and_moves_focus_on(harness):
    harness.mount("chat", base_state(approvals=[approval("ap1"), approval("ap2", "c3")], status="awaiting_approval"))
    card1 = harness.page.locator("[data-testid='arknb-approval'][data-approval-id='ap1']")
    card2 = harness.page.locator("[data-testid='arknb-approval'][data-approval-id='ap2']")
    card1.get_by_test_id("arknb-approve").focus()
    harness.page.keyboard.press("Enter")
    harness.page.keyboard.press("Enter")  # a second press lands on the next card, never twice on this one
    sent = [m for m in non_hello(harness)]
    assert [(m["type"], m["approval_id"]) for m in sent] == [("approve", "ap1"), ("approve", "ap2")]
    assert card1.get_attribute("data-state") == "deciding" and card1.get_by_test_id("arknb-approve").count() == 0
    assert card1.get_by_test_id("arknb-approval-deciding").inner_text() == "deciding…"
    # both decided: focus goes to the send box
    assert harness.page.evaluate("() => document.activeElement.dataset.testid") == "arknb-input"
    harness.emit({"type": "action_result", "action": "approve", "request_id": sent[0]["request_id"], "ok": True,
                  "error": None, "approval_id": "ap1", "decision": "approved"})
    assert card1.get_by_test_id("arknb-approval-decision").inner_text() == "✓ approved"


def test_deny_sends_its_reason_and_an_error_leaves_the_card_usable(harness):
    harness.mount("chat", base_state(approvals=[approval("ap1"), approval("ap2", "c3")], status="awaiting_approval"))
    card2 = harness.page.locator("[data-testid='arknb-approval'][data-approval-id='ap2']")
    card2.get_by_test_id("arknb-deny-reason").fill("too broad")
    card2.get_by_test_id("arknb-deny").click()
    sent = harness.sent()[-1]
    assert (sent["type"], sent["approval_id"], sent["reason"]) == ("deny", "ap2", "too broad")
    assert harness.page.evaluate("() => document.activeElement.closest('[data-approval-id]').dataset.approvalId") == "ap1"
    harness.emit({"type": "action_result", "action": "deny", "request_id": sent["request_id"], "ok": False,
                  "error": "approval_host_missing: no host", "approval_id": "ap2"})
    assert card2.get_by_test_id("arknb-approval-error").inner_text() == "approval_host_missing: no host"
    assert card2.get_by_test_id("arknb-deny").is_enabled()
    harness.set("approvals", [approval("ap1")])  # the kernel says ap2 is gone
    assert card2.count() == 0


def test_a_card_decided_elsewhere_shows_the_recorded_decision_without_buttons(harness):
    harness.mount("chat", base_state(approvals=[
        approval("ap1", decision="denied", note="already denied elsewhere", live=False),
        approval("ap2", "c3", live=False, note="another runtime changed this session: nothing ran")],
        status="awaiting_approval"))
    card1 = harness.page.locator("[data-approval-id='ap1']")
    assert card1.get_by_test_id("arknb-approval-decision").inner_text() == "✗ denied — already denied elsewhere"
    assert card1.get_by_test_id("arknb-approve").count() == 0
    card2 = harness.page.locator("[data-approval-id='ap2']")
    assert card2.get_attribute("data-state") == "dead" and card2.get_by_test_id("arknb-approve").is_disabled()
    assert "nothing ran" in card2.inner_text()


def test_a_detached_chat_says_so_and_its_buttons_do_nothing(harness):
    harness.mount("chat", base_state(approvals=[approval("ap1")], status="awaiting_approval"))
    harness.set("detached", "A newer chat took over this session: the live one is further down.")
    bar = harness.page.get_by_test_id("arknb-detached")
    assert bar.is_visible() and "A newer chat took over" in bar.inner_text()
    assert harness.page.get_by_test_id("arknb-approve").is_disabled()
    # Its cards are not shown at all (the live chat has them), and its status says why.
    assert not harness.page.get_by_test_id("arknb-approvals").is_visible()
    assert harness.page.get_by_test_id("arknb-status").inner_text() == "not live"
    assert harness.page.get_by_test_id("arknb-stop").is_disabled()
    assert harness.page.locator("[data-testid='arknb-chat']").get_attribute("data-detached") == "true"
    harness.page.get_by_test_id("arknb-approve").dispatch_event("click")  # even a scripted click does nothing
    assert non_hello(harness) == []


def test_a_view_whose_kernel_is_gone_is_detached(harness):
    harness.mount("chat", base_state(approvals=[approval("ap1")], status="awaiting_approval"))
    # ipywidgets marks the view's element so when its model lost the kernel (restart, saved state)
    harness.page.evaluate("() => window.w.el.classList.add('jupyter-widgets-disconnected')")
    harness.page.locator("[data-testid='arknb-chat'][data-detached='true']").wait_for()
    assert "kernel behind this chat is gone" in harness.page.get_by_test_id("arknb-detached").inner_text()
    assert harness.page.get_by_test_id("arknb-approve").is_disabled()
    assert harness.page.get_by_test_id("arknb-send").is_disabled()


def test_long_tool_results_collapse_with_show_more(harness):
    long = "\n".join(f"line {i}" for i in range(200))
    harness.mount("chat", base_state([tool("c1", result=long), tool("c2", result="short")]))
    result = harness.page.locator("[data-testid='arknb-tool-result']").first
    more = harness.page.get_by_test_id("arknb-show-more")
    assert more.count() == 1 and "show more" in more.inner_text()
    collapsed = result.evaluate("(n) => n.getBoundingClientRect().height")
    more.click()
    assert more.inner_text() == "show less" and more.get_attribute("aria-expanded") == "true"
    assert result.evaluate("(n) => n.getBoundingClientRect().height") > collapsed * 3
    more.click()
    assert "show more" in more.inner_text()


def test_buttons_and_the_send_box_show_visible_focus(harness):
    harness.mount("chat", base_state(approvals=[approval("ap1")], status="awaiting_approval"))
    styles = {}
    for testid in ("arknb-approve", "arknb-deny", "arknb-send", "arknb-input"):
        target = harness.page.get_by_test_id(testid).first
        target.focus()
        harness.page.keyboard.press("Shift")  # keyboard modality, so :focus-visible applies
        target.focus()
        styles[testid] = target.evaluate("(n) => { const s = getComputedStyle(n); "
                                         "return [s.outlineStyle, s.outlineWidth, n.matches(':focus-visible')]; }")
    for testid, (style, width, visible) in styles.items():
        assert visible and style == "solid" and width == "2px", (testid, style, width)


def test_read_only_hides_controls(harness):
    harness.mount("chat", base_state([assistant("e2", "old answer")], [approval("ap1", live=False)],
                                     status="completed", read_only=True))
    assert not harness.page.get_by_test_id("arknb-input").is_visible()
    assert harness.page.get_by_test_id("arknb-stop").count() == 1 and not harness.page.get_by_test_id("arknb-stop").is_visible()
    assert harness.page.get_by_test_id("arknb-approve").count() == 0
    assert harness.page.get_by_test_id("arknb-assistant-text").inner_text() == "old answer"


def test_render_returns_cleanup_and_a_second_view_shares_the_transcript(harness):
    harness.mount("chat", base_state([assistant("e2", "", streaming=True)], status="running"))
    harness.page.evaluate("""async () => {
      const mod = (await import('/chat.js')).default;
      const el = document.createElement('div'); el.id = 'second'; document.body.append(el);
      window.second = await mod.render({ model: window.w.model, el });
    }""")
    harness.emit({"type": "delta", "seq": 2, "ops": [["text", "e2", 0, 2, "hi"]]})
    harness.page.wait_for_function(
        "() => [...document.querySelectorAll(\"[data-testid='arknb-assistant-text']\")].every((n) => n.textContent === 'hi')")
    assert harness.page.evaluate("() => typeof window.w.cleanup === 'function' && typeof window.second === 'function'")
    harness.page.evaluate("() => window.second()")
    harness.emit({"type": "delta", "seq": 3, "ops": [["text", "e2", 2, 3, "!"]]})
    harness.page.wait_for_function(
        "() => document.querySelector(\"[data-testid='arknb-assistant-text']\").textContent === 'hi!'")
    assert harness.page.locator("#second [data-testid='arknb-assistant-text']").text_content() == "hi"


def test_a_view_rendered_while_a_snapshot_it_already_holds_is_pending_shows_the_transcript(harness):
    """The order a loaded machine gave in JupyterLab (a read-only replay stayed empty):
    the kernel's first delta arrives and a frame folds it in; the snapshot of the same
    seq lands next, and the view renders before the following frame. The store is
    already at that snapshot, so folding it in changes nothing: the new view must
    still draw everything the store holds."""
    entries = [{"id": "e1", "kind": "user", "text": "What is 1 + 2?"}, assistant("e2", "It is 3.")]
    harness.page.evaluate("""async (entries) => {
      const mod = (await import('/chat.js')).default;
      const model = window.fakeModel({ _snapshot: {}, approvals: [], status: "idle", read_only: false, error: "",
        detached: "", input_block: "", suspending: false, static_id: "00112233445566778899aabbccddeeff" });
      await mod.initialize({ model });
      model.emit({ type: "delta", seq: 1, ops: entries.map((e) => ["add", e]) });
      await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));  // that frame's flush ran
      model.set("read_only", true);
      model.set("status", "completed");
      model.set("_snapshot", { seq: 1, n: 1, status: "completed", entries });
      const el = document.createElement("div"); document.body.append(el);
      await mod.render({ model, el });                                     // before the next frame
      window.w = { model, el };
    }""", entries)
    expect(harness.page.locator("[data-testid='arknb-user']")).to_have_text(["What is 1 + 2?"])
    expect(harness.page.locator("[data-testid='arknb-assistant-text']")).to_have_text(["It is 3."])
    expect(harness.page.get_by_test_id("arknb-status")).to_have_text("completed")


def test_a_live_view_hides_the_static_companion_until_it_goes(harness):
    sid = "0123456789abcdef0123456789abcdef"
    harness.page.evaluate("""(sid) => { const d = document.createElement('div'); d.id = 'companion';
      d.setAttribute('data-arknb-static', sid); d.textContent = 'static copy'; document.body.append(d); }""", sid)
    harness.mount("chat", base_state([assistant("e2", "live")], static_id=sid))
    assert not harness.page.locator("#companion").is_visible()
    harness.page.evaluate("() => window.w.cleanup()")
    assert harness.page.locator("#companion").is_visible()


def test_views_of_one_chat_share_its_transcript_through_the_static_id(harness):
    """anywidget gives every view its own proxy of the model; the store is found by id."""
    sid = "fedcba9876543210fedcba9876543210"
    harness.mount("chat", base_state([assistant("e2", "", streaming=True)], status="running", static_id=sid))
    harness.page.evaluate("""async () => {
      const mod = (await import('/chat.js')).default;
      const proxy = { ...window.w.model };               // another proxy of the same model
      const el = document.createElement('div'); el.id = 'other'; document.body.append(el);
      window.other = await mod.render({ model: proxy, el });
    }""")
    harness.emit({"type": "delta", "seq": 2, "ops": [["text", "e2", 0, 3, "hey"]]})
    harness.page.wait_for_function(
        "() => document.querySelector('#other [data-testid=\"arknb-assistant-text\"]').textContent === 'hey'")


def test_the_models_own_snapshot_copy_follows_the_deltas_for_saved_widget_state(harness):
    harness.mount("chat", base_state([assistant("e2", "one")]))
    harness.emit({"type": "delta", "seq": 2, "ops": [["add", {"id": "e3", "kind": "user", "text": "two"}]]})
    harness.page.wait_for_function(
        "() => (window.w.model.get('_snapshot').entries || []).length === 2", timeout=5000)
    snap = harness.page.evaluate("() => window.w.model.get('_snapshot')")
    assert snap["seq"] == 2 and [e["id"] for e in snap["entries"]] == ["e2", "e3"]
    assert [m for m in harness.sent() if m["type"] == "hello"] == [{"type": "hello"}]  # our own set is not a resync


def test_the_local_copy_never_overwrites_a_kernel_snapshot_not_yet_folded_in(harness):
    """A hidden tab runs timers but no animation frames: the kernel's snapshot lands in
    the model while the flush that would take it waits for a frame, and the local copy
    (saved 1.5 s after the last change) is due. It must not replace the kernel's newer
    snapshot with the store's older one, or that newer state is never shown."""
    page = harness.page
    page.clock.install()
    page.evaluate("""() => { window.frames_ = [];
      window.requestAnimationFrame = (cb) => { window.frames_.push(cb); return window.frames_.length; };
      window.runFrames = () => { for (const cb of window.frames_.splice(0)) cb(performance.now()); }; }""")
    harness.mount("chat", base_state([assistant("e2", "one")]))
    harness.emit({"type": "delta", "seq": 2, "ops": [["add", {"id": "e3", "kind": "user", "text": "two"}]]})
    page.evaluate("() => window.runFrames()")  # folded in; the local copy is due in 1.5 s
    kernel = {"seq": 7, "n": 2, "status": "idle", "entries": [
        assistant("e2", "one"), {"id": "e3", "kind": "user", "text": "two"}, assistant("e4", "three")]}
    harness.set("_snapshot", kernel)            # e.g. the answer to a new view's hello
    page.clock.run_for(3000)                    # the local copy's timer fires; no frame yet
    page.evaluate("() => window.runFrames()")   # the tab is shown again
    expect(page.locator("[data-testid='arknb-assistant-text']")).to_have_text(["one", "three"])
    page.clock.run_for(3000)
    snap = page.evaluate("() => window.w.model.get('_snapshot')")
    assert snap["seq"] == 7 and [e["id"] for e in snap["entries"]] == ["e2", "e3", "e4"]


def test_optional_parts_render_nothing_rather_than_null(harness):
    harness.mount("chat", base_state([tool()]))
    assert "null" not in harness.page.get_by_test_id("arknb-tool-card").inner_text()


def test_an_in_doubt_card_offers_rerun_mark_done_and_mark_failed(harness):
    item = {"approval_id": "op_1", "call_id": "c1", "tool_name": "send_mail", "arguments": '{"to": "a@x"}',
            "risk_level": "safe", "reason": "send_mail started but the process ended", "decision": "pending",
            "deny_reason": None, "deciding": False, "error": None, "kind": "in_doubt"}
    harness.mount("chat", base_state([], [item], status="awaiting_approval"))
    card = harness.page.locator("[data-testid='arknb-in-doubt'][data-approval-id='op_1']")
    card.wait_for()
    assert harness.page.get_by_test_id("arknb-approve").count() == 0  # not an approval
    assert [card.get_by_test_id(t).inner_text() for t in ("arknb-rerun", "arknb-mark-done", "arknb-mark-failed")] \
        == ["Rerun", "Mark done", "Mark failed"]
    card.get_by_test_id("arknb-in-doubt-text").fill("it went out")
    card.get_by_test_id("arknb-mark-done").click()
    sent = harness.sent()[-1]
    assert (sent["type"], sent["approval_id"], sent["text"]) == ("mark_done", "op_1", "it went out")
    assert card.get_attribute("data-deciding") == "true"
    harness.emit({"type": "action_result", "action": "mark_done", "request_id": sent["request_id"], "ok": False,
                  "error": "operation_not_in_doubt: decided elsewhere", "approval_id": "op_1"})
    assert card.get_by_test_id("arknb-approval-error").inner_text() == "operation_not_in_doubt: decided elsewhere"
    card.get_by_test_id("arknb-rerun").click()
    assert (harness.sent()[-1]["type"], harness.sent()[-1]["approval_id"]) == ("rerun", "op_1")


def test_a_chat_a_newer_one_replaced_links_to_the_live_chat_of_its_session(harness):
    """Issue 25 item 4: both views on one page (a notebook after Run All): the stale chat's
    banner offers "Go to the live chat", which scrolls to the live chat of the same session
    (not another session's) and puts the cursor in its input."""
    page = harness.page
    harness.mount("chat", base_state(session_id="s1"))
    page.evaluate("() => { window.stale = window.w; }")
    harness.mount("chat", base_state(session_id="other"))  # live, but another session's
    page.evaluate("() => { window.w.el.style.marginTop = '3000px'; }")
    harness.mount("chat", base_state(session_id="s1"))
    page.evaluate("() => { window.w.el.style.marginTop = '3000px'; }")
    page.evaluate("() => window.stale.model.set('detached', "
                  "'A newer chat took over this session: the live one is further down.')")
    link = page.locator("[data-testid='arknb-go-live']:visible")  # (every chat has one, hidden)
    assert link.count() == 1 and link.inner_text() == "Go to the live chat"
    assert page.evaluate("() => window.stale.el.contains(document.querySelector(\"[data-testid='arknb-go-live']:not([hidden])\"))")
    link.click()
    focused = page.evaluate("""() => document.activeElement === window.w.el.querySelector("[data-testid='arknb-input']")""")
    assert focused
    top = page.evaluate("() => window.w.el.getBoundingClientRect().top")
    assert 0 <= top < page.viewport_size["height"]


def test_a_detached_chat_with_no_live_chat_of_its_session_on_the_page_shows_no_link(harness):
    harness.mount("chat", base_state(session_id="s1"))
    harness.set("detached", "This chat's runtime was closed (runtime.aclose()), so it can no longer act.")
    assert harness.page.get_by_test_id("arknb-detached").is_visible()
    assert harness.page.get_by_test_id("arknb-go-live").is_hidden()
