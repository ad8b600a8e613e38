"""TimelineWidget, kernel side: rows, nested spans, totals, batching, the bounded and
paged store, hello/older answers, recorded traces, exports and the static companion."""

import asyncio
import json

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from arknb.domain import ArkError, ToolResult
from arknb.events import EventTypes
from arknb.widgets import TimelineWidget
from arknb.widgets._timeline_model import rows, spans, totals
from arknb.widgets._timeline_summary import STATUSES, status, summary
from arknb.widgets._timeline_wire import decode

from .conftest import BufferedFrontend, Events, call_dict
from .timeline_trace import XSS_TEXT, as_exported, one_of_each, story


def a_run(ev):
    ok = ToolResult.from_text("3").model_dump(mode="json")
    bad = ToolResult.from_text("nope", is_error=True).model_dump(mode="json")
    return [
        ev("agent.started", input=["hi"]),
        ev("llm.before", turn=1),
        ev("llm.chunk", kind="text", text="Let me", index=0),
        ev("llm.after", turn=1, message={"role": "assistant", "contents": []},
           usage={"input_tokens": 40, "output_tokens": 5}),
        ev("hook.decision", slot="before_tool_call", hook="clamp", action="rewrite",
           before={"a": 1}, after={"a": 2}),
        ev("tool.before", call=call_dict("c1", "add"), batch_id="b"),
        ev("tool.before", call=call_dict("c2", "div"), batch_id="b"),
        ev("tool.after", call=call_dict("c2", "div"), result=bad, batch_id="b", duration_ms=1),
        ev("tool.after", call=call_dict("c1", "add"), result=ok, batch_id="b", duration_ms=2),
        ev("tool.denied", call=call_dict("c3", "rm"), result=bad, reason="policy", hook="guard"),
        ev("llm.before", turn=2),
        ev("llm.after", turn=2, message={"role": "assistant", "contents": [{"kind": "text", "text": "3"}]},
           usage={"input_tokens": 60, "output_tokens": 2}),
        ev("agent.success", stop_reason="completed"),
    ]


# -- rows, spans, totals --------------------------------------------------------------


def test_rows_one_per_event_with_relative_time_summary_and_status():
    events = [e.to_dict() for e in a_run(Events())]
    r = rows(events)
    assert len(r) == len(events)
    assert r[0]["t"] == 0.0 and r[-1]["t"] == 12.0
    assert [x["sequence"] for x in r] == list(range(1, 14))
    assert r[2]["summary"] == 'text "Let me"'
    assert r[5]["summary"] == "add() c1"
    assert r[4]["summary"] == "clamp rewrite in before_tool_call"
    assert [x["status"] for x in r if x["type"] in ("tool.after", "tool.denied", "agent.success")] == \
        ["error", "ok", "denied", "ok"]


def test_every_event_type_has_a_summary_and_a_known_status():
    events = one_of_each()
    assert {e["type"] for e in events} >= set(EventTypes.ALL)
    for event in events:
        assert summary(event), event["type"]
        assert status(event) in STATUSES
    by_type = {e["type"]: summary(e) for e in events}
    assert by_type["agent.success"] == 'completed · 2 turns · 1,200 in / 34 out tokens · "all done"'
    assert by_type["tool.after"] == 'add({"a":1}) c1 · → "2" · 1.23 s'
    assert by_type["approval.decided"] == "a1 denied: not today · all decided"
    assert by_type["context.compressed"] == "context 12,000 → 3,000 tokens"
    assert by_type["custom.thing"] == "{answer, note}"
    assert by_type["llm.after"] == 'turn 2 · stop · tokens unknown · "Hi"'  # the last one: no usage sent


def test_statuses_tell_success_error_denied_deferred_and_cancelled_apart():
    got = {(e["type"], status(e)) for e in story()}
    assert {("tool.after", "ok"), ("tool.after", "error"), ("tool.denied", "denied"),
            ("hook.decision", "deferred"), ("hook.decision", "denied"), ("agent.cancelled", "cancelled"),
            ("agent.success", "ok"), ("agent.suspended", "deferred")} <= got


