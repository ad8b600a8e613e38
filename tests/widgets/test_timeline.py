import json

from arknb.domain import ToolResult
from arknb.widgets import TimelineWidget
from arknb.widgets._timeline_model import rows, spans

from .conftest import Events, Frontend, call_dict


def a_run(ev):
    ok = ToolResult.from_text("3").model_dump(mode="json")
    bad = ToolResult.from_text("nope", is_error=True).model_dump(mode="json")
    return [
        ev("agent.started", input=["hi"]),
        ev("llm.before", turn=1),
        ev("llm.chunk", kind="text", text="Let me", index=0),
        ev("llm.after", turn=1, message={"role": "assistant", "contents": []}),
        ev("hook.decision", slot="before_tool_call", hook="clamp", action="rewrite",
           before={"a": 1}, after={"a": 2}),
        ev("tool.before", call=call_dict("c1", "add"), batch_id="b"),
        ev("tool.before", call=call_dict("c2", "div"), batch_id="b"),
        ev("tool.after", call=call_dict("c2", "div"), result=bad, batch_id="b", duration_ms=1),
        ev("tool.after", call=call_dict("c1", "add"), result=ok, batch_id="b", duration_ms=2),
        ev("tool.denied", call=call_dict("c3", "rm"), result=bad, reason="policy", hook="guard"),
        ev("llm.before", turn=2),
        ev("llm.after", turn=2, message={"role": "assistant", "contents": [{"kind": "text", "text": "3"}]}),
        ev("agent.success", stop_reason="completed"),
    ]


def test_rows_one_per_event_with_relative_time():
    events = [e.to_dict() for e in a_run(Events())]
    r = rows(events)
    assert len(r) == len(events)
    assert r[0]["t"] == 0.0 and r[-1]["t"] == 12.0
    assert [x["sequence"] for x in r] == list(range(1, 14))
    assert r[2]["summary"] == 'text "Let me"'
    assert r[5]["summary"] == "add c1"
    assert r[4]["summary"] == "clamp rewrite (before_tool_call)"


def test_spans_pair_model_and_tool_calls():
    s = spans([e.to_dict() for e in a_run(Events())])
    got = [(x["kind"], x["label"], x["start"], x["end"], x["status"]) for x in s]
    assert got == [
        ("run", "run r1", 0.0, 12.0, "completed"),
        ("model", "model turn 1", 1.0, 3.0, "done"),
        ("tool", "add c1", 5.0, 8.0, "done"),
        ("tool", "div c2", 6.0, 7.0, "error"),
        ("tool", "rm c3", 9.0, 9.0, "denied"),
        ("model", "model turn 2", 10.0, 11.0, "done"),
    ]


def test_open_spans_close_as_unfinished_when_the_run_ends():
    ev = Events()
    s = spans([e.to_dict() for e in [ev("agent.started"), ev("llm.before", turn=1),
                                     ev("agent.cancelled", reason="user")]])
    assert [(x["kind"], x["status"], x["end"]) for x in s] == [("run", "cancelled", 2.0), ("model", "unfinished", 2.0)]


def test_live_timeline_batches_chunks_and_flushes_structure(runtime, timers, ev):
    tl = TimelineWidget(runtime, clock=timers.clock, call_later=timers.call_later)
    front = Frontend(tl)
    runtime.bus.publish(ev("agent.started", input=["go"]))   # structural: at once
    assert [m["start"] for m in front.of_type("events")] == [0]
    for i in range(5000):
        runtime.bus.publish(ev("llm.chunk", kind="text", text="x", index=0))
        timers.advance(0.0001)
    runtime.bus.publish(ev("agent.success", stop_reason="completed"))
    timers.advance(0.1)
    batches = front.of_type("events")
    assert len(batches) <= 20
    received = [e for m in batches for e in m["events"]]
    assert [e["sequence"] for e in received] == list(range(1, 5003))
    starts = [m["start"] for m in batches]
    assert starts == sorted(starts) and all(
        b["start"] == a["start"] + len(a["events"]) for a, b in zip(batches, batches[1:]))


def test_hello_sends_what_a_view_lacks(runtime, timers, ev):
    tl = TimelineWidget(runtime, clock=timers.clock, call_later=timers.call_later)
    front = Frontend(tl)
    for e in a_run(ev):
        runtime.bus.publish(e)
    timers.advance(0.1)
    front.messages.clear()
    tl._on_msg(tl, {"type": "hello", "have": 10})
    (msg,) = front.of_type("events")
    assert msg["start"] == 10 and len(msg["events"]) == 3


def test_replay_from_dicts_is_read_only_and_exports_jsonl(tmp_path):
    events = [e.to_dict() for e in a_run(Events())]
    tl = TimelineWidget(events)
    front = Frontend(tl)
    assert tl.read_only is True
    tl._on_msg(tl, {"type": "hello", "have": 0})
    assert front.of_type("events")[0]["events"] == events
    path = tmp_path / "trace.jsonl"
    assert tl.to_jsonl(path) == len(events)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == events
    assert len(tl.spans()) == 6 and len(tl.rows()) == len(events)
