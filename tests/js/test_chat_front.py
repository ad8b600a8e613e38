"""ChatWidget's front end with a fake model: sanitizing, streaming, buttons."""

import json

XSS = (
    "Here: <img src=x onerror=\"window.__xss='img'\"> <script>window.__xss='script'</script> "
    "[a link](javascript:window.__xss='link') <a href=\"javascript:window.__xss='a'\">raw</a> "
    "<svg><animate onbegin=\"window.__xss='svg'\" attributeName=x dur=1s></svg> "
    "<iframe src=\"javascript:window.__xss='iframe'\"></iframe> ![remote](http://example.org/x.png) "
    "<b onmouseover=\"window.__xss='b'\">**bold**</b> END"
)


def base_state(entries=(), approvals=(), status="idle", read_only=False):
    return {"transcript": {"rev": 1, "status": status, "entries": list(entries)}, "approvals": list(approvals),
            "status": status, "read_only": read_only, "error": ""}


def assistant(eid="e2", text="", streaming=False, reasoning=""):
    return {"id": eid, "kind": "assistant", "text": text, "reasoning": reasoning, "streaming": streaming, "run_id": "r"}


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


def test_model_and_tool_html_executes_nothing(harness):
    entries = [
        {"id": "e1", "kind": "user", "text": XSS},
        assistant("e2", XSS, reasoning=XSS),
        {"id": "tool:c1", "kind": "tool", "call_id": "c1", "name": "<img src=x onerror=\"window.__xss='name'\">",
         "arguments": json.dumps({"html": XSS}), "status": "done", "result": XSS, "is_error": False,
         "duration_ms": 1, "reason": None},
        {"id": "e4", "kind": "hook", "slot": "before_tool_call", "hook": "<script>x</script>", "action": "rewrite",
         "reason": XSS, "before": {"a": XSS}, "after": {"a": "ok"}, "count": 1},
        {"id": "e5", "kind": "notice", "level": "error", "text": XSS},
        assistant("e6", "", streaming=True),
    ]
    approvals = [{"approval_id": "ap1", "call_id": "c2", "tool_name": XSS, "arguments": XSS, "risk_level": XSS,
                  "reason": XSS, "decision": "pending", "deny_reason": None, "deciding": False, "error": XSS}]
    harness.mount("chat", base_state(entries, approvals, status="running"))
    harness.emit({"type": "delta", "ops": [["text", "e6", 0, len(XSS), XSS]]})
    harness.page.locator("[data-testid='arknb-hook'] summary").click()  # open the diff too
    harness.page.wait_for_function(
        "() => [...document.querySelectorAll(\"[data-testid='arknb-assistant-text']\")].at(-1).textContent.includes('END')")
    harness.page.mouse.move(10, 10)
    for b in harness.page.locator("b").all():
        if b.is_visible():
            b.hover()
    harness.page.wait_for_timeout(300)
    assert harness.page.evaluate("() => window.__xss") is None
    assert harness.dialogs == []
    root = harness.page.locator("[data-testid='arknb-chat']")
    assert root.evaluate(DANGER) == []
    assert harness.foreign_requests == []
    # the markdown still renders, and the javascript: link lost its href
    assert harness.page.locator("[data-testid='arknb-assistant-text'] strong").count() >= 1
    assert harness.page.locator("[data-testid='arknb-assistant-text'] a:not([href])").count() >= 2
    assert "END" in root.inner_text()


def test_five_thousand_single_char_deltas_arrive_in_order(harness):
    harness.mount("chat", base_state([assistant("e2", "", streaming=True)], status="running"))
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    text = "".join(alphabet[(i * 7) % len(alphabet)] for i in range(5000))
    harness.page.evaluate("""(text) => {
      for (let i = 0; i < text.length; i++) window.w.model.emit({type: 'delta', ops: [['text', 'e2', i, i + 1, text[i]]]});
    }""", text)
    harness.page.wait_for_function(
        "(n) => document.querySelector(\"[data-testid='arknb-assistant-text']\").textContent.length >= n", arg=5000)
    got = harness.page.locator("[data-testid='arknb-assistant-text']").text_content()
    assert got == text
    assert [m for m in harness.sent() if m["type"] == "hello"] == [{"type": "hello"}]  # only initialize's


def test_repeated_and_overlapping_deltas_are_folded_once_and_a_gap_asks_for_a_snapshot(harness):
    harness.mount("chat", base_state([assistant("e2", "Hel", streaming=True)], status="running"))
    harness.emit({"type": "delta", "ops": [["text", "e2", 0, 3, "Hel"], ["text", "e2", 1, 5, "ello"],
                                           ["text", "e2", 5, 6, "😀"], ["text", "e2", 6, 7, "!"]]})
    harness.page.wait_for_function(
        "() => document.querySelector(\"[data-testid='arknb-assistant-text']\").textContent === 'Hello😀!'")
    harness.emit({"type": "delta", "ops": [["text", "e2", 20, 21, "?"]]})
    harness.page.wait_for_function("() => window.w.model.sent.filter((m) => m.type === 'hello').length === 2")
    # the kernel answers with a fresh snapshot; the view replaces its state with it
    harness.set("transcript", {"rev": 2, "status": "running", "entries": [assistant("e2", "fresh", streaming=True)]})
    harness.page.wait_for_function(
        "() => document.querySelector(\"[data-testid='arknb-assistant-text']\").textContent === 'fresh'")