def test_spans_nest_run_turn_model_and_tool_calls_with_durations():
    s = spans([e.to_dict() for e in a_run(Events())])
    got = [(x["kind"], x["label"], x["depth"], x["start"], x["end"], x["status"]) for x in s]
    assert got == [
        ("run", "run r1", 0, 0.0, 12.0, "ok"),
        ("turn", "turn 1", 1, 1.0, 10.0, "ok"),
        ("model", "model call", 2, 1.0, 3.0, "ok"),
        ("tool", "add c1", 2, 5.0, 8.0, "ok"),
        ("tool", "div c2", 2, 6.0, 7.0, "error"),
        ("tool", "rm c3", 2, 9.0, 9.0, "denied"),
        ("turn", "turn 2", 1, 10.0, 12.0, "ok"),
        ("model", "model call", 2, 10.0, 11.0, "ok"),
    ]
    by_label = {x["label"]: x for x in s}
    assert by_label["add c1"]["parent"] == by_label["turn 1"]["id"] and by_label["add c1"]["duration_ms"] == 3000.0


def test_spans_of_a_resumed_run_a_deferred_call_and_a_sub_run():
    s = spans(story())
    by_label = {x["label"]: x for x in s}
    assert by_label["run r1"]["status"] == "deferred"            # waiting for approval
    pay = [x for x in s if x["label"] == "pay c3"]
    assert [(x["run_id"], x["status"]) for x in pay] == [("r1", "deferred"), ("r2", "error")]  # waited, then ran
    resumed = by_label["run r2 (resumed after r1)"]             # a continued run has its run span
    assert resumed["status"] == "ok" and resumed["depth"] == 0
    sub = by_label["run k1"]
    ask = next(x for x in s if x["label"] == "ask c4")
    assert sub["parent"] == ask["id"] and sub["depth"] == ask["depth"] + 1   # nests under its tool call
    cancelled = by_label["run r3"]
    assert cancelled["status"] == "cancelled"
    assert [x["status"] for x in s if x["run_id"] == "r3" and x["kind"] != "run"] == ["unfinished", "unfinished"]


def test_totals_count_calls_not_events_and_say_what_was_reused_or_settled():
    # A restored run (notebook 07): two fetches ran in the killed process and are reused after
    # the restore (two tool.after each), the report is settled by a person: three calls.
    def after(seq, call_id, **extra):
        return {"type": "tool.after", "run_id": "r", "sequence": seq, "timestamp": float(seq),
                "payload": {"call": {"id": call_id, "name": "fetch"}, "result": {"text": "ok"}, **extra}}

    events = [after(1, "c1"), after(2, "c2"), after(3, "c1", reused=True), after(4, "c2", reused=True),
              after(5, "c3", settled_by="person")]
    t = totals(events)
    assert (t["tool_calls"], t["reused"], t["settled"], t["denied"]) == (3, 2, 1, 0)
    assert "reused from the record" in summary(events[2]) and "ms" not in summary(events[2])
    decided = {"type": "approval.decided", "run_id": "r", "payload": {"approval_id": "op_1", "decision": "denied",
                                                                      "resolution": "done"}}
    assert summary(decided) == "op_1 marked done by a person" and status(decided) == "ok"  # not a red "denied"


def test_the_static_copy_numbers_events_per_session_without_the_restore_gap():
    from arknb.widgets._timeline_html import render

    events = [{"type": "llm.before", "session_id": "s", "run_id": "r", "sequence": seq, "timestamp": float(i),
               "payload": {"turn": 1}} for i, seq in enumerate((1, 2, 10003, 10004))]
    page = render(events, "x")
    assert all(f"#{n}</td>" in page for n in (1, 2, 3, 4)) and "#10003" not in page


def test_totals_per_run_and_overall():
    events = story()
    assert totals(events, "r2") == {"runs": 1, "turns": 2, "tool_calls": 4, "tokens_in": 170, "tokens_out": 10,
                                    "errors": 1, "denied": 1, "events": 19, "reused": 0, "settled": 0}
    everything = totals(events)
    assert (everything["runs"], everything["turns"], everything["tokens_in"]) == (4, 5, 220)


# -- live batching ---------------------------------------------------------------------


