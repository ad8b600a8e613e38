"""TimelineWidget's front end with a fake model (no Jupyter): the wire format, virtual
rows, filters, spans, hook decisions, keyboard, layout, the static companion."""

from __future__ import annotations

import json

from arknb.widgets._timeline_model import spans as py_spans
from arknb.widgets._timeline_model import totals as py_totals
from arknb.widgets._timeline_summary import status as py_status
from arknb.widgets._timeline_summary import summary as py_summary
from arknb.widgets._timeline_wire import encode

from ..widgets.timeline_trace import one_of_each, story
from .test_chat_front import DANGER

ROWS = "[data-testid='arknb-timeline-row']"


def event(seq, etype, run="r1", **payload):
    """One event dict (test_compare_front.py builds its traces with it too)."""
    return {"event_id": f"e{seq}", "type": etype, "session_id": "s", "run_id": run, "sequence": seq,
            "timestamp": 100.0 + seq * 0.1, "payload": payload}


def send(harness, events, start=0, first=0, **flags):
    """Deliver ``events`` at positions ``start...`` exactly as the kernel encodes them."""
    items, buffers = encode(events)
    harness.emit({"type": "events", "start": start, "first": first, "events": items, **flags}, buffers)


def mount(harness, events=None, **state):
    harness.mount("timeline", {"read_only": True, "page_size": 2000, "max_view_events": 100000, "paged": False,
                               "session_id": "s1", "static_id": "", **state})
    if events is not None:
        send(harness, events)
        wait_rows(harness, lambda n: n > 0)


def wait_rows(harness, test_js_count=None, count=None):
    if count is not None:
        harness.page.wait_for_function(f"() => document.querySelectorAll(\"{ROWS}\").length === {count}")
    else:
        harness.page.wait_for_function(f"() => document.querySelectorAll(\"{ROWS}\").length > 0")


def rows(harness):
    return harness.page.locator(ROWS)


def shown_sequences(harness) -> list[int]:
    """Sequences of the rows in the DOM, in list order."""
    return harness.page.evaluate(
        f"""() => [...document.querySelectorAll("{ROWS}")].sort((a, b) => a.dataset.vindex - b.dataset.vindex)
             .map((r) => Number(r.dataset.sequence))""")


def scroll_to(harness, row: int) -> None:
    """Scroll the list so that row ``row`` is at the top, and wait until it is drawn."""
    harness.page.get_by_test_id("arknb-timeline-rows").evaluate("(el, i) => { el.scrollTop = i * 22; }", row)
    harness.page.wait_for_selector(f"[data-testid='arknb-timeline-rows'] [data-vindex='{row}']")


def tall(harness) -> None:
    """Make the list tall enough that every row of a short trace is drawn."""
    harness.page.get_by_test_id("arknb-timeline-rows").evaluate(
        "(el) => { el.style.height = '3000px'; el.style.maxHeight = 'none'; el.dispatchEvent(new Event('scroll')); }")


def count_text(harness) -> str:
    return harness.page.get_by_test_id("arknb-timeline-count").inner_text()


def wait_count(harness, shown: int, total: int) -> None:
    harness.page.wait_for_function(
        "(want) => document.querySelector(\"[data-testid='arknb-timeline-count']\").textContent === want",
        arg=f"{shown:,} of {total:,} events")


def test_hello_then_rows_in_order_overlaps_folded_once(harness):
    mount(harness)
    sent = harness.sent()
    assert sent[0]["type"] == "hello" and sent[0]["have"] is None and sent[0]["token"]
    events = story()
    send(harness, events[:10])
    send(harness, events[5:], start=5)  # overlap: folded once
    wait_count(harness, len(events), len(events))
    assert shown_sequences(harness)[-1] == events[-1]["sequence"]  # follows the newest rows
    scroll_to(harness, 0)
    seqs = shown_sequences(harness)
    assert seqs == list(range(1, len(seqs) + 1))
    assert harness.foreign_requests == []


