"""TimelineWidget's front end with a fake model: rows, spans, filters, detail, export."""

import json

from .test_chat_front import DANGER, XSS


def event(seq, etype, run="r1", **payload):
    return {"event_id": f"e{seq}", "type": etype, "session_id": "s", "run_id": run, "sequence": seq,
            "timestamp": 100.0 + seq * 0.1, "payload": payload}


def trace():
    call = {"id": "c1", "name": "add", "arguments_json": '{"a": 1}'}
    return [
        event(1, "agent.started", input=["hi"]),
        event(2, "llm.before", turn=1),
        event(3, "llm.chunk", kind="text", text=XSS, index=0),
        event(4, "llm.after", turn=1, message={"role": "assistant", "contents": [{"text": XSS}]}),
        event(5, "hook.decision", slot="before_tool_call", hook="clamp", action="rewrite",
              before=call, after={**call, "arguments_json": '{"a": 2}'}),
        event(6, "tool.before", call=call),
        event(7, "tool.after", call=call, result={"text": "<script>window.__xss=1</script>", "is_error": False}),
        event(8, "agent.success", stop_reason="completed"),
        event(9, "agent.started", run="r2", input=["again"]),
        event(10, "agent.cancelled", run="r2", reason="user"),
    ]


def rows(harness):
    return harness.page.locator("[data-testid='arknb-timeline-row']")


def test_rows_spans_filters_detail_and_export(harness):
    harness.mount("timeline", {"read_only": True})
    assert harness.sent() == [{"type": "hello", "have": 0}]
    events = trace()
    harness.emit({"type": "events", "start": 0, "events": events[:4]})
    harness.emit({"type": "events", "start": 2, "events": events[2:]})  # overlap: folded once
    harness.page.wait_for_function("() => document.querySelectorAll(\"[data-testid='arknb-timeline-row']\").length === 10")
    assert [int(rows(harness).nth(i).get_attribute("data-sequence")) for i in range(10)] == list(range(1, 11))
    spans = harness.page.locator("[data-testid='arknb-span']")
    assert [spans.nth(i).get_attribute("data-kind") for i in range(spans.count())] == ["run", "model", "tool", "run"]

    harness.page.get_by_test_id("arknb-timeline-type").select_option("tool.after")
    assert rows(harness).count() == 1
    harness.page.get_by_test_id("arknb-timeline-type").select_option("")
    harness.page.get_by_test_id("arknb-timeline-run").select_option("r2")
    assert rows(harness).count() == 2
    harness.page.get_by_test_id("arknb-timeline-run").select_option("")
    harness.page.get_by_test_id("arknb-timeline-filter").fill("clamp")
    assert rows(harness).count() == 1
    rows(harness).first.click()
    detail = harness.page.get_by_test_id("arknb-timeline-detail")
    assert detail.get_by_test_id("arknb-diff").count() == 1
    diff = detail.get_by_test_id("arknb-diff").inner_text()
    assert '-   "arguments_json": "{\\"a\\": 1}"' in diff and '+   "arguments_json": "{\\"a\\": 2}"' in diff
    assert detail.get_by_test_id("arknb-json").count() == 1
    harness.page.get_by_test_id("arknb-timeline-filter").fill("")
    harness.page.get_by_test_id("arknb-timeline-hide-chunks").check()
    assert rows(harness).count() == 9

    # every payload, including hostile text, is shown as text
    for i in range(rows(harness).count()):
        rows(harness).nth(i).click()
        detail.evaluate("(d) => d.querySelectorAll('details').forEach((x) => { x.open = true; })")
    assert harness.page.evaluate("() => window.__xss") is None
    assert harness.page.locator("[data-testid='arknb-timeline']").evaluate(DANGER) == []

    with harness.page.expect_download() as info:
        harness.page.get_by_test_id("arknb-timeline-export").click()
    download = info.value
    lines = open(download.path(), encoding="utf-8").read().splitlines()
    assert [json.loads(line) for line in lines] == events
    assert harness.foreign_requests == []


def test_a_gap_asks_for_the_missing_events(harness):
    harness.mount("timeline", {"read_only": False})
    harness.emit({"type": "events", "start": 0, "events": trace()[:2]})
    harness.emit({"type": "events", "start": 5, "events": trace()[5:]})
    harness.page.wait_for_function("() => window.w.model.sent.length === 2")
    assert harness.sent()[-1] == {"type": "hello", "have": 2}
    harness.emit({"type": "events", "start": 2, "events": trace()[2:]})
    harness.page.wait_for_function("() => document.querySelectorAll(\"[data-testid='arknb-timeline-row']\").length === 10")


def test_keyboard_moves_through_rows(harness):
    harness.mount("timeline", {"read_only": True})
    harness.emit({"type": "events", "start": 0, "events": trace()})
    harness.page.wait_for_function("() => document.querySelectorAll(\"[data-testid='arknb-timeline-row']\").length === 10")
    rows(harness).first.focus()
    harness.page.keyboard.press("ArrowDown")
    assert rows(harness).nth(1).get_attribute("aria-pressed") == "true"
    assert "llm.before" in harness.page.get_by_test_id("arknb-timeline-detail").inner_text()