def test_a_short_run_is_one_message_sent_when_it_ends(runtime, timers, ev):
    tl = TimelineWidget(runtime, clock=timers.clock, call_later=timers.call_later)
    front = BufferedFrontend(tl)
    for etype in ("agent.started", "llm.before", "llm.chunk", "llm.after", "turn.completed"):
        runtime.bus.publish(ev(etype))
    assert front.of_type("events") == []                      # within one interval: nothing yet
    runtime.bus.publish(ev("agent.success", stop_reason="completed"))
    (msg,) = front.of_type("events")                          # the run's end: at once, all of it
    assert [e["type"] for e in front.received()][-1] == "agent.success" and len(front.received()) == 6
    timers.advance(1.0)
    assert len(front.of_type("events")) == 1 and timers.pending == 0


def test_events_wait_at_most_one_interval_and_a_stream_flushes_on_a_timer(runtime, timers, ev):
    tl = TimelineWidget(runtime, clock=timers.clock, call_later=timers.call_later)
    front = BufferedFrontend(tl)
    runtime.bus.publish(ev("agent.started", input=["go"]))
    assert front.of_type("events") == []
    timers.advance(0.034)                                      # one interval (33 ms) later
    assert [m["start"] for m in front.of_type("events")] == [0]
    timers.advance(0.05)
    runtime.bus.publish(ev("llm.before", turn=1))            # then ticks start
    for i in range(5000):
        runtime.bus.publish(ev("llm.chunk", kind="text", text="x", index=i))
        timers.advance(0.0001)                                # 0.5 s of streaming
    during = len(front.of_type("events"))
    assert 10 <= during <= 20, during                         # about one message per 33 ms
    runtime.bus.publish(ev("llm.after", turn=1))
    runtime.bus.publish(ev("agent.success", stop_reason="completed"))
    timers.advance(0.1)
    batches = front.of_type("events")
    received = front.received()
    assert [e["sequence"] for e in received] == list(range(1, 5005))
    assert all(b["start"] == a["start"] + len(decode(a["events"], a["_buffers"]))
               for a, b in zip(batches, batches[1:]))
    assert all([item["batch"] for item in m["events"]] == [len(decode(m["events"], m["_buffers"]))]
               for m in batches)                              # one column batch per message
    assert any(item["chunks"] for m in batches for item in m["events"])
    assert timers.pending == 0                                # no ticking once the model is done


def test_the_kernel_keeps_max_events_but_every_event_is_sent_once(runtime, timers, ev):
    tl = TimelineWidget(runtime, max_events=100, clock=timers.clock, call_later=timers.call_later)
    front = BufferedFrontend(tl)
    runtime.bus.publish(ev("agent.started"))
    runtime.bus.publish(ev("llm.before", turn=1))
    for i in range(1000):  # a burst between two flushes: kept whole until sent
        runtime.bus.publish(ev("llm.chunk", kind="text", text=str(i), index=i))
    runtime.bus.publish(ev("llm.after", turn=1))
    timers.advance(0.1)
    assert len(front.received()) == 1003
    assert len(tl.events) == 100 and tl.forgotten == 903
    assert [e["sequence"] for e in tl.events] == list(range(904, 1004))
    assert front.of_type("events")[-1]["first"] == 903


def test_hello_answers_the_newest_page_or_fills_a_gap(runtime, timers, ev):
    tl = TimelineWidget(runtime, page_size=5, clock=timers.clock, call_later=timers.call_later)
    front = BufferedFrontend(tl)
    for e in a_run(ev):
        runtime.bus.publish(e)
    timers.advance(0.1)
    front.messages.clear()
    tl._on_msg(tl, {"type": "hello", "have": None, "token": "v1"})
    (msg,) = front.of_type("events")
    assert (msg["start"], msg["reset"], msg["to"], msg["first"]) == (8, True, "v1", 0)
    assert [e["sequence"] for e in decode(msg["events"], msg["_buffers"])] == [9, 10, 11, 12, 13]
    front.messages.clear()
    tl._on_msg(tl, {"type": "hello", "have": 10, "token": "v2"})
    (msg,) = front.of_type("events")
    assert (msg["start"], msg.get("reset"), msg["to"]) == (10, None, "v2") and len(decode(msg["events"], msg["_buffers"])) == 3


