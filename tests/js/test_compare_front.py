"""TraceCompareWidget's front end with a fake model: turns aligned side by side, the first
divergence marked, the payload diff, the chunk filter, and hostile text kept as text."""

from __future__ import annotations

from .test_chat_front import DANGER, XSS
from .test_timeline_front import event


def traces():
    call = {"id": "c1", "name": "add", "arguments_json": '{"a": 1, "b": 2}'}
    changed = {**call, "arguments_json": '{"a": 1, "b": 5}'}
    common = [event(1, "agent.started", input=["hi"]), event(2, "llm.before", turn=1, attempt=0),
              event(3, "llm.chunk", kind="text", text=XSS, index=0),
              event(4, "llm.after", turn=1, message={"role": "assistant", "contents": [{"text": "Let me add."}]})]
    expected = common + [event(5, "tool.before", call=call, batch_id="b1"), event(6, "tool.after", call=call, result={"text": "3"}),
                         event(7, "llm.before", turn=2, attempt=0), event(8, "llm.after", turn=2),
                         event(9, "agent.success", stop_reason="completed")]
    actual = common + [event(5, "tool.before", call=changed, batch_id="b2"), event(6, "tool.after", call=changed, result={"text": "6"}),
                       event(7, "llm.before", turn=2, attempt=0), event(8, "llm.after", turn=2),
                       event(9, "llm.before", turn=3, attempt=0), event(10, "llm.after", turn=3),
                       event(11, "agent.success", stop_reason="completed")]
    return expected, actual


def state(expected, actual, divergence):
    turns = lambda evs: [sum(1 for x in evs[: i + 1] if x["type"] == "llm.before") for i in range(len(evs))]  # noqa: E731
    return {"expected": expected, "actual": actual, "expected_turns": turns(expected), "actual_turns": turns(actual),
            "divergence": divergence, "labels": ["recorded", "replayed"], "ignored_keys": ["batch_id"]}


DIVERGENCE = {"index": 4, "turn": 1, "event_type": "tool.before", "path": "arguments.b", "expected": 2, "actual": 5,
              "text": "turn 1, tool.before: arguments.b differs: 2 != 5"}


def test_turns_side_by_side_with_the_first_divergence_marked(harness):
    harness.page.add_style_tag(url="/compare.css")
    expected, actual = traces()
    harness.mount("compare", state(expected, actual, DIVERGENCE))
    page = harness.page
    assert page.get_by_test_id("arknb-compare-divergence-text").inner_text() == DIVERGENCE["text"]
    turns = page.locator("[data-testid='arknb-compare-turn']")
    assert [turns.nth(i).get_attribute("data-turn") for i in range(turns.count())] == ["0", "1", "2", "3"]
    assert [turns.nth(i).get_attribute("data-diverges") for i in range(turns.count())] == [
        "false", "true", "false", "false"]
    # turn 1 holds events 1..5 on both sides, paired row by row
    turn1 = turns.nth(1).locator("[data-testid='arknb-compare-row']")
    sides = [(turn1.nth(i).get_attribute("data-side"), turn1.nth(i).get_attribute("data-index"))
             for i in range(turn1.count())]
    assert sides == [(s, str(i)) for i in range(1, 6) for s in ("expected", "actual")]
    marked = page.locator("[data-state='diverges']")
    assert marked.count() == 2 and {marked.nth(i).get_attribute("data-side") for i in range(2)} == {"expected", "actual"}
    assert page.locator("[data-state='diverges'][data-side='expected']").get_attribute("data-index") == "4"
    assert page.locator("[data-state='same']").count() == 8 and page.locator("[data-state='after']").count() == 10
    # turn 3 exists only on the right: the left cells are empty
    turn3 = turns.nth(3)
    assert turn3.locator("[data-side='expected']").count() == 0 and turn3.locator("[data-side='actual']").count() == 3
    assert page.get_by_test_id("arknb-compare-label-expected").inner_text() == "recorded · 9 events"
    # a red marker on the diverging rows (the stylesheet's colour reached them)
    shadow = marked.first.evaluate("(el) => getComputedStyle(el).boxShadow")
    assert shadow and shadow != "none"

    page.get_by_test_id("arknb-compare-jump").click()
    detail = page.get_by_test_id("arknb-compare-detail")
    diff = detail.get_by_test_id("arknb-diff").inner_text()
    assert '-     "arguments_json": "{\\"a\\": 1, \\"b\\": 2}"' in diff and '"b\\": 5' in diff
    assert "batch_id" not in diff
    assert page.locator("[aria-pressed='true']").count() == 2

    page.get_by_test_id("arknb-compare-hide-chunks").check()
    assert page.locator("[data-type='llm.chunk']").count() == 0
    page.get_by_test_id("arknb-compare-hide-chunks").uncheck()
    assert page.locator("[data-type='llm.chunk']").count() == 2
    for row in page.locator("[data-testid='arknb-compare-row'][data-type='llm.chunk']").all():
        row.click()
        detail.evaluate("(d) => d.querySelectorAll('details').forEach((x) => { x.open = true; })")
    assert page.evaluate("() => window.__xss") is None
    assert page.locator("[data-testid='arknb-compare']").evaluate(DANGER) == []
    assert harness.foreign_requests == []


def test_matching_traces_say_so_and_redraw_when_the_traits_change(harness):
    expected, _ = traces()
    harness.mount("compare", state(expected, expected, None))
    page = harness.page
    assert "the traces match (9 events" in page.get_by_test_id("arknb-compare-summary").inner_text()
    assert page.get_by_test_id("arknb-compare-jump").is_disabled()
    assert page.locator("[data-state='diverges']").count() == 0
    harness.set("divergence", DIVERGENCE)
    assert page.get_by_test_id("arknb-compare-divergence-text").inner_text() == DIVERGENCE["text"]
    assert not page.get_by_test_id("arknb-compare-jump").is_disabled()