def test_a_gap_asks_for_the_missing_events(harness):
    mount(harness)
    events = story()
    send(harness, events[:2])
    wait_count(harness, 2, 2)
    send(harness, events[5:], start=5)
    harness.page.wait_for_function("() => window.w.model.sent.some((m) => m.type === 'hello' && m.have === 2)")
    send(harness, events[2:], start=2)
    wait_count(harness, len(events), len(events))


def test_messages_for_another_view_are_ignored(harness):
    mount(harness)
    send(harness, story()[:3])
    wait_count(harness, 3, 3)
    items, buffers = encode(story())
    harness.emit({"type": "events", "start": 0, "first": 0, "events": items, "reset": True, "to": "someone-else"},
                 buffers)
    harness.frames()
    assert count_text(harness) == "3 of 3 events"


def test_column_batches_arrive_exactly_as_the_kernel_has_them(harness):
    """Python encode -> JS unpack gives back AgentEvent.to_dict(), checked via the export:
    chunks of two kinds in columns, other events beside them, two runs and two sessions
    (coded columns), a jump in the sequences, texts and ids in one UTF-8 buffer (a leading
    U+FEFF kept) or, when one holds a NUL, as lists."""
    def ev(i, etype, run="r1", session="s1", **payload):
        return {"event_id": f"{run}:{i}", "type": etype, "session_id": session, "run_id": run, "sequence": i,
                "timestamp": 1_733_000_000.123456 + i / 7, "payload": payload}

    events = [ev(i, "llm.chunk", kind="text" if i % 3 else "reasoning", text=f"w{i} é😀", index=i // 2)
              for i in range(1, 3001)]
    events[0]["payload"]["text"] = "\ufeffBOM first"
    events[10:10] = [ev(0, "tool.before", run="r2", session="s2", call={"id": "c1", "name": "add"})]
    # a tool call's argument chunks carry its id and name (None until the provider sent it)
    events[20:20] = [ev(20_000, "llm.chunk", kind="tool_call", text='{"a": 1,', index=0, call_id="c1", name="add"),
                     ev(20_001, "llm.chunk", kind="tool_call", text=' "b": 2}', index=1, call_id=None, name=None)]
    events += [{**events[-1], "event_id": "custom", "sequence": 9999, "timestamp": 1_733_000_999.5}]
    items, _ = encode(events)
    (item,) = items
    assert item["chunks"] and item["type_at"] is not None and item["run_id_at"] is not None
    assert item["chunk_calls"] == [[19, "c1", "add"], [20, None, None]]  # chunk positions (tool.before is no chunk)
    odd = [ev(10_000, "llm.chunk", kind="text", text="odd", index=0, hook="rewrite"), ev(10_001, "agent.success")]
    assert not encode(odd)[0][0]["chunks"]
    nul = [ev(10_002, "llm.chunk", kind="text", text="a\0b", index=0), ev(10_003, "llm.chunk", kind="text", text="", index=0)]
    assert isinstance(encode(nul)[0][0]["text"], list) and isinstance(item["text"], int)
    mount(harness, events)
    send(harness, odd, start=len(events))
    send(harness, nul, start=len(events) + len(odd))
    everything = events + odd + nul
    wait_count(harness, len(everything), len(everything))
    with harness.page.expect_download() as info:
        harness.page.get_by_test_id("arknb-timeline-export").click()
    header, *lines = open(info.value.path(), encoding="utf-8").read().splitlines()
    assert json.loads(header)["events"] == len(everything)
    assert [json.loads(line) for line in lines] == everything


def _export(harness):
    with harness.page.expect_download() as info:
        harness.page.get_by_test_id("arknb-timeline-export").click()
    return info.value.path()


def test_the_export_button_writes_a_trace_file_that_from_jsonl_reads(harness):
    """Issue 26 item 6: the JS export writes the DESIGN §11 header (as TimelineWidget.to_jsonl
    does), so ev.trace.from_jsonl reads the downloaded file back, event for event; an empty
    view's file is a header that reads as no events (not a 0-byte file it refuses)."""
    from arknb.eval.trace import TRACE_VERSION, from_jsonl

    events = story()
    mount(harness, events)
    path = _export(harness)
    header = json.loads(open(path, encoding="utf-8").readline())
    assert header["arknb_trace"] == TRACE_VERSION and header["events"] == len(events)
    assert header["dropped"] == 0 and header["first_sequence"] == events[0]["sequence"]
    assert [e.to_dict() for e in from_jsonl(path)] == events
    harness.emit({"type": "events", "start": 0, "first": 0, "events": [], "reset": True})
    harness.frames()
    assert from_jsonl(_export(harness)) == []


def test_every_event_type_has_the_python_summary_and_status(harness):
    events = one_of_each()
    mount(harness, events)
    # Row text comes from the JS summary: compare with Python's, type by type.
    tall(harness)
    wait_rows(harness, count=len(events))
    shown = harness.page.evaluate(
        f"""() => [...document.querySelectorAll("{ROWS}")].sort((a, b) => a.dataset.vindex - b.dataset.vindex)
             .map((r) => [r.dataset.type, r.querySelector('.arknb-row-summary').textContent, r.dataset.status])""")
    for (etype, text, state), event in zip(shown, events):
        assert etype == event["type"]
        assert text == py_summary(event), etype
        assert text, f"{etype} has no summary"
        assert state == py_status(event), etype


def big_trace(n: int) -> list[dict]:
    """``n`` events: runs of one model call streaming chunks, a tool call every 500 events."""
    events, seq, t = [], 0, 1000.0

    def add(etype, run, **payload):
        nonlocal seq, t
        seq += 1
        t += 0.001
        events.append({"event_id": f"{run}:{seq}", "type": etype, "session_id": "s1", "run_id": run,
                       "sequence": seq, "timestamp": round(t, 6), "payload": payload})

    run = 0
    while len(events) < n:
        run += 1
        rid = f"run{run}"
        add("agent.started", rid, input=["go"], resumed=False)
        add("llm.before", rid, turn=1)
        for i in range(480):
            add("llm.chunk", rid, kind="text", text=f"w{seq} needle{seq % 1000 == 0} ", index=i)
        add("llm.after", rid, turn=1, message={"role": "assistant", "contents": []}, usage={"input_tokens": 5,
                                                                                          "output_tokens": 480})
        c = {"id": f"c{run}", "name": "add", "arguments_json": "{}"}
        add("tool.before", rid, call=c)
        add("tool.after", rid, call=c, result={"text": "ok", "is_error": run % 7 == 0})
        add("agent.success", rid, stop_reason="completed")
    return events[:n]


def test_one_hundred_thousand_events_stay_scrollable_filterable_searchable(harness):
    events = big_trace(100_000)
    mount(harness)
    for start in range(0, len(events), 5000):
        send(harness, events[start:start + 5000], start=start)
    wait_count(harness, 100_000, 100_000)
    in_dom = harness.page.evaluate(f"() => document.querySelectorAll(\"{ROWS}\").length")
    assert 0 < in_dom < 80, in_dom  # virtual: only what is on screen (plus a small margin)
    scroll_to(harness, 50_000)
    seqs = shown_sequences(harness)
    assert 50_001 in seqs and len(seqs) < 80
    # Filter by type: every tool.after row, still virtual.
    harness.page.get_by_test_id("arknb-timeline-type").select_option("tool.after")
    expected = sum(1 for e in events if e["type"] == "tool.after")
    wait_count(harness, expected, 100_000)
    harness.page.get_by_test_id("arknb-timeline-type").select_option("")
    wait_count(harness, 100_000, 100_000)
    # Search the payloads of all 100,000 events (sliced: the page keeps responding).
    harness.page.get_by_test_id("arknb-timeline-filter").fill("needletrue")
    expected = sum(1 for e in events if "needleTrue" in json.dumps(e["payload"]))
    wait_count(harness, expected, 100_000)
    took = harness.page.evaluate("""() => new Promise((done) => {
        const box = document.querySelector("[data-testid='arknb-timeline-filter']");
        const t = performance.now();
        box.value = 'needle'; box.dispatchEvent(new Event('input'));
        const check = () => document.querySelector("[data-testid='arknb-timeline-count']").textContent.includes(' of ')
          ? done(performance.now() - t) : requestAnimationFrame(check);
        requestAnimationFrame(check); })""")
    print(f"search over 100,000 cached events: {took:.0f} ms")
    in_dom = harness.page.evaluate(f"() => document.querySelectorAll(\"{ROWS}\").length")
    assert in_dom < 80


def test_status_colours_tell_success_error_denied_deferred_cancelled_apart(harness):
    events = story()
    mount(harness, events)
    tall(harness)
    wait_rows(harness, count=len(events))

    def colour(selector):
        return harness.page.locator(selector).first.evaluate("(r) => getComputedStyle(r).borderLeftColor")

    picks = {
        "ok": f"{ROWS}[data-type='tool.after'][data-status='ok']",
        "error": f"{ROWS}[data-type='tool.after'][data-status='error']",
        "denied": f"{ROWS}[data-type='tool.denied'][data-status='denied']",
        "deferred": f"{ROWS}[data-type='hook.decision'][data-status='deferred']",
        "cancelled": f"{ROWS}[data-type='agent.cancelled'][data-status='cancelled']",
    }
    colours = {name: colour(sel) for name, sel in picks.items()}
    assert len(set(colours.values())) == 5, colours
    assert "rgba(0, 0, 0, 0)" not in colours.values()
    # Spans carry the same statuses. The waterfall redraws at most every few
    # frames, so wait for the draw that has every span rather than read the
    # first one.
    wanted = ["ok", "error", "denied", "deferred", "cancelled"]
    harness.page.wait_for_function(
        """(wanted) => { const have = new Set([...document.querySelectorAll("[data-testid='arknb-span']")]
            .map((s) => s.dataset.status)); return wanted.every((w) => have.has(w)); }""",
        arg=wanted,
    )
    spans = harness.page.locator("[data-testid='arknb-span']")
    statuses = {spans.nth(i).get_attribute("data-status") for i in range(spans.count())}
    assert set(wanted) <= statuses, statuses


def span_rows(harness) -> list[tuple[str, str, int, str]]:
    harness.page.wait_for_selector("[data-testid='arknb-span']")
    return harness.page.evaluate("""() => [...document.querySelectorAll("[data-testid='arknb-span']")].map((s) =>
        [s.dataset.kind, s.querySelector('.arknb-span-label').textContent, Number(s.dataset.depth), s.dataset.status])""")


def test_spans_nest_resumed_and_sub_runs_and_match_python(harness):
    events = story()
    mount(harness, events)
    got = span_rows(harness)
    want = [(s["kind"], f"{s['kind']} {s['label']}", s["depth"], s["status"]) for s in py_spans(events)]
    assert [tuple(x) for x in got] == want
    labels = [label for _, label, _, _ in got]
    assert "run run r2 (resumed after r1)" in labels  # a continued run has its run span
    depth = {label: d for _, label, d, _ in got}
    assert depth["run run k1"] == depth["tool ask c4"] + 1  # the sub-run nests under its tool call
    assert depth["tool add c1"] == depth["turn turn 1"] + 1 or depth["tool add c1"] == 1
    durations = harness.page.locator("[data-testid='arknb-span-duration']").all_inner_texts()
    assert "15 ms" in " ".join(durations) or any(d.endswith("ms") for d in durations)


def test_clicking_a_span_filters_rows_and_the_header_shows_run_totals(harness):
    events = story()
    mount(harness, events)
    totals = harness.page.get_by_test_id("arknb-timeline-totals")
    everything, r2_totals = py_totals(events), py_totals(events, "r2")
    assert (everything["runs"], everything["turns"], everything["tool_calls"], everything["errors"]) == (4, 5, 4, 1)
    assert totals.inner_text() == "4 runs · 5 turns · 4 tool calls · 220 in / 24 out tokens · 1 error · 1 denied"
    harness.page.get_by_test_id("arknb-timeline-run").select_option("r2")
    harness.page.wait_for_function(
        "() => document.querySelector(\"[data-testid='arknb-timeline-totals']\").textContent.startsWith('run r2')")
    assert (r2_totals["turns"], r2_totals["tool_calls"], r2_totals["tokens_in"], r2_totals["tokens_out"]) == (2, 4, 170, 10)
    assert totals.inner_text() == "run r2 · 2 turns · 4 tool calls · 170 in / 10 out tokens · 1 error · 1 denied · 2.20 s"
    # r2's rows include its sub-run k1 (nested under the ask tool call).
    r2 = [e for e in events if e["run_id"] in ("r2", "k1")]
    wait_count(harness, len(r2), len(events))
    # Click the ask tool span: its rows and the sub-run's only.
    harness.page.locator("[data-testid='arknb-span']", has_text="ask c4").click()
    ask = [e for e in events if e["run_id"] == "k1" or (e["run_id"] == "r2" and (
        (e["payload"].get("call") or {}).get("id") == "c4" or e["payload"].get("call_id") == "c4"))]
    wait_count(harness, len(ask), len(events))
    tall(harness)
    assert sorted(shown_sequences(harness)) == [e["sequence"] for e in ask]
    chip = harness.page.get_by_test_id("arknb-timeline-span-filter")
    assert "ask c4" in chip.inner_text()
    chip.click()
    wait_count(harness, len(r2), len(events))


def open_row(harness, selector):
    harness.page.locator(selector).first.click()
    return harness.page.get_by_test_id("arknb-timeline-detail")


def test_hook_decisions_read_as_decisions(harness):
    events = story()
    mount(harness, events)
    tall(harness)
    wait_rows(harness, count=len(events))
    hook = f"{ROWS}[data-type='hook.decision']"
    seq = {e["payload"]["hook"]: e["sequence"] for e in events if e["type"] == "hook.decision"}
    first_seq = lambda etype, cid: next(e["sequence"] for e in events  # noqa: E731
                                        if e["type"] == etype and e["payload"]["call"]["id"] == cid)

    # rewrite: the arguments are diffed as values, key by key (not an escaped JSON string)
    detail = open_row(harness, f"{hook}[data-sequence='{seq['clamp']}']")
    diff = detail.get_by_test_id("arknb-diff")
    entries = diff.get_by_test_id("arknb-diff-entry")
    keys = [entries.nth(i).get_attribute("data-key") for i in range(entries.count())]
    assert keys == ["arguments_json", "b"], keys
    assert diff.get_by_test_id("arknb-diff-before").all_inner_texts() == ["2"]
    assert diff.get_by_test_id("arknb-diff-after").all_inner_texts() == ["20"]
    assert '\\"' not in diff.inner_text()
    link = detail.get_by_test_id("arknb-hook-link")
    ran = first_seq("tool.before", "c1")
    assert link.inner_text() == f"#{ran} tool.before"  # the row it changed: the call as it ran (run r2)
    link.click()
    assert "tool.before" in harness.page.get_by_test_id("arknb-timeline-detail").inner_text()
    assert harness.page.locator(f"{ROWS}[aria-selected='true']").get_attribute("data-sequence") == str(ran)

    # deny: the decision, its reason and what the model got instead (not a diff call -> result)
    detail = open_row(harness, f"{hook}[data-sequence='{seq['guard']}']")
    assert detail.get_by_test_id("arknb-hook-headline").inner_text() == "guard denied rm c2 (before_tool_call)"
    assert detail.get_by_test_id("arknb-hook-reason").inner_text() == "reason: no deleting"
    assert detail.get_by_test_id("arknb-hook-synthetic").inner_text() == "tool_denied: no deleting files"
    assert detail.get_by_test_id("arknb-diff").count() == 0
    assert detail.get_by_test_id("arknb-hook-link").inner_text() == f"#{first_seq('tool.denied', 'c2')} tool.denied"

    # defer: "deferred for approval" and what became of the approval
    detail = open_row(harness, f"{hook}[data-sequence='{seq['approval_policy']}']")
    fate = detail.get_by_test_id("arknb-hook-fate")
    assert fate.get_attribute("data-fate") == "approved"
    assert "approval a1: approved" in fate.inner_text()
    assert "deferred for approval" in detail.inner_text()
    assert detail.get_by_test_id("arknb-diff").count() == 0

    # drop on a chunk: the text affected
    detail = open_row(harness, f"{hook}[data-sequence='{seq['redact']}']")
    assert detail.get_by_test_id("arknb-hook-affected").inner_text() == "sk-not-a-real-key"

    # a long string rewritten: diffed line by line
    detail = open_row(harness, f"{hook}[data-sequence='{seq['shorten']}']")
    lines = detail.locator(".arknb-diff-lines").inner_text().splitlines()
    assert "- line two" in lines and "+ line 2" in lines and "  line one" in lines

    # hold on a chunk: the text held back (it joins the next chunk)
    redact = next(e for e in events if e["type"] == "hook.decision" and e["payload"]["hook"] == "redact")
    last = events[-1]["sequence"]
    held = {**redact, "event_id": f"r2:{last + 1}", "sequence": last + 1,
            "payload": {**redact["payload"], "hook": "buffer", "action": "hold", "reason": "half a word",
                        "before": {"text": "Don", "reasoning": ""}}}
    send(harness, [held], start=len(events))
    wait_count(harness, len(events) + 1, len(events) + 1)
    detail = open_row(harness, f"{hook}[data-sequence='{last + 1}']")
    assert detail.get_by_test_id("arknb-hook-affected").inner_text() == "Don"
    assert "text held back" in detail.inner_text()


def test_defer_shows_pending_and_denied_fates(harness):
    events = story()
    cut = next(i for i, e in enumerate(events) if e["type"] == "approval.decided")
    mount(harness, events[:cut])
    tall(harness)
    detail = open_row(harness, f"{ROWS}[data-type='hook.decision'][data-sequence='8']")
    assert detail.get_by_test_id("arknb-hook-fate").get_attribute("data-fate") == "pending"
    denied = {**events[cut], "payload": {**events[cut]["payload"], "decision": "denied", "deny_reason": "too much"}}
    send(harness, [denied], start=cut)
    wait_count(harness, cut + 1, cut + 1)
    detail = open_row(harness, f"{ROWS}[data-type='hook.decision'][data-sequence='8']")
    fate = detail.get_by_test_id("arknb-hook-fate")
    assert fate.get_attribute("data-fate") == "denied" and "(too much)" in fate.inner_text()


def test_hostile_text_stays_text(harness):
    mount(harness, story())
    tall(harness)
    for i in range(rows(harness).count()):
        rows(harness).nth(i).click()
        harness.page.get_by_test_id("arknb-timeline-detail").evaluate(
            "(d) => d.querySelectorAll('details').forEach((x) => { x.open = true; })")
    assert harness.page.evaluate("() => window.__xss") is None
    assert harness.page.locator("[data-testid='arknb-timeline']").evaluate(DANGER) == []


def test_the_list_is_one_tab_stop_with_arrow_keys_and_enter(harness):
    events = story()
    mount(harness, events)
    scroll_to(harness, 0)
    stops = harness.page.evaluate(
        f"() => [...document.querySelectorAll(\"{ROWS}\")].filter((r) => r.tabIndex === 0).length")
    assert stops == 1
    harness.page.get_by_test_id("arknb-timeline-filter").focus()
    for _ in range(12):  # Tab through the toolbar and the waterfall until the list takes focus
        harness.page.keyboard.press("Tab")
        if harness.page.evaluate("() => !!document.activeElement.closest(\"[data-testid='arknb-timeline-rows']\")"):
            break
    focused = harness.page.evaluate("() => document.activeElement.dataset.sequence")
    assert focused == "1"
    harness.page.keyboard.press("ArrowDown")
    harness.page.keyboard.press("ArrowDown")
    assert harness.page.evaluate("() => document.activeElement.dataset.sequence") == "3"
    outline = harness.page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"  # visible focus
    # Moving does not open; Enter does.
    assert "llm.chunk" not in harness.page.get_by_test_id("arknb-timeline-detail").inner_text()
    harness.page.keyboard.press("Enter")
    assert harness.page.get_by_test_id("arknb-timeline-detail").locator("strong").first.inner_text() == "llm.chunk"
    harness.page.keyboard.press("End")
    harness.page.wait_for_function(
        f"() => document.activeElement.dataset.sequence === '{events[-1]['sequence']}'")
    harness.page.keyboard.press("Home")
    harness.page.wait_for_function("() => document.activeElement.dataset.sequence === '1'")
    harness.page.keyboard.press("Tab")  # one Tab leaves the list
    assert not harness.page.evaluate(
        "() => !!document.activeElement.closest(\"[data-testid='arknb-timeline-rows']\")")


def test_older_events_load_on_demand(harness):
    events = story()
    mount(harness, paged=False)
    # The kernel keeps positions 10.. and sent the newest page (20..).
    send(harness, events[20:], start=20, first=10, reset=True)
    wait_count(harness, len(events) - 20, len(events) - 20)
    button = harness.page.get_by_test_id("arknb-timeline-older")
    assert button.inner_text() == "10 older events: load 10"
    button.click()
    ask = harness.page.evaluate("() => window.w.model.sent.filter((m) => m.type === 'older')")
    assert ask[-1]["before"] == 20 and ask[-1]["limit"] == 2000 and ask[-1]["before_sequence"] == 21
    send(harness, events[10:20], start=10, first=10, older=True)
    wait_count(harness, len(events) - 10, len(events) - 10)
    forgotten = harness.page.get_by_test_id("arknb-timeline-forgotten")
    assert forgotten.inner_text() == "10 earlier events are no longer kept (max_events)"
    scroll_to(harness, 0)
    assert shown_sequences(harness)[0] == 11


def test_a_view_that_has_every_event_says_nothing_is_missing(harness):
    """The kernel forgot the oldest events (max_events), but this view received them all
    as they came: nothing is missing from it, so no "no longer kept" line."""
    events = story()
    mount(harness, events[:-1], paged=False)
    wait_count(harness, len(events) - 1, len(events) - 1)
    send(harness, events[-1:], start=len(events) - 1, first=len(events) - 5)  # the kernel keeps its newest 5
    wait_count(harness, len(events), len(events))  # the frame that applied it is drawn
    assert harness.page.get_by_test_id("arknb-timeline-forgotten").count() == 0
    assert harness.page.get_by_test_id("arknb-timeline-older").count() == 0


def test_older_events_from_a_page_source(harness):
    events = story()
    mount(harness, paged=True)
    send(harness, events[20:], start=0, first=0, reset=True)
    wait_count(harness, len(events) - 20, len(events) - 20)
    harness.page.get_by_test_id("arknb-timeline-older").click()
    ask = harness.page.evaluate("() => window.w.model.sent.filter((m) => m.type === 'older')")
    assert ask[-1]["before"] == 0 and ask[-1]["before_sequence"] == 21
    send(harness, events[:20], start=-20, first=0, older=True, exhausted=True)
    wait_count(harness, len(events), len(events))
    assert harness.page.get_by_test_id("arknb-timeline-older").count() == 0


def test_below_600px_the_detail_pane_stacks_under_the_list(harness):
    harness.page.set_viewport_size({"width": 400, "height": 900})
    mount(harness, story())
    box = lambda tid: harness.page.get_by_test_id(tid).bounding_box()  # noqa: E731
    rows_box, detail_box = box("arknb-timeline-rows"), box("arknb-timeline-detail")
    assert detail_box["y"] >= rows_box["y"] + rows_box["height"] - 1
    root = box("arknb-timeline")
    assert detail_box["x"] + detail_box["width"] <= root["x"] + root["width"] + 1  # nothing clips sideways
    harness.page.set_viewport_size({"width": 1100, "height": 900})
    harness.page.wait_for_function(
        "() => { const r = document.querySelector(\"[data-testid='arknb-timeline-rows']\").getBoundingClientRect();"
        " const d = document.querySelector(\"[data-testid='arknb-timeline-detail']\").getBoundingClientRect();"
        " return d.left >= r.right - 1 && Math.abs(d.top - r.top) < 60; }")


def test_a_live_view_hides_its_static_companion_until_it_goes(harness):
    harness.page.evaluate("""() => { const d = document.createElement('div');
        d.setAttribute('data-arknb-static', 'abcdef0123456789'); d.textContent = 'static summary';
        d.id = 'twin'; document.body.append(d); }""")
    visible = "() => getComputedStyle(document.getElementById('twin')).display !== 'none'"
    assert harness.page.evaluate(visible)
    mount(harness, story()[:3], static_id="abcdef0123456789")
    assert not harness.page.evaluate(visible)
    harness.page.evaluate("() => window.w.cleanup()")
    assert harness.page.evaluate(visible)


def test_event_numbers_are_contiguous_per_session_across_a_restore_gap(harness):
    # A restored runtime continues 10,000 sequences on (the gap stays internal): people see 1..6.
    events = [event(s, "agent.started" if s in (1, 10004) else "llm.before") for s in (1, 2, 3, 10004, 10005, 10006)]
    mount(harness, events)
    wait_rows(harness, count=6)
    numbers = harness.page.evaluate(
        f"""() => [...document.querySelectorAll("{ROWS}")].sort((a, b) => a.dataset.vindex - b.dataset.vindex)
             .map((r) => r.querySelector('.arknb-row-seq').textContent)""")
    assert numbers == ["#1", "#2", "#3", "#4", "#5", "#6"]
    assert shown_sequences(harness) == [1, 2, 3, 10004, 10005, 10006]  # the real sequence stays in the data


def test_the_detail_pane_says_when_the_filters_hide_its_event(harness):
    mount(harness, [event(1, "agent.started"), event(2, "llm.before", turn=1), event(3, "agent.success")])
    wait_rows(harness, count=3)
    rows(harness).nth(1).click()
    detail = harness.page.get_by_test_id("arknb-timeline-detail")
    assert "llm.before" in detail.inner_text() and "hidden by the filters" not in detail.inner_text()
    harness.page.get_by_test_id("arknb-timeline-type").select_option("agent.started")
    harness.page.wait_for_function(
        "() => document.querySelector(\"[data-testid='arknb-timeline-detail']\").innerText.includes('hidden by the filters')")
    harness.page.get_by_test_id("arknb-timeline-type").select_option("")
    harness.page.wait_for_function(
        "() => !document.querySelector(\"[data-testid='arknb-timeline-detail']\").innerText.includes('hidden by the filters')")


def test_at_400px_span_labels_are_not_cut(harness):
    harness.page.set_viewport_size({"width": 400, "height": 900})
    mount(harness, [event(1, "agent.started", run="run_50c8a9b3e7d1"), event(2, "llm.before", run="run_50c8a9b3e7d1", turn=1),
                    event(3, "agent.success", run="run_50c8a9b3e7d1")])
    harness.page.get_by_test_id("arknb-span").first.wait_for()
    cut = harness.page.evaluate(
        "() => [...document.querySelectorAll('.arknb-span-label')].filter((l) => l.scrollWidth > l.clientWidth + 1)"
        ".map((l) => l.textContent)")
    assert cut == []
    harness.page.screenshot(path="test-results/timeline_spans_400px.png")