def test_older_pages_come_from_memory_then_say_exhausted(runtime, timers, ev):
    tl = TimelineWidget(runtime, page_size=4, clock=timers.clock, call_later=timers.call_later)
    front = BufferedFrontend(tl)
    for e in a_run(ev):
        runtime.bus.publish(e)
    timers.advance(0.1)
    front.messages.clear()
    tl._on_msg(tl, {"type": "older", "before": 9, "limit": 4, "token": "v"})
    (msg,) = front.of_type("events")
    assert (msg["start"], msg["older"], msg["exhausted"], msg["to"]) == (5, True, False, "v")
    assert [e["sequence"] for e in decode(msg["events"], msg["_buffers"])] == [6, 7, 8, 9]
    front.messages.clear()
    tl._on_msg(tl, {"type": "older", "before": 2, "limit": 4, "token": "v"})
    (msg,) = front.of_type("events")
    assert (msg["start"], msg["exhausted"]) == (0, True) and len(decode(msg["events"], msg["_buffers"])) == 2
    front.messages.clear()
    tl._on_msg(tl, {"type": "older", "before": 0, "limit": 4, "token": "v"})
    (msg,) = front.of_type("events")
    assert (msg["start"], msg["events"], msg["exhausted"]) == (0, [], True)
    tl._on_msg(tl, {"type": "older", "before": "x"})          # malformed: ignored
    assert len(front.of_type("events")) == 1


class OutboxStore:
    """A store whose outbox has no chunks (sequence gaps), read forward as DESIGN §13 says."""

    def __init__(self, events):
        self.events = [e for e in events if e["type"] != "llm.chunk"]
        self.reads = []

    async def read_events(self, session_id, after_sequence=None, limit=None):
        self.reads.append((session_id, after_sequence, limit))
        out = [e for e in self.events if after_sequence is None or e["sequence"] > after_sequence]
        return out[:limit] if limit is not None else out


async def test_older_pages_beyond_memory_come_from_the_runtimes_store(runtime, timers):
    earlier = story()
    stored = [e for e in earlier if e["type"] != "llm.chunk"]
    runtime.storage = OutboxStore(earlier)
    tl = TimelineWidget(runtime, page_size=5, clock=timers.clock, call_later=timers.call_later)
    assert tl.paged is True
    assert await tl.load_history() == 5 and tl.events == stored[-5:]  # the newest page, at once
    front = BufferedFrontend(tl)
    tl._on_msg(tl, {"type": "older", "before": -5, "before_sequence": stored[-5]["sequence"], "limit": 5,
                    "token": "v"})
    await asyncio.gather(*tl._tasks)
    (msg,) = front.of_type("events")
    got = decode(msg["events"], msg["_buffers"])
    assert got == stored[-10:-5] and msg["start"] == -10 and msg["older"] and not msg["exhausted"]
    assert all(r[0] == "s" for r in runtime.storage.reads)


async def test_the_newest_stored_page_comes_first_and_a_live_copy_of_it_is_dropped(runtime, timers, ev):
    """DESIGN §13: TimelineWidget(runtime) on a restored runtime shows the earlier runs;
    persist-before-announce means an event may be read from the store and then arrive live."""

    class Store:
        def __init__(self, events):
            self.events = events

        async def read_events(self, session_id, after_sequence=None, limit=None):
            out = [e for e in self.events if after_sequence is None or e.sequence > after_sequence]
            return out[:limit] if limit is not None else out

    earlier = [e for e in a_run(ev) if e.type != "llm.chunk"]
    runtime.storage = Store(earlier)
    tl = TimelineWidget(runtime, clock=timers.clock, call_later=timers.call_later)
    front = BufferedFrontend(tl)
    assert tl.events == []  # read in the background: a sync caller sees it after its cell
    tl._on_msg(tl, {"type": "hello", "have": None, "token": "v"})
    assert front.of_type("events") == []  # the view's first page waits for the earlier runs
    assert await tl.load_history() == len(earlier)
    (msg,) = front.of_type("events")
    assert msg["reset"] and msg["exhausted"] and msg["start"] == -len(earlier) and msg["to"] == "v"
    assert [e["sequence"] for e in decode(msg["events"], msg["_buffers"])] == [e.sequence for e in earlier]
    assert len(tl.rows()) == len(earlier) and "agent.success" in tl.to_html()
    runtime.bus.publish(earlier[-1])  # announced after its commit was read: already shown
    runtime.bus.publish(nxt := ev("agent.started", run_id="r2"))
    timers.advance(0.1)
    assert [e["event_id"] for e in tl.events] == [e.event_id for e in earlier] + [nxt.event_id]
    assert [e["event_id"] for e in front.received()] == [e.event_id for e in earlier] + [nxt.event_id]
    assert await tl.load_history() == len(earlier)  # once per widget
    tl.close()