def test_enter_sends_and_shift_enter_does_not(harness):
    harness.mount("chat", base_state())
    box = harness.page.get_by_test_id("arknb-input")
    box.fill("first line")
    box.press("Shift+Enter")
    box.type("second")
    box.press("Enter")
    (msg,) = [m for m in harness.sent() if m["type"] == "send"]
    assert msg["text"] == "first line\nsecond" and msg["request_id"]
    assert box.input_value() == ""


def test_control_buttons_follow_status_and_send_typed_actions(harness):
    harness.mount("chat", base_state(status="running"))
    stop, suspend, resume = (harness.page.get_by_test_id(t) for t in ("arknb-stop", "arknb-suspend", "arknb-resume"))
    assert stop.is_enabled() and suspend.is_enabled() and not resume.is_visible()
    assert harness.page.get_by_test_id("arknb-status").get_attribute("data-status") == "running"
    stop.focus()
    harness.page.keyboard.press("Enter")  # keyboard reachable: real <button>s
    assert [m["type"] for m in harness.sent() if m["type"] != "hello"] == ["stop"]
    assert stop.is_disabled() and stop.inner_text() == "Stopping…"
    rid = harness.sent()[-1]["request_id"]
    harness.emit({"type": "action_result", "action": "stop", "request_id": rid, "ok": True, "error": None})
    harness.set("status", "suspended")
    assert resume.is_visible()
    resume.click()
    assert harness.sent()[-1]["type"] == "resume"
    harness.set("error", "run_already_active: busy")
    assert harness.page.get_by_test_id("arknb-error").inner_text() == "run_already_active: busy"


def test_approval_card_buttons(harness):
    item = {"approval_id": "ap1", "call_id": "c2", "tool_name": "clear_cache", "arguments": '{"path": "/tmp"}',
            "risk_level": "dangerous", "reason": "needs approval", "decision": "pending", "deny_reason": None,
            "deciding": False, "error": None}
    other = {**item, "approval_id": "ap2", "call_id": "c3"}
    harness.mount("chat", base_state(approvals=[item, other], status="awaiting_approval"))
    card = harness.page.locator("[data-testid='arknb-approval'][data-approval-id='ap1']")
    card.get_by_test_id("arknb-approve").click()
    assert harness.sent()[-1] == {"type": "approve", "approval_id": "ap1", "request_id": harness.sent()[-1]["request_id"]}
    assert card.get_attribute("data-deciding") == "true"
    assert card.get_by_test_id("arknb-approval-deciding").inner_text() == "deciding…"
    rid = harness.sent()[-1]["request_id"]
    harness.emit({"type": "action_result", "action": "approve", "request_id": rid, "ok": False,
                  "error": "approval_not_found: ap1", "approval_id": "ap1"})
    assert card.get_by_test_id("arknb-approval-error").inner_text() == "approval_not_found: ap1"
    assert card.get_by_test_id("arknb-approve").is_enabled()

    card2 = harness.page.locator("[data-testid='arknb-approval'][data-approval-id='ap2']")
    card2.get_by_test_id("arknb-deny-reason").fill("too broad")
    card2.get_by_test_id("arknb-deny").click()
    sent = harness.sent()[-1]
    assert (sent["type"], sent["approval_id"], sent["reason"]) == ("deny", "ap2", "too broad")
    harness.set("approvals", [item])  # the kernel says ap2 is decided
    assert card2.count() == 0 and card.count() == 1


def test_read_only_hides_controls(harness):
    item = {"approval_id": "ap1", "call_id": "c2", "tool_name": "rm", "arguments": "{}", "risk_level": "",
            "reason": "", "decision": "pending", "deny_reason": None, "deciding": False, "error": None}
    harness.mount("chat", base_state([assistant("e2", "old answer")], [item], status="completed", read_only=True))
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
    harness.emit({"type": "delta", "ops": [["text", "e2", 0, 2, "hi"]]})
    harness.page.wait_for_function(
        "() => [...document.querySelectorAll(\"[data-testid='arknb-assistant-text']\")].every((n) => n.textContent === 'hi')")
    assert harness.page.evaluate("() => typeof window.w.cleanup === 'function' && typeof window.second === 'function'")
    harness.page.evaluate("() => window.second()")
    harness.emit({"type": "delta", "ops": [["text", "e2", 2, 3, "!"]]})
    harness.page.wait_for_function(
        "() => document.querySelector(\"[data-testid='arknb-assistant-text']\").textContent === 'hi!'")
    assert harness.page.locator("#second [data-testid='arknb-assistant-text']").text_content() == "hi"


def test_optional_parts_render_nothing_rather_than_null(harness):
    card = {"id": "tool:c1", "kind": "tool", "call_id": "c1", "name": "add", "arguments": "{}", "status": "done",
            "result": "3", "is_error": False, "duration_ms": None, "reason": None}
    harness.mount("chat", base_state([card]))
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