def test_without_a_running_loop_the_earlier_runs_come_with_the_first_view_or_load_history(runtime, timers):
    earlier = story()
    stored = [e for e in earlier if e["type"] != "llm.chunk"]
    runtime.storage = OutboxStore(earlier)
    tl = TimelineWidget(runtime, clock=timers.clock, call_later=timers.call_later)  # a script: no loop
    front = BufferedFrontend(tl)
    assert tl.events == [] and runtime.storage.reads == []
    tl._on_msg(tl, {"type": "hello", "have": None, "token": "v"})  # no loop either: answered as it is
    (empty,) = front.of_type("events")
    assert empty["reset"] and not empty.get("exhausted")  # the view offers the store's older events

    async def later():
        tl._on_msg(tl, {"type": "hello", "have": None, "token": "v2"})  # a view on the kernel's loop starts it
        return await tl.load_history()

    assert asyncio.run(later()) == len(stored) and tl.events == stored
    broadcast, answer = front.of_type("events")[1:]
    assert broadcast["reset"] and "to" not in broadcast and broadcast["exhausted"]  # the view already fed
    assert answer["to"] == "v2" and decode(answer["events"], answer["_buffers"]) == stored
    tl.close()


async def test_a_slow_store_does_not_keep_a_view_waiting_for_its_first_page(runtime, timers, monkeypatch):
    from arknb.widgets import timeline as timeline_module

    monkeypatch.setattr(timeline_module, "_HELLO_WAIT", 0.01)
    release = asyncio.Event()
    stored = [e for e in story() if e["type"] != "llm.chunk"]

    class Slow:
        async def read_before(self, before_sequence, limit):
            await release.wait()
            return stored[-limit:]

    tl = TimelineWidget(runtime, pages=Slow(), clock=timers.clock, call_later=timers.call_later)
    front = BufferedFrontend(tl)
    tl._on_msg(tl, {"type": "hello", "have": None, "token": "v"})
    await asyncio.sleep(0.05)
    (first,) = front.of_type("events")  # answered without the earlier runs
    assert first["reset"] and first["to"] == "v" and first["events"] == [] and not first.get("exhausted")
    release.set()
    assert await tl.load_history() == len(stored)
    _, page = front.of_type("events")  # then every view gets them
    assert page["reset"] and "to" not in page and decode(page["events"], page["_buffers"]) == stored
    tl.close()


async def test_a_failing_page_source_answers_with_the_error(runtime, timers):
    class Broken:
        async def read_before(self, before_sequence, limit):
            raise OSError("disk gone")

    tl = TimelineWidget(runtime, pages=Broken(), clock=timers.clock, call_later=timers.call_later)
    front = BufferedFrontend(tl)
    with pytest.raises(OSError, match="disk gone"):
        await tl.load_history()
    tl._on_msg(tl, {"type": "hello", "have": None, "token": "v"})
    reset, told = front.of_type("events")
    assert reset["reset"] and told["error"] == "could not read earlier events: OSError: disk gone"
    front.messages.clear()
    tl._on_msg(tl, {"type": "older", "before": 0, "limit": 5, "token": "v"})
    await asyncio.gather(*tl._tasks, return_exceptions=True)
    (msg,) = front.of_type("events")
    assert msg["error"] == "could not read older events: OSError: disk gone" and msg["to"] == "v"


def test_bad_arguments_are_refused_by_name(runtime):
    with pytest.raises(ArkError, match="max_events must be a positive int"):
        TimelineWidget(runtime, max_events=0)
    with pytest.raises(ArkError, match="page_size must be a positive int"):
        TimelineWidget(runtime, page_size=-1)
    with pytest.raises(ArkError, match="pages must have an async read_before"):
        TimelineWidget(runtime, pages=object())


# -- recorded traces, exports, static HTML ---------------------------------------------


def test_a_recorded_trace_is_read_only_kept_whole_and_exports_jsonl(tmp_path):
    events = story()
    tl = TimelineWidget(events, page_size=10)
    front = BufferedFrontend(tl)
    assert tl.read_only is True and tl.forgotten == 0
    tl._on_msg(tl, {"type": "hello", "have": None})
    (msg,) = front.of_type("events")
    assert msg["start"] == len(events) - 10 and decode(msg["events"], msg["_buffers"]) == events[-10:]
    path = tmp_path / "trace.jsonl"
    assert tl.to_jsonl(path) == len(events)
    header, *lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert header["arknb_trace"] == 1 and lines == as_exported(events)  # (test_timeline_export.py: the format)
    assert lines != events and "sk-not-a-real-keyDone" not in path.read_text(encoding="utf-8")
    assert len(tl.spans()) == len(spans(events)) and len(tl.rows()) == len(events)


def test_to_html_summarises_and_escapes_everything():
    tl = TimelineWidget(story())
    html = tl.to_html()
    assert f'data-arknb-static="{tl.static_id}"' in html
    assert "4 runs" in html and "run r2 (resumed after r1)" in html and "Hook decisions (5)" in html
    assert "<script>window" not in html and "onerror=" not in html.replace("onerror=&quot;", "")
    assert "&lt;img src=x onerror=" in html  # the hostile chunk is there, as text
    assert "2 chunks: Let me &lt;img" in html  # consecutive chunks fold into one row
    assert TimelineWidget([]).to_html().count("No events yet.") == 1


@pytest.fixture
def shell():
    return InteractiveShell.instance()


def test_display_shows_the_view_and_a_static_companion_kept_current(shell, runtime, timers, ev):
    tl = TimelineWidget(runtime, clock=timers.clock, call_later=timers.call_later)
    BufferedFrontend(tl)
    with capture_output() as shown:
        shell.display_formatter.format(tl)  # what a cell's last expression does
        runtime.bus.publish(ev("agent.started", input=[XSS_TEXT]))
        timers.advance(0.5)
        assert len(shown.outputs) == 2          # debounced: nothing yet
        timers.advance(0.6)
        runtime.bus.publish(ev("agent.success", stop_reason="completed"))
        timers.advance(0)                       # a run's end refreshes at once, not after the debounce
        assert len(shown.outputs) == 4
        tl.close()                              # and a last refresh when the widget closes
    view, companion, *updates = shown.outputs
    assert "application/vnd.jupyter.widget-view+json" in view.data and "text/html" not in view.data
    assert companion.data["text/html"].count("No events yet.") == 1
    assert companion.metadata in ({}, None)
    assert [u.data["text/html"].count("agent.started") > 0 for u in updates] == [True, True, True]
    assert "agent.success" not in updates[0].data["text/html"]
    assert "agent.success" in updates[1].data["text/html"]
    assert "&lt;script&gt;" in updates[0].data["text/html"] and "<script>" not in updates[0].data["text/html"]


def test_no_companion_when_asked_and_no_cost_until_displayed(runtime, timers, ev):
    tl = TimelineWidget(runtime, static_html=False, clock=timers.clock, call_later=timers.call_later)
    BufferedFrontend(tl)
    with capture_output() as shown:
        InteractiveShell.instance().display_formatter.format(tl)
    assert len(shown.outputs) == 1
    quiet = TimelineWidget(runtime, clock=timers.clock, call_later=timers.call_later)
    BufferedFrontend(quiet)
    runtime.bus.publish(ev("agent.started"))
    timers.advance(2)
    assert quiet._twin.refreshes == 0 and quiet._twin.display_id is None


def test_close_stops_listening(runtime, timers, ev):
    tl = TimelineWidget(runtime, clock=timers.clock, call_later=timers.call_later)
    front = BufferedFrontend(tl)
    tl.close()
    runtime.bus.publish(ev("agent.started"))
    timers.advance(0.1)
    assert front.of_type("events") == [] and tl.events == []


def test_the_static_summary_shows_the_newest_rows_and_counts_the_rest():
    ev = Events()
    events = [ev("agent.started").to_dict()]
    for i in range(150):
        events.append(ev("state.persisted", reason=f"save{i}", ok=True).to_dict())
        events.extend(ev("llm.chunk", kind="text", text=f"c{i}.{k} ", index=k).to_dict() for k in range(3))
    html = TimelineWidget(events).to_html()
    assert html.count("<tr><td class=\"muted\">+") == 200     # the newest 200 rows (chunk bursts folded)
    assert "101 earlier rows not shown." in html               # 301 rows in all
    assert "3 chunks: c149.0 c149.1 c149.2" in html and "save149" in html and "save49" not in html
